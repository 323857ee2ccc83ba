"""End to end: an Agent with Workspace.local and a scripted model, approvals in the stream."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lovia import Agent, Runner
from lovia.events import ApprovalRequired, ToolCallCompleted
from lovia.run_context import RunContext
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.tools import tool
from lovia.workspace import Workspace


async def run_collect(
    agent: Agent[Any], prompt: str, decide: dict[str, bool]
) -> tuple[Any, dict[str, str], list[str]]:
    handle = Runner.stream(agent, prompt)
    outputs: dict[str, str] = {}
    asked: list[str] = []
    async for event in handle:
        if isinstance(event, ApprovalRequired):
            asked.append(event.call.id)
            if decide.get(event.call.id, False):
                event.approve()
            else:
                event.reject()
        elif isinstance(event, ToolCallCompleted):
            outputs[event.call.id] = event.output
    return await handle.result(), outputs, asked


async def test_read_edit_shell_with_approval_and_a_denied_path(root: Path, outside: Path) -> None:
    (root / "app.py").write_text("GREETING = 'hello'\n")
    (root / ".env").write_text("TOKEN=secret\n")
    provider = ScriptedProvider(
        [
            call("read_file", {"path": "app.py"}, call_id="read"),
            call("edit_file", {"path": "app.py", "old": "'hello'", "new": "'hi'"}, call_id="edit"),
            call(
                "shell",
                {"command": "cat app.py | tee out.txt", "description": "show"},
                call_id="sh",
            ),
            batch(
                ("read_file", {"path": ".env"}, "env"), ("shell", {"command": "cat .env"}, "sh_env")
            ),
            call("read_file", {"path": str(outside / "secret.txt")}, call_id="outside"),
            call("list_files", {"path": "."}, call_id="ls"),
            text("done"),
        ]
    )
    agent = Agent(
        name="coder",
        instructions="You edit code.",
        model=provider,
        workspace=Workspace.local(str(root), denied_paths=(".env",)),
    )
    result, out, asked = await run_collect(agent, "change the greeting", {"sh": True})

    assert result.output == "done"
    assert out["read"] == "app.py (lines 1-1 of 1)\nGREETING = 'hello'\n"
    assert out["edit"] == "edited app.py (1 replacement)"
    assert (root / "app.py").read_text() == "GREETING = 'hi'\n"
    assert out["sh"] == "exit code: 0\nGREETING = 'hi'"
    assert out["env"] == "Tool error: Path '.env' is denied by workspace policy."
    assert out["sh_env"].startswith("Tool error: Command denied by workspace policy.")
    assert out["outside"] == "Tool read_file was not approved."
    assert ".env" not in out["ls"] and "app.py" in out["ls"]
    # only the shell command and the outside read needed a human; denied calls never ask
    assert asked == ["sh", "outside"]
    assert "TOKEN=secret" not in " ".join(out.values())
    system = provider.calls[0][0]
    assert system.role == "system" and "You edit code." in str(system.content)
    assert "## Workspace" in str(system.content) and "'.env'" in str(system.content)
    tool_names = [t["function"]["name"] for t in provider.requests[0]["tools"]]
    assert tool_names[:4] == ["read_file", "list_files", "grep_files", "write_file"]
    assert "view_image" not in tool_names  # the scripted provider has no vision


async def test_background_process_reminder_reaches_the_model(root: Path) -> None:
    provider = ScriptedProvider(
        [
            call("shell", {"command": "sleep 30", "background": True}, call_id="bg"),
            text("waiting"),
        ]
    )
    ws = Workspace.local(str(root), mode="trusted")
    agent = Agent(name="a", model=provider, workspace=ws)
    result, out, asked = await run_collect(agent, "start it", {})
    assert out["bg"].startswith("started background process bg-")
    second_prompt = provider.calls[1]
    reminder = second_prompt[-1]
    assert "<system-reminder>" in str(reminder.content) and "running: sleep 30" in str(
        reminder.content
    )
    assert all("<system-reminder>" not in str(e) for e in result.messages)  # never persisted


async def test_shared_session_via_bind_survives_runs(root: Path) -> None:
    ws = Workspace.local(str(root), mode="trusted")
    async with ws.session() as bound:
        provider = ScriptedProvider(
            [
                call("shell", {"command": "sleep 30", "background": True}, call_id="s"),
                text("ok"),
                call("shell", {"command": "echo again"}, call_id="e"),
                text("ok2"),
            ]
        )
        agent = Agent(name="a", model=provider, workspace=bound)
        await run_collect(agent, "one", {})
        live = await bound.open()
        assert [p.status for p in live.background_processes()] == ["running"]
        await run_collect(agent, "two", {})
        assert not live.closed
    assert live.closed and live.background_processes() == []


async def test_custom_tool_uses_the_same_gate(root: Path) -> None:
    (root / ".env").write_text("x")

    @tool
    async def peek(ctx: RunContext[Any], path: str) -> str:
        return (await ctx.workspace.read_text(path)).content

    provider = ScriptedProvider([call("peek", {"path": ".env"}, call_id="p"), text("end")])
    agent = Agent(
        name="a",
        model=provider,
        tools=[peek],
        workspace=Workspace.local(str(root), denied_paths=(".env",)),
    )
    _, out, _ = await run_collect(agent, "go", {})
    assert out["p"] == "Tool error: Path '.env' is denied by workspace policy."


async def test_tool_name_conflict(root: Path) -> None:
    @tool
    def read_file(path: str) -> str:
        return path

    agent = Agent(
        name="a",
        model=ScriptedProvider([text("x")]),
        tools=[read_file],
        workspace=Workspace.local(str(root)),
    )
    try:
        await Runner.run(agent, "go")
    except Exception as exc:
        assert "Tool name conflict" in str(exc)
    else:
        raise AssertionError("expected a tool name conflict")
