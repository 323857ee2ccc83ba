"""``lovia chat`` in a real terminal: a pseudo-terminal, keystrokes and Ctrl-C as a user sends them.

The chat runs as the session leader of its own pseudo-terminal, so Ctrl-C (``\\x03``) reaches it
through the terminal driver exactly as it does from a keyboard.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import termios
import textwrap
import time
from pathlib import Path

import pyte
import pytest

pytestmark = pytest.mark.timeout(360)

CHAT = [sys.executable, "-m", "lovia.cli", "chat"]
WAIT = 90.0  # seconds for one expected screen change (a server start on a busy 2-core machine)

# 'build…' prompts call a tool that waits for a release file (it ignores cancellation, so the
# run spends a while "cancelling"); any other prompt is echoed.
HELPER_AGENT = textwrap.dedent(
    """
    import asyncio
    from collections import deque
    from pathlib import Path

    from lovia import Agent, tool
    from lovia.testing import ScriptedProvider, call, text
    from lovia.transcript import InputEntry, ToolResultEntry

    ROOT = Path(__file__).parent


    @tool
    async def build() -> str:
        "Build; waits for a release file."
        (ROOT / "started").write_text("1")
        while not (ROOT / "release").exists():
            await asyncio.sleep(0.02)
        return "built"


    class Helper(ScriptedProvider):
        async def stream(self, entries, **kw):
            index = max(i for i, e in enumerate(entries) if isinstance(e, InputEntry))
            prompt = entries[index].content
            done = any(isinstance(e, ToolResultEntry) for e in entries[index:])
            with open(ROOT / "received", "a") as f:  # what the model was sent
                f.write(prompt + "\\n")
            if not prompt.startswith("build"):
                turn = text(f"echo: {prompt}")
            elif done:
                turn = text("all built")
            else:
                turn = call("build", {}, call_id=f"b{index}")
            self.script = deque([turn])
            async for delta in super().stream(entries, **kw):
                yield delta


    agent = Agent(name="helper", model=Helper([], record=False), tools=[build])
    """
)


def _take_terminal() -> None:
    """In the child: make the pseudo-terminal on stdin the controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Screen:
    """A command on a pseudo-terminal: what it printed, and keys to send it."""

    def __init__(self, args: list[str], *, env: dict[str, str], cwd: Path) -> None:
        master, slave = pty.openpty()
        self.master = master
        self.output = b""
        # What a user sees: a VT emulator fed the same bytes, answering the cursor-position
        # queries a line editor sends as a terminal would.
        rows, cols = 200, 100
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.vt = pyte.Screen(cols, rows)
        self.vt.write_process_input = lambda data: os.write(master, data.encode())
        self.vt_stream = pyte.ByteStream(self.vt)
        self.proc = subprocess.Popen(
            args,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_take_terminal,
        )
        os.close(slave)

    @property
    def text(self) -> str:
        return self.output.decode(errors="replace").replace("\r\n", "\n")

    def _pump(self, timeout: float) -> bool:
        """Read what is there (waiting up to ``timeout``); False once the terminal is closed."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: every process holding the terminal has exited
            return False
        self.output += data
        self.vt_stream.feed(data)
        return bool(data)

    @property
    def rows(self) -> list[str]:
        """The emulated screen, row by row, without trailing blanks (nor trailing empty rows)."""
        rows = [row.rstrip() for row in self.vt.display]
        while rows and not rows[-1]:
            rows.pop()
        return rows

    def shows(self, needle: str, *, last: bool = False, timeout: float = WAIT) -> None:
        """Wait until the emulated screen shows ``needle`` on one row (``last``: the last row
        with text is exactly ``needle``)."""
        deadline = time.monotonic() + timeout
        while not (
            self.rows[-1:] == [needle] if last else any(needle in r for r in self.vt.display)
        ):
            if time.monotonic() > deadline or (
                not self._pump(0.2) and self.proc.poll() is not None
            ):
                screen = "\n".join(self.rows)
                raise AssertionError(f"{needle!r} is not on the screen:\n{screen}")

    def expect(self, needle: str, *, after: int = 0, timeout: float = WAIT) -> int:
        """Wait for ``needle`` to appear past character ``after``; return where it ends."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.text.find(needle, after)
            if found >= 0:
                return found + len(needle)
            if time.monotonic() > deadline or (
                not self._pump(0.2) and self.proc.poll() is not None
            ):
                raise AssertionError(f"{needle!r} did not appear; the screen:\n{self.text}")

    def type(self, data: str) -> None:
        os.write(self.master, data.encode())

    def wait(self, timeout: float = WAIT) -> int:
        """Wait for the command to exit (reading its output meanwhile); its exit code."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"the chat did not exit; the screen:\n{self.text}")
            self._pump(0.2)
        while self._pump(0.05):
            pass
        return self.proc.returncode

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        os.close(self.master)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    drop = ("LOVIA_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY")
    out = {k: v for k, v in os.environ.items() if k not in drop}
    (tmp_path / "tmp").mkdir()
    out.update(
        XDG_STATE_HOME=str(tmp_path / "xdg"),
        NO_COLOR="1",
        TMPDIR=str(tmp_path / "tmp"),  # where the demo makes its folder
        TERM="dumb",
    )
    return out


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "agent.py").write_text(HELPER_AGENT)
    return root


@pytest.fixture
def screens():
    opened: list[Screen] = []

    def open_screen(args: list[str], *, env: dict[str, str], cwd: Path) -> Screen:
        screen = Screen(args, env=env, cwd=cwd)
        opened.append(screen)
        return screen

    yield open_screen
    for screen in opened:
        screen.close()


def _helper(ws: Path, *extra: str) -> list[str]:
    return [*CHAT, "--workspace", str(ws), "--agent", "agent.py:agent", *extra]


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + WAIT
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)


def _demo_folders(env: dict[str, str]) -> list[Path]:
    return sorted(Path(env["TMPDIR"]).glob("lovia-demo-*"))


def test_a_one_shot_run_exits_when_the_run_ends_and_removes_the_demo_folder(env, tmp_path, screens):
    screen = screens([*CHAT, "--demo", "--yes", "tidy up"], env=env, cwd=tmp_path)
    screen.expect("lovia chat in ")
    assert len(_demo_folders(env)) == 1  # made for the run...
    assert screen.wait() == 0, screen.text  # no key pressed
    assert "— completed" in screen.text
    assert _demo_folders(env) == []  # ...and gone with it
    assert "Traceback" not in screen.text


def test_no_typed_line_is_lost_between_runs(env, ws, screens):
    screen = screens(_helper(ws), env=env, cwd=ws)
    at = screen.expect("> ")
    screen.type("first\r")
    at = screen.expect("— completed", after=at)
    screen.type("second\r")  # typed as soon as the run ends
    at = screen.expect("you: second", after=at)
    at = screen.expect("echo: second", after=at)
    screen.expect("> ", after=at)
    screen.type("/exit\r")
    assert screen.wait() == 0, screen.text
    assert screen.text.count("you: ") == 2


def test_a_line_typed_while_a_run_works_steers_it(env, ws, screens):
    screen = screens(_helper(ws), env=env, cwd=ws)
    at = screen.expect("> ")
    screen.type("build it\r")
    at = screen.expect("▸ build", after=at)
    screen.type("and lint it\r")
    at = screen.expect("(steer queued", after=at)
    (ws / "release").write_text("go")
    at = screen.expect("you (steer): and lint it", after=at)
    at = screen.expect("echo: and lint it", after=at)
    at = screen.expect("— completed", after=at)
    screen.expect("> ", after=at)
    screen.type("/exit\r")
    assert screen.wait() == 0, screen.text


def test_ctrl_c_cancels_the_run_and_the_prompt_comes_back_then_quits(env, ws, screens):
    screen = screens(_helper(ws), env=env, cwd=ws)
    at = screen.expect("> ")
    screen.type("build it\r")
    at = screen.expect("▸ build", after=at)
    _wait_for(ws / "started")
    screen.type("\x03")
    at = screen.expect("cancelling", after=at)
    at = screen.expect("— cancelled", after=at)
    at = screen.expect("> ", after=at)
    screen.type("still there?\r")  # the server survived the Ctrl-C
    at = screen.expect("echo: still there?", after=at)
    screen.expect("> ", after=at)
    screen.type("\x03")  # at the prompt: quit
    assert screen.wait() == 130, screen.text
    assert "Traceback" not in screen.text


def test_ctrl_c_twice_quits_cleanly_and_the_run_stays_resumable(env, ws, screens):
    screen = screens(
        _helper(ws, "--state-dir", str(ws.parent / "state"), "build it"), env=env, cwd=ws
    )
    at = screen.expect("▸ build")
    _wait_for(ws / "started")
    screen.type("\x03")
    at = screen.expect("cancelling", after=at)
    screen.type("\x03")  # the tool is still running: quit now
    assert screen.wait() == 130, screen.text
    assert "Traceback" not in screen.text and "Error" not in screen.text
    assert "interrupted" in screen.text and "lovia chat --resume" in screen.text

    (ws / "release").write_text("go")
    resumed = subprocess.run(
        [*_helper(ws, "--state-dir", str(ws.parent / "state")), "--resume"],
        capture_output=True,
        text=True,
        timeout=WAIT * 2,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "resuming run" in resumed.stdout and "all built" in resumed.stdout


def test_ctrl_c_at_an_approval_cancels_and_the_demo_folder_is_removed(env, tmp_path, screens):
    screen = screens([*CHAT, "--demo", "tidy up"], env=env, cwd=tmp_path)
    screen.expect("allow? [y]es")
    assert len(_demo_folders(env)) == 1
    screen.type("\x03")
    assert screen.wait() == 130, screen.text  # a cancelled one-shot run
    assert "— cancelled" in screen.text and "Traceback" not in screen.text
    assert _demo_folders(env) == []


@pytest.mark.parametrize(
    ("flags", "error", "hint"),
    [
        (
            ["--agent", "garbage"],
            "error: --agent must look like 'path/to/file.py:name', got 'garbage'",
            "--agent path/to/file.py:name",
        ),
        (["--agent", "missing.py:agent"], "error: --agent missing.py:agent: ", "--agent"),
        (["--model", "nope:zzz"], "error: --model nope:zzz: Unknown model spec", "prefixes"),
        (
            ["--model", "openai:gpt-4.1-mini"],
            "error: --model openai:gpt-4.1-mini: OpenAI Chat requires an API key",
            "OPENAI_API_KEY",
        ),
        ([], "error: No model is configured", "--model"),
    ],
    ids=["agent-shape", "agent-missing", "model-unknown", "key-missing", "no-model"],
)
def test_a_user_error_is_one_line_and_a_hint_naming_the_flag(env, ws, screens, flags, error, hint):
    screen = screens([*CHAT, "--workspace", str(ws), *flags, "hello"], env=env, cwd=ws)
    assert screen.wait() == 1, screen.text
    lines = [line for line in screen.text.splitlines() if line.strip()]
    errors = [i for i, line in enumerate(lines) if line.startswith("error:")]
    assert len(errors) == 1, screen.text
    (i,) = errors
    assert lines[i].startswith(error), screen.text
    assert lines[i + 1].startswith("  hint: ") and hint in lines[i + 1], screen.text
    assert lines[i + 2 :] == [], screen.text  # nothing after the hint
    assert "Traceback" not in screen.text and "pygls" not in screen.text
    assert "lovia.agent" not in screen.text and "lovia.model" not in screen.text


# 'deploy…' asks to run a tool that needs approval; the answer quotes what the tool returned, so
# the screen shows what the model received.
APPROVING_AGENT = textwrap.dedent(
    """
    from collections import deque

    from lovia import Agent, tool
    from lovia.testing import ScriptedProvider, call, text
    from lovia.transcript import InputEntry, ToolResultEntry


    @tool(needs_approval=True)
    async def deploy(env: str) -> str:
        "Deploy."
        return f"deployed {env}"


    class Deployer(ScriptedProvider):
        async def stream(self, entries, **kw):
            index = max(i for i, e in enumerate(entries) if isinstance(e, InputEntry))
            results = [e for e in entries[index:] if isinstance(e, ToolResultEntry)]
            if results:
                turn = text(f"the model received: {results[-1].output}")
            else:
                turn = call("deploy", {"env": "prod"}, call_id=f"d{index}")
            self.script = deque([turn])
            async for delta in super().stream(entries, **kw):
                yield delta


    agent = Agent(name="deployer", model=Deployer([], record=False), tools=[deploy])
    """
)


@pytest.mark.parametrize("how", ["sighup", "sigkill"])
def test_a_closed_terminal_leaves_the_approval_to_the_user_and_resume_asks_again(
    env, tmp_path, screens, how
):
    """Closing the terminal (SIGHUP) or killing the chat at an approval decides nothing: the
    resumed chat asks the same question, says who answered, and stays in the conversation."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "agent.py").write_text(APPROVING_AGENT)
    state = ["--state-dir", str(tmp_path / "state")]
    screen = screens(_helper(ws, *state, "deploy it"), env=env, cwd=ws)
    screen.expect("allow? [y]es")
    if how == "sighup":
        os.killpg(screen.proc.pid, signal.SIGHUP)  # what closing a terminal window sends
        screen.wait()
    else:
        os.killpg(screen.proc.pid, signal.SIGKILL)  # the chat and its server die at once
        screen.proc.wait()
    assert "approval rejected" not in screen.text and "approval allowed" not in screen.text

    again = screens(_helper(ws, *state, "--resume"), env=env, cwd=ws)
    at = again.expect("resuming run")
    at = again.expect("allow? [y]es", after=at)  # the same call, asked again
    again.type("y\r")
    at = again.expect("approval allowed (you)", after=at)
    at = again.expect("the model received: deployed prod", after=at)
    at = again.expect("— completed", after=at)
    at = again.expect("> ", after=at)  # the resumed run is part of the conversation
    again.type("/exit\r")
    assert again.wait() == 0, again.text
    assert "not approved" not in again.text and "rejected" not in again.text, again.text
    assert "Traceback" not in again.text


def test_yes_says_the_flag_decided_not_the_user(env, tmp_path, screens):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "agent.py").write_text(APPROVING_AGENT)
    screen = screens(_helper(ws, "--yes", "deploy it"), env=env, cwd=ws)
    assert screen.wait() == 0, screen.text
    assert "approval allowed (--yes)" in screen.text
    assert "(you)" not in screen.text and "(user)" not in screen.text, screen.text


def test_resuming_an_unknown_run_is_one_error_and_no_quitting_line(env, ws, screens):
    screen = screens(_helper(ws, "--resume", "r_bogus"), env=env, cwd=ws)
    assert screen.wait() == 1, screen.text
    assert "error:" in screen.text and "quitting" not in screen.text, screen.text


# 'stream…' answers 'thinking 1/250... ' parts, 5,000 deltas, slowly; any other prompt is echoed.
STREAMING_AGENT = textwrap.dedent(
    """
    import asyncio
    from collections import deque

    from lovia import Agent
    from lovia.testing import ScriptedProvider, text
    from lovia.transcript import InputEntry

    ANSWER = "".join(f"thinking {i}/250... " for i in range(1, 251)) * 2


    class Streamer(ScriptedProvider):
        async def stream(self, entries, **kw):
            index = max(i for i, e in enumerate(entries) if isinstance(e, InputEntry))
            prompt = entries[index].content
            streaming = prompt.startswith("stream")
            self.script = deque([text(ANSWER[:5000] if streaming else f"echo: {prompt}")])
            async for delta in super().stream(entries, **kw):
                yield delta
                if streaming:
                    await asyncio.sleep(0.002)


    agent = Agent(name="streamer", model=Streamer([], record=False))
    """
)


@pytest.fixture
def editor_env(env: dict[str, str]) -> dict[str, str]:
    """A terminal that moves its cursor: the chat uses its line editor."""
    return {**env, "TERM": "xterm"}


def test_typing_while_the_answer_streams_keeps_the_line_and_the_answer_intact(
    editor_env, tmp_path, screens
):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "agent.py").write_text(STREAMING_AGENT)
    screen = screens(_helper(ws), env=editor_env, cwd=ws)
    screen.shows("> ")
    screen.type("stream please\r")
    screen.shows("thinking 3/250")
    screen.type("also look at the tests")  # typed while it streams, not entered yet
    screen.shows("> also look at the tests")
    screen.type(" please")
    screen.shows("— completed")
    screen.shows("> also look at the tests please", last=True)  # still on the input line
    rows = screen.rows
    start = rows.index("you: stream please") + 1
    end = next(i for i, row in enumerate(rows) if row.startswith("— completed"))
    answer = "".join(f"thinking {i}/250... " for i in range(1, 251)) * 2
    streamed = "".join(rows[start:end]).replace(" ", "")  # rows lose their trailing blanks
    assert streamed == answer[:5000].replace(" ", ""), "\n".join(rows)  # contiguous, nothing typed
    screen.type("\r")  # and it is the next prompt
    screen.shows("echo: also look at the tests please")
    screen.type("/exit\r")
    assert screen.wait() == 0, screen.text
    assert "Traceback" not in screen.text


def test_in_the_line_editor_ctrl_c_cancels_the_run_then_quits_at_the_prompt(
    editor_env, ws, screens
):
    screen = screens(_helper(ws), env=editor_env, cwd=ws)
    screen.shows("> ")
    screen.type("build it\r")
    screen.shows("▸ build")
    _wait_for(ws / "started")
    screen.type("\x03")
    screen.shows("cancelling")
    screen.shows("— cancelled")
    screen.type("still there?\r")
    screen.shows("echo: still there?")
    screen.type("\x03")  # at the prompt: quit
    assert screen.wait() == 130, screen.text
    assert "Traceback" not in screen.text


@pytest.mark.parametrize("term", ["xterm", "dumb"])
def test_commands_are_answered_locally_and_a_path_is_a_message(env, ws, screens, term):
    screen = screens(_helper(ws), env={**env, "TERM": term}, cwd=ws)
    screen.shows(">")
    if term == "xterm":
        screen.type("/he\t")  # Tab completes the command
        screen.shows("> /help")
        screen.type("\r")
    else:
        screen.type("/help\r")
    screen.shows("commands (answered here, never sent to the model):")
    screen.shows("Ctrl-C         cancel the live run; again, or at the prompt, quit")
    screen.type("/frobnicate now\r")
    screen.shows("unknown command /frobnicate (not sent to the model); /help lists the commands")
    screen.type("/usr/bin/python is broken\r")
    screen.shows("echo: /usr/bin/python is broken")
    screen.type("/new\r")
    screen.shows("(a new session: the next message starts afresh)")
    screen.type("\x04" if term == "xterm" else "/quit\r")  # Ctrl-D on an empty line quits
    assert screen.wait() == 0, screen.text
    assert (ws / "received").read_text() == "/usr/bin/python is broken\n"  # and nothing else
    assert "Traceback" not in screen.text


FIX_ISSUE = """\
---
allowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*)
argument-hint: [issue-number]
description: Fix a GitHub issue
---

Fix issue #$ARGUMENTS following our coding standards.
"""


@pytest.mark.parametrize("term", ["xterm", "dumb"])
def test_a_claude_code_command_file_completes_expands_and_is_in_help(env, ws, screens, term):
    (ws / ".claude" / "commands").mkdir(parents=True)
    (ws / ".claude" / "commands" / "fix-issue.md").write_text(FIX_ISSUE)
    screen = screens(_helper(ws), env={**env, "TERM": term}, cwd=ws)
    screen.shows(">")
    if term == "xterm":
        screen.type("/fix\t")  # Tab completes the workspace's command
        screen.shows("> /fix-issue")
        screen.type(" 123\r")
    else:
        screen.type("/fix-issue 123\r")
    screen.shows("you: /fix-issue 123")
    screen.shows("echo: Fix issue #123 following our coding standards.")
    screen.type("/help\r")
    screen.shows("commands run by the agent (expanded by the server):")
    screen.shows("/fix-issue [issue-number]  Fix a GitHub issue  [workspace: ")
    screen.shows("/plan <what to plan>")
    screen.type("/new hello again\r")  # a new session that starts with this message
    screen.shows("echo: hello again")
    screen.type("/quit\r")
    assert screen.wait() == 0, screen.text
    # the model got the expanded prompt, and nothing of /help
    assert (ws / "received").read_text() == (
        "Fix issue #123 following our coding standards.\nhello again\n"
    )
    assert "Traceback" not in screen.text


@pytest.mark.parametrize("term", ["xterm", "dumb"])
def test_the_demo_without_a_prompt_plays_its_script_then_stays_in_the_chat(
    env, tmp_path, screens, term
):
    screen = screens([*CHAT, "--demo"], env={**env, "TERM": term}, cwd=tmp_path)
    screen.expect("allow? [y]es")
    screen.type("y\r")
    at = screen.expect("approval allowed (you)")
    at = screen.expect("— completed", after=at)
    screen.shows("type a message; /help lists commands")  # the chat goes on
    screen.type("/exit\r")
    assert screen.wait() == 0, screen.text
    assert _demo_folders(env) == []
    assert "Traceback" not in screen.text


def test_without_prompt_toolkit_the_chat_reads_plain_lines_and_says_how_to_get_the_editor(
    editor_env, ws, tmp_path, screens
):
    blocked = tmp_path / "blocked" / "prompt_toolkit"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('not installed')\n")
    env = {**editor_env, "PYTHONPATH": str(blocked.parent)}
    screen = screens(_helper(ws), env=env, cwd=ws)
    at = screen.expect("pip install 'prompt_toolkit>=3.0.40' (the chat extra)")
    at = screen.expect("> ", after=at)
    screen.type("hello\r")
    at = screen.expect("echo: hello", after=at)
    screen.type("/exit\r")
    assert screen.wait() == 0, screen.text
    assert screen.text.count("the chat extra") == 1 and "Traceback" not in screen.text


RETRYING_AGENT = textwrap.dedent(
    """
    from lovia import Agent, RetryPolicy

    agent = Agent(
        name="retrying",
        model="openai:fake-model",
        retry=RetryPolicy(max_attempts=3, backoff_base=1.0),
    )
    """
)


def test_a_501_endpoint_shows_a_retry_notice_within_2_s_and_ends_naming_the_setting(
    env, tmp_path, screens, fake_openai
):
    """A misconfigured endpoint: the user sees the retry, its cause and the setting to check at
    once (not twenty silent seconds), and the run ends failed, with no resume offered."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "agent.py").write_text(RETRYING_AGENT)
    fake_openai.script(*[fake_openai.error_reply(501, "Not Implemented")] * 3)
    screen = screens(
        [*CHAT, "--workspace", str(ws), "--agent", "agent.py:agent", "hello"],
        env={**env, **fake_openai.env()},
        cwd=ws,
    )
    deadline = time.monotonic() + WAIT
    while not fake_openai.stream_requests():
        assert time.monotonic() < deadline, screen.text
        screen._pump(0.01)
    failed_at = time.monotonic()
    screen.shows("⟳ the model call failed: OpenAI Chat stream returned HTTP 501", timeout=2)
    assert time.monotonic() - failed_at < 2
    screen.shows("(attempt 2 of 3)")
    screen.shows("hint: The server at")
    assert screen.wait() == 1, screen.text
    text = " ".join(screen.text.split())  # the hint wraps at the terminal's width
    assert "— failed, 0 tokens: OpenAI Chat stream returned HTTP 501: Not Implemented" in text
    assert "hint: The server at" in text and "OPENAI_BASE_URL" in text
    assert "(attempt 3 of 3)" in text
    assert "resumable" not in text and "--resume" not in text
    assert "Traceback" not in screen.text
