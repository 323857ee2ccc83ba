"""SIGKILL the real server at seeded random moments across several runs; each time a new
process resumes. Nothing may be lost or doubled.

The kills land wherever the clock says: while the model streams, while a tool runs, while an
approval waits, while a checkpoint or the event log is written, during start-up recovery.
After every kill the test reads the checkpoint the dead process left behind; a tool call
whose result was stored there must never run again. Each finished run must equal an
uninterrupted run of the same agent, and its replayed events must have strictly increasing
``seq`` with no event repeated within one attempt.

``LOVIA_KILLS`` (default 50) and ``LOVIA_KILL_SEED`` change the number of kills and the seed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from pathlib import Path
from typing import Any

import pytest

from lovia.stores import SQLiteCheckpointer
from lovia.transcript import ToolResultEntry
from tests.server.harness import AGENT_HEADER, Harness

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

KILLS = int(os.environ.get("LOVIA_KILLS", "50"))
SEED = int(os.environ.get("LOVIA_KILL_SEED", "20261201"))
# After this many kills of one run, the run is let finish so that several runs get killed.
KILLS_PER_RUN = 7

AGENT = (
    AGENT_HEADER
    + '''
import dataclasses
from collections import deque
from lovia.transcript import ToolResultEntry

PROSE = "Thinking about the next step of the release, carefully and at length. " * 3


def say(turn, words):
    return dataclasses.replace(turn, content=words)


class Positional(ScriptedProvider):
    """Answers by position (tool results so far), streaming slowly, so a resumed run goes on."""

    def __init__(self, script):
        super().__init__(script, record=False)
        self.full = list(script)

    async def stream(self, entries, **kw):
        done = sum(isinstance(e, ToolResultEntry) for e in entries)
        self.script = deque(self.full[done:])
        async for delta in super().stream(entries, **kw):
            await asyncio.sleep(0.002)
            yield delta


def log(name, line):
    with open(ROOT / name, "a") as fh:
        fh.write(line + "\\n")
        fh.flush()
        os.fsync(fh.fileno())


@tool
async def step(n: int) -> str:
    "One step of work."
    log("steps.log", f"start {n}")
    await asyncio.sleep(0.2)
    log("steps.log", f"end {n}")
    return f"step {n} done"


@tool(needs_approval=True)
async def deploy(env: str) -> str:
    "Deploy."
    log("deploys.log", f"start {env}")
    return f"deployed {env}"


agent = Agent(
    name="crashy",
    model=Positional([
        say(call("step", {"n": 1}, call_id="s1"), PROSE),
        say(call("deploy", {"env": "prod"}, call_id="d1"), PROSE),
        say(batch(("step", {"n": 2}, "s2"), ("step", {"n": 3}, "s3")), PROSE),
        say(call("step", {"n": 4}, call_id="s4"), PROSE),
        text("All done: " + PROSE),
    ]),
    tools=[step, deploy],
)
'''
).replace("import asyncio\n", "import asyncio\nimport os\n", 1)

# Each tool result in the agent's script, by call id -> the line its tool logs when it starts.
STARTS = {"s1": "start 1", "s2": "start 2", "s3": "start 3", "s4": "start 4", "d1": "start prod"}


def _tool_log(root: Path) -> list[str]:
    lines: list[str] = []
    for name in ("steps.log", "deploys.log"):
        path = root / name
        if path.exists():
            lines += [f"{name}:{line}" for line in path.read_text().splitlines()]
    return lines


class Ledger:
    """What the dead processes left behind: for each kill, the stored results and log length."""

    def __init__(self, root: Path, state: Path) -> None:
        self.root = root
        self.state = state
        self.stored_at: list[tuple[set[str], dict[str, int]]] = []
        self.runs = 0

    def new_run(self) -> None:
        """Each run's tools log afresh (earlier runs' logs are kept aside)."""
        self.runs += 1
        for name in ("steps.log", "deploys.log"):
            path = self.root / name
            if path.exists():
                path.rename(self.root / f"{name}.{self.runs}")
        self.stored_at = []

    async def after_kill(self, run_id: str) -> None:
        store = SQLiteCheckpointer(self.state / "state.db")
        try:
            snapshot = await store.load(run_id)
        finally:
            await store.aclose()
        stored = set()
        if snapshot is not None:
            stored = {e.call_id for e in snapshot.entries if isinstance(e, ToolResultEntry)}
        counts = {line: self.count(line) for line in STARTS.values()}
        self.stored_at.append((stored, counts))

    def count(self, start_line: str) -> int:
        return sum(1 for line in _tool_log(self.root) if line.endswith(":" + start_line))

    def check_no_stored_call_ran_again(self) -> None:
        for stored, counts in self.stored_at:
            for call_id in stored:
                line = STARTS[call_id]
                assert self.count(line) == counts[line], (
                    f"{call_id} ran again after its result was stored"
                )


def _check_events(events: list[dict[str, Any]]) -> None:
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1)), seqs
    attempt: set[tuple[str, str]] = set()
    for event in events:
        if event["kind"] == "run.started":
            attempt = set()
        key_field = {
            "tool.call": "toolCallId",
            "tool.result": "toolCallId",
            "message.completed": "messageId",
            "approval.requested": "approvalId",
            "approval.resolved": "approvalId",
        }.get(event["kind"])
        if key_field is None:
            continue
        key = (event["kind"], str(event[key_field]))
        assert key not in attempt, f"{key} twice in one attempt"
        attempt.add(key)


def _shape(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [
        (e["role"], e.get("content"), e.get("toolCallId"), str(e.get("toolCalls"))) for e in entries
    ]


async def _check_finished(
    h: Harness,
    current: dict[str, Any],
    replay: dict[str, Any],
    reference: list[tuple[Any, ...]],
    ledger: Ledger,
) -> None:
    """A finished run: clean event log, the uninterrupted transcript, no stored call rerun."""
    assert replay["events"][-1]["kind"] == "run.finished"
    assert replay["events"][-1]["status"] == "completed"
    _check_events(replay["events"])
    view = await h.request("lovia/session", {"sessionId": current["sessionId"]})
    assert _shape(view["entries"]) == reference
    ledger.check_no_stored_call_ran_again()


async def _approver(h: Harness, run_id: str, rng: random.Random) -> None:
    """Approve each request after a short random wait (kills may land while it waits)."""
    handled: set[str] = set()
    while True:
        event = await h.wait_for(
            lambda e: (
                e["runId"] == run_id
                and e["kind"] == "approval.requested"
                and e["approvalId"] not in handled
            ),
            within=3600,
        )
        handled.add(event["approvalId"])
        await asyncio.sleep(rng.uniform(0, 0.4))
        with contextlib.suppress(Exception):
            await h.request(
                "lovia/approve",
                {"runId": run_id, "approvalId": event["approvalId"], "decision": "allow_once"},
            )


async def _reference(tmp_path: Path) -> list[tuple[Any, ...]]:
    """The transcript of the same agent, never killed."""
    root = (tmp_path / "reference").resolve()
    root.mkdir()
    h = Harness(root, tmp_path / "reference-state")
    spec = h.write_agent(AGENT)
    await h.start(settings={"agent": spec})
    try:
        run = await h.run("ship it")
        done = await h.approve_all(run["runId"])
        assert done["status"] == "completed", done
        view = await h.request("lovia/session", {"sessionId": run["sessionId"]})
        return _shape(view["entries"])
    finally:
        await h.stop()


async def test_random_sigkills_never_lose_or_double_anything(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    reference = await _reference(tmp_path)
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    state = tmp_path / "state"
    ledger = Ledger(root, state)
    spec = Harness(root, state).write_agent(AGENT)
    kills = 0
    completed_runs = 0
    current: dict[str, Any] | None = None  # {"runId", "sessionId", "kills"}
    while kills < KILLS or current is not None:
        h = Harness(root, state)
        await h.start(settings={"agent": spec})
        approver: asyncio.Task[None] | None = None
        try:
            base = 0
            if current is None:
                ledger.new_run()
                run = await h.run("ship it")
                current = {"runId": run["runId"], "sessionId": run["sessionId"], "kills": 0}
            else:
                # events of earlier attempts (and the recovery's run.finished) come before
                replay = await h.request("lovia/replay", {"runId": current["runId"]})
                base = replay["lastSeq"]
                if replay["status"] == "completed":
                    # killed after the run's end reached the session: recovery finished it
                    await _check_finished(h, current, replay, reference, ledger)
                    completed_runs += 1
                    current = None
                    continue
                assert replay["status"] == "interrupted", replay["status"]
                try:
                    resumed = await h.request("lovia/resume", {"runId": current["runId"]})
                except Exception as exc:
                    kinds = [(e["seq"], e["kind"], e.get("status")) for e in replay["events"]]
                    pytest.fail(f"resume after kill {kills} failed: {exc}; events {kinds}")
                assert resumed["status"] == "running"
            run_id = current["runId"]
            approver = asyncio.create_task(_approver(h, run_id, rng))
            finished = asyncio.create_task(
                h.wait_for(
                    lambda e, rid=run_id, after=base: (
                        e["runId"] == rid and e["kind"] == "run.finished" and e["seq"] > after
                    ),
                    within=3600,
                )
            )
            let_finish = kills >= KILLS or current["kills"] >= KILLS_PER_RUN
            delay = None if let_finish else rng.uniform(0.0, 2.5)
            done, _ = await asyncio.wait({finished}, timeout=delay)
            if finished in done:
                end = finished.result()
                assert end["status"] == "completed", end
                replay = await h.request("lovia/replay", {"runId": run_id})
                await _check_finished(h, current, replay, reference, ledger)
                completed_runs += 1
                current = None
                continue
            finished.cancel()
            await h.kill()
            kills += 1
            current["kills"] += 1
            await ledger.after_kill(run_id)
        finally:
            if approver is not None:
                approver.cancel()
                with contextlib.suppress(BaseException):
                    await approver
            if h.client is not None:
                await h.stop()
    assert completed_runs >= KILLS // KILLS_PER_RUN
