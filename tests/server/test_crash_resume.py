"""SIGKILL the server mid-run; a new process on the same state resumes without loss or doubling."""

import asyncio
import contextlib

import pytest

from tests.server.harness import AGENT_HEADER, Harness

# The provider answers by position (number of tool results so far), so a re-imported agent
# module continues the conversation where the transcript stands.
POSITIONAL = (
    AGENT_HEADER
    + """
from collections import deque
from lovia.transcript import ToolResultEntry


class Positional(ScriptedProvider):
    def __init__(self, script):
        super().__init__(script, record=False)
        self.full = list(script)

    async def stream(self, entries, **kw):
        done = sum(isinstance(e, ToolResultEntry) for e in entries)
        self.script = deque(self.full[done:])
        async for delta in super().stream(entries, **kw):
            yield delta


@tool(needs_approval=True)
async def deploy(env: str) -> str:
    "Deploy."
    with open(ROOT / "deploys.log", "a") as fh:
        fh.write(env + "\\n")
    return f"deployed {env}"


@tool
async def build(step: int) -> str:
    "Build; waits for a release file."
    with open(ROOT / "builds.log", "a") as fh:
        fh.write(f"start {step}\\n")
    await wait_for_file(f"release-{step}")
    return f"built {step}"


agent = Agent(
    name="crashy",
    model=Positional([
        call("build", {"step": 1}, call_id="b1"),
        call("deploy", {"env": "prod"}, call_id="d1"),
        text("shipped"),
    ]),
    tools=[build, deploy],
)
"""
)


def _assert_transcript(entries):
    roles = [m["role"] for m in entries]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"], roles
    tool_ids = [m["toolCallId"] for m in entries if m["role"] == "tool"]
    assert tool_ids == ["b1", "d1"]
    assert entries[-1]["content"] == "shipped"


async def test_sigkill_while_tool_runs_and_while_waiting_for_approval(tmp_path):
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    state = tmp_path / "state"
    first = Harness(root, state)
    spec = first.write_agent(POSITIONAL)
    await first.start(settings={"agent": spec})
    run = await first.run("build and deploy")
    rid, sid = run["runId"], run["sessionId"]
    await first.wait_kind(rid, "tool.call", toolCallId="b1")
    for _ in range(200):
        if (root / "builds.log").exists():
            break
        await asyncio.sleep(0.02)
    await first.kill()

    second = Harness(root, state)
    try:
        await second.start(settings={"agent": spec})
        listing = await second.request("lovia/sessions", {})
        (item,) = listing["sessions"]
        assert item["sessionId"] == sid and item["resumable"] is True
        assert item["lastRunStatus"] == "interrupted"
        replay = await second.request("lovia/replay", {"runId": rid})
        tail = replay["events"][-2:]
        assert [e["kind"] for e in tail] == ["tool.result", "run.finished"]
        assert tail[0]["status"] == "cancelled" and tail[1]["status"] == "interrupted"
        assert tail[1]["resumable"] is True
        last_seq = replay["lastSeq"]
        resumed = await second.request("lovia/resume", {"runId": rid})
        assert resumed == {"sessionId": sid, "runId": rid, "status": "running"}
        started = await second.wait_kind(rid, "run.started")
        assert started["resumed"] is True and started["seq"] == last_seq + 1
        (root / "release-1").write_text("go")
        await second.wait_kind(rid, "approval.requested", toolCallId="d1")
        await second.kill()
    finally:
        if second.client is not None:
            await second.stop()

    third = Harness(root, state)
    try:
        await third.start(settings={"agent": spec})
        resumed = await third.request("lovia/resume", {"runId": rid})
        assert resumed["status"] == "running"
        restarted = await third.wait_kind(rid, "run.started")
        request = await third.wait_kind(rid, "approval.requested", toolCallId="d1")
        assert request["seq"] > restarted["seq"]
        await third.request(
            "lovia/approve",
            {"runId": rid, "approvalId": request["approvalId"], "decision": "allow_once"},
        )
        done = await third.wait_for(
            lambda e: (
                e["runId"] == rid and e["kind"] == "run.finished" and e["seq"] > request["seq"]
            )
        )
        assert done["status"] == "completed" and done["output"] == "shipped"
        full = await third.request("lovia/replay", {"runId": rid})
        seqs = [e["seq"] for e in full["events"]]
        assert seqs == list(range(1, len(seqs) + 1))
        assert [e["kind"] for e in full["events"]].count("run.finished") == 3
        view = await third.request("lovia/session", {"sessionId": sid})
        _assert_transcript(view["entries"])
        assert (root / "deploys.log").read_text() == "prod\n"
        builds = (root / "builds.log").read_text().splitlines()
        assert builds == ["start 1", "start 1"]  # the interrupted call ran again (at least once)
        listing = await third.request("lovia/sessions", {})
        assert listing["sessions"][0]["resumable"] is False
        with pytest.raises(Exception) as info:
            await third.request("lovia/resume", {"runId": rid})
        assert info.value.code == -32014
    finally:
        await third.stop()


async def test_a_new_prompt_supersedes_an_interrupted_run(tmp_path):
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    state = tmp_path / "state"
    first = Harness(root, state)
    spec = first.write_agent(POSITIONAL)
    await first.start(settings={"agent": spec})
    run = await first.run("build and deploy")
    rid, sid = run["runId"], run["sessionId"]
    await first.wait_kind(rid, "tool.call", toolCallId="b1")
    (root / "release-1").write_text("go")
    await first.wait_kind(rid, "approval.requested", toolCallId="d1")
    await first.kill()

    second = Harness(root, state)
    try:
        await second.start(settings={"agent": spec})
        follow = await second.run("never mind, just build", sessionId=sid)
        await second.approve_all(follow["runId"])
        listing = await second.request("lovia/sessions", {})
        assert listing["sessions"][0]["resumable"] is False
        with pytest.raises(Exception) as info:
            await second.request("lovia/resume", {"runId": rid})
        assert info.value.code == -32014
        view = await second.request("lovia/session", {"sessionId": sid})
        roles = [m["role"] for m in view["entries"]]
        # the interrupted run's completed turn (build + result) comes first, then the new run
        assert roles[:3] == ["user", "assistant", "tool"]
        assert view["entries"][3] == {"role": "user", "content": "never mind, just build"}
    finally:
        await second.stop()


# The server process dies at an exact point of a run's end: the agent module (imported into the
# server) wraps the session store's append and SIGKILLs its own process before or after it.
DIES_AT_THE_END = (
    AGENT_HEADER
    + """
import os
import signal

from lovia.stores import SQLiteSession

_append = SQLiteSession.append


async def _append_then_maybe_die(self, session_id, entries, **kw):
    when = (ROOT / "die").read_text().strip() if (ROOT / "die").exists() else ""
    if when == "before-append":
        os.kill(os.getpid(), signal.SIGKILL)
    result = await _append(self, session_id, entries, **kw)
    if when == "after-append":
        os.kill(os.getpid(), signal.SIGKILL)
    return result


SQLiteSession.append = _append_then_maybe_die

agent = Agent(
    name="ender",
    model=ScriptedProvider([call("note", {"text": "x"}, call_id="n1"), text("all done")]),
    tools=[],
)


@tool
async def note(text: str) -> str:
    "Take a note."
    with open(ROOT / "notes.log", "a") as fh:
        fh.write(text + "\\n")
    return "noted"


agent = agent.clone(tools=[note])
"""
)


@pytest.mark.parametrize("when", ["before-append", "after-append"])
async def test_a_kill_at_the_end_of_a_run_neither_loses_it_nor_leaves_it_stuck(tmp_path, when):
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    state = tmp_path / "state"
    first = Harness(root, state)
    spec = first.write_agent(DIES_AT_THE_END)
    (root / "die").write_text(when)
    await first.start(settings={"agent": spec})
    run = await first.run("note it")
    rid, sid = run["runId"], run["sessionId"]
    proc = first.client._server
    await asyncio.wait_for(proc.wait(), 60)  # the agent's session append killed the server
    with contextlib.suppress(Exception):
        await asyncio.wait_for(first.client.stop(), 5)
    first.client = None
    (root / "die").unlink()

    second = Harness(root, state)
    try:
        await second.start(settings={"agent": spec})
        replay = await second.request("lovia/replay", {"runId": rid})
        end = replay["events"][-1]
        assert end["kind"] == "run.finished"
        if when == "after-append":
            # the run had finished: recovery closes it as completed, with nothing to resume
            assert end["status"] == "completed" and end["resumable"] is False
            assert replay["status"] == "completed"
        else:
            # its end never reached the conversation: resuming appends it, nothing runs again
            assert end["status"] == "interrupted" and end["resumable"] is True
            await second.request("lovia/resume", {"runId": rid})
            done = await second.wait_for(
                lambda e: (
                    e["runId"] == rid and e["kind"] == "run.finished" and e["seq"] > end["seq"]
                )
            )
            assert done["status"] == "completed" and done["output"] == "all done"
        view = await second.request("lovia/session", {"sessionId": sid})
        assert [m["role"] for m in view["entries"]] == ["user", "assistant", "tool", "assistant"]
        assert view["entries"][-1]["content"] == "all done"
        assert (root / "notes.log").read_text() == "x\n"
        listing = await second.request("lovia/sessions", {})
        assert listing["sessions"][0]["resumable"] is False
        assert listing["sessions"][0]["lastRunStatus"] == "completed"
    finally:
        await second.stop()
