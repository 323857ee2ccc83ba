"""How long `lovia chat` takes from spawn to its first prompt, with and without the line editor.

    .venv/bin/python bench/chat_startup_bench.py [--runs 7]

Each sample runs ``lovia chat`` on a pseudo-terminal in a fresh workspace and state folder (an
echoing scripted agent, so no key is needed) and times the spawn until the prompt is on the
screen: with ``TERM=xterm`` the chat loads prompt_toolkit for its line editor; with
``TERM=dumb`` it reads plain lines and never imports it (the same path as without the ``chat``
extra). Medians count. Target: the line editor adds under 200 ms to the time to the prompt.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

CHAT = [sys.executable, "-m", "lovia.cli", "chat"]
AGENT = """
from lovia import Agent
from lovia.testing import ScriptedProvider, text

agent = Agent(name="echo", model=ScriptedProvider([text("hi")] * 100, record=False))
"""


def _take_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def sample(term: str) -> float:
    root = Path(tempfile.mkdtemp(prefix="chat-bench-"))
    (root / "agent.py").write_text(AGENT)
    env = {**os.environ, "TERM": term, "NO_COLOR": "1", "XDG_STATE_HOME": str(root / "xdg")}
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*CHAT, "--workspace", str(root), "--agent", "agent.py:agent"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
        preexec_fn=_take_terminal,
    )
    os.close(slave)
    out = b""
    try:
        while True:  # the prompt is the first '>' after the banner's hint line
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                raise RuntimeError(f"no prompt: {out!r}")
            data = os.read(master, 65536)
            if b"\x1b[6n" in data:  # answer the editor's cursor-position query, as a terminal does
                os.write(master, b"\x1b[1;1R")
            out += data
            banner = out.find(b"twice quits")
            if banner >= 0 and out.find(b">", banner) >= 0:
                return time.perf_counter() - start
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        os.close(master)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    times: dict[str, list[float]] = {"xterm": [], "dumb": []}
    for _ in range(runs):
        for term in times:  # interleaved, so load changes hit both alike
            times[term].append(sample(term))
    editor, plain = (statistics.median(times[t]) * 1000 for t in ("xterm", "dumb"))
    print(f"time to the first prompt, median of {runs} (load {os.getloadavg()[0]:.2f}):")
    print(f"  line editor (prompt_toolkit): {editor:7.0f} ms")
    print(f"  plain reader:                 {plain:7.0f} ms")
    print(f"  difference:                   {editor - plain:7.0f} ms (target < 200 ms)")


if __name__ == "__main__":
    main()
