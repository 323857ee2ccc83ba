"""What a run leaves in the server's memory once it ends: the pages it freed go back to the
system (``host/heap.py``), so the resident size follows what is live, not the biggest run."""

import asyncio
import ctypes.util
import os
import sys
from pathlib import Path

import pytest

from tests.server.harness import AGENT_HEADER

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not ctypes.util.find_library("c"),
    reason="measures a glibc heap through /proc",
)

CHURN_AGENT = (
    AGENT_HEADER
    + """
LIVE = []  # outlives the run, as the server's own long-lived objects do


def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@tool
async def churn() -> str:
    "Hold ~120 MB of tool output, interleaved with a few objects that stay, then drop it."
    filler = b"x" * 2000
    junk = []
    for i in range(60_000):
        junk.append(filler + str(i).encode())
        if i % 50 == 0:
            LIVE.append(filler[:700] + str(i).encode())
    del junk
    return str(rss_kib())

agent = Agent(
    name="churner",
    model=ScriptedProvider([call("churn", {}, call_id="c1"), text("done")]),
    tools=[churn],
)
"""
)


def server_rss_kib(harness) -> int:
    pid = harness.client._server.pid
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def test_memory_a_run_freed_goes_back_to_the_system_when_it_ends(harness):
    spec = harness.write_agent(CHURN_AGENT)
    await harness.start(settings={"agent": spec})
    run = await harness.run("churn")
    result = await harness.wait_kind(run["runId"], "tool.result", toolCallId="c1")
    freed_but_held = int(result["content"][0]["text"])
    await harness.finished(run["runId"])
    # Without a trim the freed 120 MB stay resident (the objects kept pin the heap's top).
    for _ in range(100):
        now = server_rss_kib(harness)
        if now < freed_but_held - 80_000:
            break
        await asyncio.sleep(0.1)
    assert now < freed_but_held - 80_000, (freed_but_held, now)


def initial_environ(pid: int) -> list[bytes]:
    """The environment the process's current program was started with (``execve``)."""
    return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")


@pytest.mark.skipif("PYTHONMALLOC" in os.environ, reason="the user chose an allocator")
async def test_the_server_keeps_the_interpreter_it_was_started_with(harness):
    """What bounds memory is the server's own doing (dropping a run's state, trimming the C
    heap when it ends), not a switch of allocator at start-up (style.md)."""
    await harness.start()
    environ = initial_environ(harness.client._server.pid)
    assert not [v for v in environ if v.startswith(b"PYTHONMALLOC=")]
