"""``lovia chat``: the terminal client over the real server."""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from lovia_server.chat import ChatSession, Terminal

CHAT = [sys.executable, "-m", "lovia.cli", "chat"]


def _env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("LOVIA_MODEL", "OPENAI_API_KEY")}
    env["XDG_STATE_HOME"] = str(tmp_path / "xdg")
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def test_demo_runs_offline_and_edits_with_an_approved_diff(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# my project\n\nsome text\n")
    proc = subprocess.run(
        [*CHAT, "--demo", "--yes", "--workspace", str(ws)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "demo model (offline, scripted" in out
    assert "▸ List ." in out and "▸ Read README.md" in out
    assert "? approval needed: Edit README.md" in out
    assert "-# my project" in out and "+# my project — tidied by lovia" in out
    assert "— completed" in out
    assert (ws / "README.md").read_text().startswith("# my project — tidied by lovia\n")


def test_says_once_when_shell_commands_are_not_sandboxed(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# my project\n")
    outs = []
    for extra in ({"LOVIA_SANDBOX_BWRAP": str(tmp_path / "no-bwrap")}, {}):
        proc = subprocess.run(
            [*CHAT, "--demo", "--yes", "--workspace", str(ws)],
            capture_output=True,
            text=True,
            timeout=120,
            env=_env(tmp_path, **extra),
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        outs.append(proc.stdout)
    unconfined, sandboxed = outs
    note = "note: Shell commands are not sandboxed on this machine: bubblewrap"
    assert unconfined.count(note) == 1
    from lovia.workspace.sandbox import BubblewrapExecutor

    if BubblewrapExecutor.available():
        assert "not sandboxed" not in sandboxed


def test_without_a_model_points_at_the_setting_and_the_demo(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = subprocess.run(
        [*CHAT, "--workspace", str(ws), "hello"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 1
    assert "No model is configured" in proc.stdout and "LOVIA_MODEL" in proc.stdout
    assert "lovia chat --demo" in proc.stdout


def test_non_interactive_rejects_unless_yes(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# title\n")
    proc = subprocess.run(
        [*CHAT, "--demo", "--workspace", str(ws)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0
    assert "approval rejected" in proc.stdout
    assert (ws / "README.md").read_text() == "# title\n"


def test_demo_answer_reacts_to_a_rejection_and_its_reason(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# title\n")
    proc = subprocess.run(
        [*CHAT, "--demo", "--workspace", str(ws)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0
    assert "you rejected my edit to `README.md`, so I left it unchanged" in proc.stdout
    assert "You said: “Rejected: lovia chat was not run interactively" in proc.stdout
    assert "proposed a small edit" not in proc.stdout


WAITING_AGENT = textwrap.dedent(
    """
    import asyncio
    from pathlib import Path
    from lovia import Agent, tool
    from lovia.testing import ScriptedProvider, call, text
    from lovia.transcript import ToolResultEntry

    ROOT = Path(__file__).parent

    @tool
    async def build() -> str:
        "Build; waits for a release file."
        (ROOT / "started").write_text("1")
        while not (ROOT / "release").exists():
            await asyncio.sleep(0.02)
        return "built"

    class Positional(ScriptedProvider):
        async def stream(self, entries, **kw):
            from collections import deque
            done = sum(isinstance(e, ToolResultEntry) for e in entries)
            self.script = deque([call("build", {}, call_id="b1"), text("all built")][done:])
            async for d in super().stream(entries, **kw):
                yield d

    agent = Agent(name="builder", model=Positional([]), tools=[build])
    """
)


def test_an_interrupted_run_can_be_resumed(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "agent.py").write_text(WAITING_AGENT)
    state = tmp_path / "state"
    base = [*CHAT, "--workspace", str(ws), "--agent", "agent.py:agent", "--state-dir", str(state)]
    proc = subprocess.Popen(
        [*base, "build it"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=_env(tmp_path),
        start_new_session=True,
    )
    try:
        for _ in range(600):
            if (ws / "started").exists():
                break
            if proc.poll() is not None:
                break
            asyncio.run(asyncio.sleep(0.05))
        assert (ws / "started").exists(), proc.communicate(timeout=5)
        os.kill(proc.pid, signal.SIGTERM)  # the chat dies; its server sees EOF and interrupts
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    (ws / "release").write_text("go")
    resumed = subprocess.run(
        [*base, "--resume"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resuming run" in resumed.stdout and "all built" in resumed.stdout
    assert "— completed" in resumed.stdout


class FakeClient:
    def __init__(self):
        self.requests = []

    async def request(self, method, params):
        self.requests.append((method, params))
        return {}


@pytest.mark.parametrize("interactive", [True])
async def test_lines_answer_prompts_first_then_steer(interactive):
    import io

    client = FakeClient()
    chat = ChatSession(
        client,
        Terminal(io.StringIO(), color=False),
        auto_approve=False,
        read_line=lambda prompt: asyncio.sleep(0, None),
        interactive=interactive,
    )
    chat.run_id = "r1"
    approval = {
        "kind": "approval.requested",
        "runId": "r1",
        "approvalId": "a1",
        "title": "Run ls",
        "detail": "ls",
        "seq": 3,
    }
    await chat.on_event(approval)
    await asyncio.sleep(0)
    await chat.handle_line("use the staging db")
    await asyncio.sleep(0.01)
    await chat.handle_line("also check the logs")
    assert client.requests[0] == (
        "lovia/approve",
        {
            "runId": "r1",
            "approvalId": "a1",
            "decision": "reject_once",
            "message": "use the staging db",
        },
    )
    assert client.requests[1] == ("lovia/steer", {"runId": "r1", "message": "also check the logs"})


def test_the_finished_line_says_what_the_run_cost_when_known():
    import io

    out = io.StringIO()
    term = Terminal(out, color=False, resume_hint=False)
    usage = {"inputTokens": 1200, "outputTokens": 300}
    term.event({"kind": "run.finished", "runId": "r", "status": "completed", "usage": usage})
    term.event(
        {
            "kind": "run.finished",
            "runId": "r",
            "status": "completed",
            "usage": {**usage, "costUsd": 0.00123},
        }
    )
    assert out.getvalue().splitlines() == [
        "— completed, 1500 tokens",
        "— completed, 1500 tokens, $0.0012",
    ]


ESCALATING_AGENT = textwrap.dedent(
    """
    from lovia import Agent
    from lovia.testing import ScriptedProvider, call, text

    agent = Agent(
        name="escalator",
        model=ScriptedProvider([
            call("write_file", {"path": ".vscode/settings.json", "content": "{}"}, call_id="w1"),
            call("write_file", {"path": "notes.txt", "content": "ok"}, call_id="w2"),
            text("done"),
        ]),
    )
    """
)


def test_yes_never_approves_a_change_to_editor_configuration(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "agent.py").write_text(ESCALATING_AGENT)
    proc = subprocess.run(
        [*CHAT, "--agent", "agent.py:agent", "--yes", "--workspace", str(ws), "go"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "alters agent or editor configuration" in proc.stdout
    assert not (ws / ".vscode").exists()
    assert (ws / "notes.txt").read_text() == "ok"  # an ordinary edit is still approved by --yes
