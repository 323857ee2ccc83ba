"""Pure mappings in lovia_server.host.payloads: tool kinds, titles, locations and approval subjects
come from the tool passed in, never from its name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lovia import Agent, tool
from lovia.handoff import Handoff, build_handoff_tool
from lovia.plugins.todo import TodoItem
from lovia.tools.base import Tool
from lovia.transcript import AssistantTextEntry, InputEntry, ToolCallEntry, ToolResultEntry
from lovia.workspace import tools as wt
from lovia_server.host.event_projection import _is_todo_update
from lovia_server.host.payloads import (
    approval_command,
    approval_subject,
    tool_kind,
    tool_locations,
    tool_title,
)
from lovia_server.host.session_queries import project_entries

ROOT = Path("/work/project")


@tool
def shell(command: str) -> str:
    """A user tool that happens to share a built-in's name."""
    return command


@pytest.mark.parametrize(
    ("t", "name", "args", "kind", "title"),
    [
        (wt.edit_file, "edit_file", {"path": "a.py"}, "edit", "Edit a.py"),
        (wt.shell, "shell", {"command": "ls"}, "execute", "Run `ls`"),
        (shell, "shell", {"command": "ls"}, "other", "shell: ls"),
        (None, "edit_file", {"path": "a.py"}, "other", "edit_file: a.py"),
        (
            build_handoff_tool(Handoff(Agent(name="Expert"))),
            "transfer_to_expert",
            {},
            "other",
            "Hand off to Expert",
        ),
    ],
)
def test_kind_and_title_follow_the_tool_not_the_name(
    t: Tool | None, name: str, args: dict[str, Any], kind: str, title: str
) -> None:
    assert (tool_kind(t), tool_title(t, name, args)) == (kind, title)


def test_locations_resolve_against_the_root_with_uri_and_line() -> None:
    assert tool_locations(wt.read_file, {"path": "src/a.py", "start": 3}, ROOT) == [
        {"path": "/work/project/src/a.py", "uri": "file:///work/project/src/a.py", "line": 3}
    ]
    assert tool_locations(wt.write_file, {"path": "/tmp/x"}, ROOT) == [
        {"path": "/tmp/x", "uri": "file:///tmp/x"}
    ]
    assert tool_locations(wt.shell, {"command": "ls", "cwd": "sub"}, ROOT)[0]["path"] == (
        "/work/project/sub"
    )
    assert tool_locations(None, {"path": "a.py"}, ROOT) == []


def test_approval_subjects_are_the_command_the_file_or_the_tool() -> None:
    # a command: exactly as written, with the directory it runs in
    subject = approval_subject(wt.shell, "shell", {"command": "rm  -rf build"}, ROOT)
    assert subject == 'shell:["/work/project", "rm  -rf build"]'
    assert subject != approval_subject(wt.shell, "shell", {"command": "rm -rf build"}, ROOT)
    in_a = approval_subject(wt.shell, "shell", {"command": "ls", "cwd": "./a/"}, ROOT)
    assert in_a == 'shell:["/work/project/a", "ls"]'
    assert in_a == approval_subject(wt.shell, "shell", {"command": "ls", "cwd": "a"}, ROOT)
    assert in_a != approval_subject(wt.shell, "shell", {"command": "ls", "cwd": "b"}, ROOT)
    assert approval_command(shell, {"command": "ls"}) is None  # not an execute tool
    assert approval_subject(shell, "shell", {"command": "ls"}, ROOT) == "tool:shell"
    assert (
        approval_subject(wt.edit_file, "edit_file", {"path": "a.py"}, ROOT)
        == "edit_file:/work/project/a.py"
    )
    assert approval_subject(None, "deploy", {"path": "a.py"}, ROOT) == "tool:deploy"


def test_todo_updates_are_think_calls_returning_todo_items() -> None:
    think = Tool("plan", "", {}, invoke=_never, kind="think")
    items = [TodoItem(content="x")]
    assert _is_todo_update(think, items) and _is_todo_update(think, [])
    assert not _is_todo_update(think, ["x"])
    assert not _is_todo_update(Tool("plan", "", {}, invoke=_never), items)
    assert not _is_todo_update(None, items)


async def _never(args: dict[str, Any], ctx: Any) -> Any:
    raise AssertionError("not called")


def test_stored_calls_are_titled_by_the_tools_the_server_has_seen() -> None:
    entries = [
        InputEntry(role="user", content="go"),
        ToolCallEntry("c1", "read_file", '{"path": "a.py"}'),
        ToolCallEntry("c2", "gone", '{"q": "x"}'),
        ToolResultEntry("c1", "text"),
        ToolResultEntry("c2", "text"),
        AssistantTextEntry("done"),
    ]
    view = [m.to_wire() for m in project_entries(entries, {"read_file": wt.read_file})]
    calls = view[1]["toolCalls"]
    assert [(c["title"], c["toolKind"]) for c in calls] == [
        ("Read a.py", "read"),
        ("gone: x", "other"),
    ]
    plain = project_entries(entries)[1].to_wire()
    assert [(c["title"], c["toolKind"]) for c in plain["toolCalls"]] == [
        ("read_file: a.py", "other"),
        ("gone: x", "other"),
    ]
