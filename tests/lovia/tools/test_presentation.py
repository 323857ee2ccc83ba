"""Tool presentation: kinds, titles and locations declared where each tool is defined."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from lovia import Agent
from lovia.events import ApprovalRequired, ToolCallCompleted, ToolCallStarted
from lovia.exceptions import UserError
from lovia.handoff import Handoff, agent_as_tool, build_handoff_tool
from lovia.messages import ToolCall
from lovia.plugins.todo import Todo
from lovia.testing import ScriptedProvider, call, text
from lovia.tools import HumanChannel, ask_human, http_request, now, read_page, sleep, tool
from lovia.tools.base import Tool
from lovia.tools.presentation import (
    TOOL_KINDS,
    CallPresentation,
    ToolLocation,
    default_title,
    present_call,
    preview_call,
)
from lovia.tools.recall import recall_tool_result
from lovia.tools.search import SearchResult, web_search


class _NoSearch:
    async def search(self, query: str, **kw: Any) -> list[SearchResult]:
        return []


async def _todo_tool() -> Tool:
    return (await Todo().setup()).tools[0]


CASES: list[tuple[str, Tool, dict[str, Any], str, str]] = [
    ("http_request", http_request, {"url": "https://x.test/a"}, "fetch", "GET https://x.test/a"),
    (
        "http_request post",
        http_request,
        {"url": "https://x.test/a", "method": "post"},
        "fetch",
        "POST https://x.test/a",
    ),
    ("read_page", read_page, {"url": "https://x.test/p"}, "fetch", "Read https://x.test/p"),
    (
        "web_search",
        web_search(_NoSearch()),
        {"query": "lovia agents"},
        "search",
        "Search the web for 'lovia agents'",
    ),
    ("recall", recall_tool_result, {"ref": "c1"}, "read", "Recall tool result c1"),
    (
        "ask_human",
        ask_human(HumanChannel()),
        {"question": "Which db?"},
        "other",
        "Ask: Which db?",
    ),
    ("now", now, {}, "other", "Check the time"),
    ("now tz", now, {"tz": "UTC"}, "other", "Check the time in UTC"),
    ("sleep", sleep, {"seconds": 2}, "other", "Wait 2s"),
]


@pytest.mark.parametrize(("label", "t", "args", "kind", "title"), CASES, ids=[c[0] for c in CASES])
def test_builtin_tools_declare_kind_and_title(
    label: str, t: Tool, args: dict[str, Any], kind: str, title: str
) -> None:
    shown = present_call(t, t.name, args)
    assert (shown.kind, shown.title, shown.locations) == (kind, title, [])


async def test_todo_tool_is_a_think_call_titled_update_todo_list() -> None:
    todo = await _todo_tool()
    shown = present_call(todo, todo.name, {"todos": []})
    assert shown == CallPresentation("think", "Update todo list", [])


def test_a_user_tool_gets_the_defaults() -> None:
    @tool
    def lookup(city: str, days: int = 1) -> str:
        return city

    assert lookup.kind is None and lookup.title is None and lookup.preview is None
    shown = present_call(lookup, lookup.name, {"city": "Paris", "days": 3})
    assert shown == CallPresentation("other", "lookup: Paris", [])
    assert present_call(lookup, "lookup", {"days": 3}).title == "lookup"


def test_a_user_tool_overrides_kind_title_and_locations() -> None:
    def where(args: Mapping[str, Any]) -> list[ToolLocation]:
        return [ToolLocation(str(args["file"]), line=args.get("line"))]

    @tool(kind="read", title=lambda a: f"Open {a['file']}", locations=where)
    def open_file(file: str, line: int | None = None) -> str:
        return file

    shown = present_call(open_file, open_file.name, {"file": "a.py", "line": 4})
    assert shown == CallPresentation("read", "Open a.py", [ToolLocation("a.py", 4)])


def test_a_constant_title_and_tool_fields_work_without_the_decorator() -> None:
    async def invoke(args: dict[str, Any], ctx: Any) -> str:
        return "ok"

    t = Tool("deploy", "Deploy.", {"type": "object"}, invoke, kind="execute", title="Deploy")
    assert present_call(t, t.name, {"env": "prod"}) == CallPresentation("execute", "Deploy")


def test_a_failing_title_or_locations_function_falls_back_to_the_defaults() -> None:
    def boom(args: Mapping[str, Any]) -> Any:
        raise KeyError("file")

    @tool(title=boom, locations=boom)
    def fragile(file: str) -> str:
        return file

    shown = present_call(fragile, fragile.name, {})
    assert shown == CallPresentation("other", "fragile", [])


def test_an_unknown_kind_is_refused_when_the_tool_is_built() -> None:
    with pytest.raises(UserError, match="Unknown kind 'write'") as info:

        @tool(kind="write")  # type: ignore[arg-type]
        def bad() -> None:
            return None

    assert "edit" in (info.value.hint or "")


def test_kinds_cover_the_editor_vocabulary() -> None:
    assert set(TOOL_KINDS) == {
        "read",
        "edit",
        "delete",
        "move",
        "search",
        "execute",
        "think",
        "fetch",
        "other",
    }


def test_a_call_to_an_unseen_tool_is_presented_by_name() -> None:
    assert present_call(None, "mystery", {"q": "x"}) == CallPresentation("other", "mystery: x")
    assert default_title("t", {"n": 1, "s": "  "}) == "t"
    assert default_title("t", {"s": "word " * 30}).endswith("…")


def test_handoff_and_agent_tools_present_their_target() -> None:
    target = Agent(name="Route Finder")
    handoff = build_handoff_tool(Handoff(target=target))
    assert handoff.is_handoff and not agent_as_tool(target).is_handoff
    assert present_call(handoff, handoff.name, {"reason": "maps"}) == CallPresentation(
        "other", "Hand off to Route Finder"
    )
    custom = build_handoff_tool(Handoff(target=target, name="escalate"))
    assert present_call(custom, custom.name, {}).title == "Hand off to Route Finder"
    asked = agent_as_tool(target)
    assert present_call(asked, asked.name, {"input": "go"}).title == "Ask Route Finder"


async def test_tools_without_a_preview_preview_nothing() -> None:
    assert await preview_call(http_request, {"url": "https://x.test"}, object()) == []
    assert await preview_call(None, {}, object()) == []


async def test_a_failing_preview_previews_nothing() -> None:
    async def broken(args: Mapping[str, Any], workspace: Any) -> Any:
        raise RuntimeError("no")

    @tool(kind="edit", preview=broken)
    def patch(path: str) -> str:
        return path

    assert await preview_call(patch, {"path": "a"}, object()) == []


async def test_tool_events_carry_the_tool_the_run_resolved() -> None:
    @tool(kind="search", title="Find")
    def find(q: str) -> str:
        return q

    @tool(needs_approval=True)
    def risky() -> str:
        return "done"

    provider = ScriptedProvider(
        [
            call("find", {"q": "x"}, call_id="c1"),
            call("risky", {}, call_id="c2"),
            call("missing", {}, call_id="c3"),
            text("ok"),
        ]
    )
    agent = Agent(name="a", model=provider, tools=[find, risky])
    seen: list[tuple[str, str, Tool | None]] = []
    handle = agent.stream("go")
    async for event in handle:
        if isinstance(event, ApprovalRequired):
            seen.append(("approval", event.call.id, event.tool))
            event.reject()
        elif isinstance(event, ToolCallStarted):
            seen.append(("started", event.call.id, event.tool))
        elif isinstance(event, ToolCallCompleted):
            seen.append(("completed", event.call.id, event.tool))
    assert seen == [
        ("started", "c1", find),
        ("completed", "c1", find),
        ("approval", "c2", risky),
        ("completed", "c2", risky),
        ("completed", "c3", None),
    ]


def test_the_tool_field_stays_out_of_event_equality_and_repr() -> None:
    c = ToolCall("c1", "find", "{}")
    with_tool = ToolCallStarted(c, tool=http_request)
    assert with_tool == ToolCallStarted(c) and "tool=" not in repr(with_tool)


async def test_plugin_tools_declare_their_presentation(tmp_path: Any) -> None:
    from lovia.plugins.memory import Memory
    from lovia.plugins.skills import Skills
    from lovia.plugins.subagents import Subagents

    tools: dict[str, Tool] = {}
    for plugin in (
        Memory(tmp_path / "mem", auto_curate=False, summarize_recall=False, expand_query=False),
        Skills(tmp_path),
        Subagents([Agent(name="helper")]),
    ):
        instance = await plugin.setup()
        tools.update({t.name: t for t in instance.tools})
        await instance.aclose()
    table = {
        "remember": ({"fact": "uses pnpm"}, "think", "Remember: uses pnpm"),
        "forget": ({"fact": "uses npm"}, "think", "Forget: uses npm"),
        "load_skill": ({"name": "pdf"}, "read", "Load skill pdf"),
        "read_skill_file": (
            {"name": "pdf", "relpath": "guide.md"},
            "read",
            "Read guide.md of skill pdf",
        ),
        "spawn_subagent": ({"prompt": "find bugs"}, "other", "Start subagent: find bugs"),
        "wait_subagents": ({}, "other", "Wait for subagents"),
        "send_to_subagent": ({"id": "t1", "message": "hi"}, "other", "Message subagent t1"),
        "cancel_subagent": ({"id": "t1"}, "other", "Stop subagent t1"),
    }
    for name, (args, kind, title) in table.items():
        shown = present_call(tools[name], name, args)
        assert (name, shown.kind, shown.title) == (name, kind, title)
