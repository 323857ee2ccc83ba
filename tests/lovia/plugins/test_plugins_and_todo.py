import json
import logging

import pytest

from lovia import (
    Agent,
    AgentHooks,
    InMemorySession,
    PluginInstance,
    Runner,
    Todo,
    UserError,
    events,
)
from lovia.plugins import TodoItem, TodoList, render_todos, todos_from_entries
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import InputEntry, ToolCallEntry, ToolResultEntry


def make(script, **kw):
    provider = ScriptedProvider(script)
    return Agent(name=kw.pop("name", "a"), model=provider, **kw), provider


class Injecting:
    def __init__(self, name, content=None, fail=False, is_async=False):
        self.name = name
        self.content = content
        self.fail = fail
        self.is_async = is_async
        self.closed = False

    async def setup(self, ctx):
        assert ctx.entries == [] and ctx.agent.name == "a"

        def inject(run_ctx):
            if self.fail:
                raise RuntimeError("injector broke")
            return [InputEntry("user", f"<reminder {self.content}>")]

        async def ainject(run_ctx):
            return inject(run_ctx)

        async def aclose():
            self.closed = True

        return PluginInstance(
            view_injectors=[ainject if self.is_async else inject],
            instructions=f"uses {self.name}",
            aclose=aclose,
        )


async def test_view_injectors_per_call_never_persisted(caplog):
    session = InMemorySession()
    p1, p2 = Injecting("one", "1"), Injecting("two", "2", is_async=True)
    bad = Injecting("bad", fail=True)
    agent, provider = make([call("missing", {}), text("ok")], plugins=[p1, bad, p2])
    with caplog.at_level(logging.WARNING):
        result = await Runner.run(agent, "x", session=session, session_id="s")
    for view in provider.calls:
        assert [m.content for m in view[-2:]] == ["<reminder 1>", "<reminder 2>"]
    assert len(provider.calls[1]) == 1 + 3 + 2  # system, user/assistant/tool, injected
    flat = [e for e in result.entries if isinstance(e, InputEntry)]
    assert [e.content for e in flat] == ["x"]
    stored = await session.load("s")
    assert not any("reminder" in str(getattr(e, "content", "")) for e in stored)
    assert provider.calls[0][0].content == "uses one\n\nuses bad\n\nuses two"
    assert any("view_injector.error" in r.getMessage() for r in caplog.records)
    assert p1.closed and p2.closed and bad.closed


async def test_duplicate_plugin_names_fail_before_setup():
    calls = []

    class P:
        name = "dup"

        async def setup(self):
            calls.append(1)
            return PluginInstance()

    agent, _ = make([text("x")], name="t", plugins=[P(), P()])
    with pytest.raises(UserError, match="Duplicate plugin name 'dup' on agent 't'."):
        await Runner.run(agent, "x")
    assert calls == []


async def test_plugin_tools_hooks_guardrails_and_lifo_close():
    order = []
    from lovia import tool

    def mk(tag):
        class P:
            name = tag

            async def setup(self, ctx=None):
                hooks = AgentHooks()
                hooks.on(events.RunStarted)(lambda ev, c: order.append(f"hook:{tag}"))

                @tool(name=f"tool_{tag}")
                async def t() -> str:
                    return tag

                async def aclose():
                    order.append(f"close:{tag}")

                return PluginInstance(
                    tools=[t],
                    hooks=hooks,
                    output_guardrails=[lambda out, c: order.append(f"guard:{tag}")],
                    aclose=aclose,
                )

        return P()

    agent, provider = make([call("tool_x", {}), text("ok")], plugins=[mk("x"), mk("y")])
    result = await Runner.run(agent, "q")
    assert [e.output for e in result.entries if isinstance(e, ToolResultEntry)] == ["x"]
    assert order == ["hook:x", "hook:y", "guard:x", "guard:y", "close:y", "close:x"]


async def test_plugin_tool_name_conflict():
    from lovia import tool

    @tool
    async def todo_write() -> str:
        return "mine"

    agent, _ = make([text("x")], tools=[todo_write], plugins=[Todo()])
    with pytest.raises(UserError, match="Tool name conflict for 'todo_write' from plugin."):
        await Runner.run(agent, "x")


# ------------------------------------------------------------------ Todo


def test_render_and_normalise():
    items = [
        TodoItem(content="a", status="completed"),
        TodoItem(content="b", status="in_progress", active_form="Doing b"),
        TodoItem(content="c", status="in_progress"),
        TodoItem(content="d"),
    ]
    store = TodoList()
    out = store.replace(items)
    assert [i.status for i in out] == ["completed", "in_progress", "pending", "pending"]
    assert items[2].status == "in_progress"  # caller objects untouched
    assert render_todos(out) == "[x] a\n[~] Doing b\n[ ] c\n[ ] d"
    out[0].content = "changed"
    assert store.items[0].content == "a"


def test_todos_from_entries_skips_malformed():
    entries = [
        ToolCallEntry("1", "todo_write", json.dumps({"todos": [{"content": "old"}]})),
        ToolCallEntry("2", "todo_write", json.dumps({"todos": [{"status": "bad"}]})),
        ToolCallEntry("3", "todo_write", "{nope"),
    ]
    assert [i.content for i in todos_from_entries(entries)] == ["old"]
    assert todos_from_entries([]) == []


async def test_todo_setup_without_args_and_schema():
    inst = await Todo().setup()
    (t,) = inst.tools
    assert t.name == "todo_write"
    schema = t.parameters
    assert schema["required"] == ["todos"]
    item = schema["$defs"]["TodoItem"]
    assert item["required"] == ["content"]
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    assert inst.instructions.startswith("## Todo")
    assert (await Todo(instructions=None).setup()).instructions is None


async def test_todo_reminder_from_turn_two_and_raw_items():
    todos = {
        "todos": [
            {"content": "write code", "status": "in_progress", "active_form": "Writing code"},
            {"content": "test"},
        ]
    }
    agent, provider = make(
        [call("todo_write", todos), call("todo_write", {"todos": []}), text("done")],
        plugins=[Todo()],
    )
    result = await Runner.run(agent, "x")
    assert "system-reminder" not in str(provider.calls[0][-1].content)
    reminder = provider.calls[1][-1]
    assert reminder.role == "user" and "<system-reminder>" in reminder.content
    assert "[~] Writing code" in reminder.content and "[ ] test" in reminder.content
    results = [e for e in result.entries if isinstance(e, ToolResultEntry)]
    assert isinstance(results[0].raw, list) and isinstance(results[0].raw[0], TodoItem)
    assert results[0].output.startswith("Updated todo list:\n[~] Writing code")
    assert results[1].output == "Todo list cleared."
    assert "system-reminder" not in str(provider.calls[2][-1].content)


async def test_todo_inject_false_and_handoff_rehydration():
    todos = {"todos": [{"content": "step", "status": "in_progress"}]}
    agent, provider = make([call("todo_write", todos), text("ok")], plugins=[Todo(inject=False)])
    await Runner.run(agent, "x")
    assert "system-reminder" not in str(provider.calls[1][-1].content)

    target, tprov = make([text("done")], name="b", plugins=[Todo()])
    entry, _ = make(
        [call("todo_write", todos), call("transfer_to_b", {})], plugins=[Todo()], handoffs=[target]
    )
    await Runner.run(entry, "x")
    assert "[~] step" in tprov.calls[0][-1].content
