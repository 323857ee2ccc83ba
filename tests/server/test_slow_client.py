"""A slow client, then one that stops reading: runs go on, answers come, nothing is lost.

The real server process and real pipes: ``SlowClient`` reads the server's stdout with plain
``os.read`` at 20 KB/s, then not at all, then at full speed. A small write queue
(``LOVIA_WRITE_QUEUE_MB``) makes the server refuse droppable events early.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import textwrap
from pathlib import Path

import pytest

from tests.support.slow_client import SlowClient

AGENT = textwrap.dedent(
    """
    import asyncio
    from lovia import Agent
    from lovia.messages import Usage
    from lovia.transcript import FinishDelta, TextDelta, UsageDelta

    class Fast:
        name = "fast"
        model = "fast"
        supports_json_schema = False

        async def stream(self, entries, **kw):
            for i in range(4000):
                if i % 20 == 0:
                    await asyncio.sleep(0)
                yield TextDelta("y" * 59 + " ")
            yield UsageDelta(Usage(1, 4000))
            yield FinishDelta("stop")

    fast = Agent(name="fast", model=Fast())
    """
)

RUNS = 4
STEADY = AGENT.replace("await asyncio.sleep(0)", "await asyncio.sleep(0.05)")
"""The same stream spread over 10 s: the runs are still streaming while the client is behind."""


def _finished_in_store(db: Path, run_ids: set[str]) -> int:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = con.execute(
            'SELECT run_id FROM server_run_events WHERE body LIKE \'%"kind":"run.finished"%\''
        ).fetchall()
    finally:
        con.close()
    return len({r[0] for r in rows} & run_ids)


def _stored(db: Path, run_id: str) -> int:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return int(
            con.execute(
                "SELECT COUNT(*) FROM server_run_events WHERE run_id = ?", (run_id,)
            ).fetchone()[0]
        )
    finally:
        con.close()


@pytest.mark.timeout(600)
async def test_slow_then_stopped_client_never_blocks_runs_and_replay_is_complete(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "agent.py").write_text(AGENT)
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(LOVIA_CONFIG_TIMEOUT="10", LOVIA_WRITE_QUEUE_MB="0.25", LOVIA_LOG_LEVEL="INFO")
    client = SlowClient(
        settings={"agent": "agent.py:fast"}, env=env, stderr_path=tmp_path / "server.log"
    )
    try:
        await client.initialize(
            root, {"client": "test", "approvals": "events", "stateDir": str(state)}
        )
        await client.request("lovia/status", {})
        finished: set[str] = set()
        all_finished = asyncio.Event()

        def on_event(event: dict) -> None:
            if event["kind"] == "run.finished":
                finished.add(event["runId"])
                if len(finished) >= RUNS:
                    all_finished.set()

        client.on_event(on_event)
        client.rate = 20_000
        answers = await asyncio.gather(
            *(
                client.request("lovia/run", {"prompt": f"go {i}", "agent": "agent.py:fast"})
                for i in range(RUNS)
            )
        )
        run_ids = {a["runId"] for a in answers}
        # The client is slow: lovia/status is still answered.
        status = await client.request("lovia/status", {}, within=120)
        assert "liveRuns" in status
        # Now it reads nothing at all: every run still runs to its end.
        client.pause()
        db = state / "state.db"
        async with asyncio.timeout(300):
            while _finished_in_store(db, run_ids) < RUNS:  # noqa: ASYNC110 - another process
                await asyncio.sleep(0.1)
        # It catches up at full speed: run.finished is never dropped, so each one arrives.
        client.rate = None
        client.resume()
        await asyncio.wait_for(all_finished.wait(), 300)
        assert run_ids <= finished
        not_sent = 0
        for run_id in sorted(run_ids):
            replay = await client.request("lovia/replay", {"runId": run_id, "afterSeq": 0})
            seqs = [e["seq"] for e in replay["events"]]
            stored = _stored(db, run_id)
            assert seqs == list(range(1, stored + 1)), run_id
            assert replay["events"][-1]["kind"] == "run.finished"
            assert replay["status"] == "completed"
            live = [e["seq"] for e in client.events if e["runId"] == run_id]
            assert live == sorted(set(live))  # in order, never twice
            not_sent += stored - len(live)
        # 4 x 240 KB of text against a 0.25 MB queue and a stopped client: some were not sent,
        # and the client learns it from the gaps.
        assert not_sent > 0
        assert "writer.dropping" in (tmp_path / "server.log").read_text()
        # lovia/status says so too: what was not sent live, and that nothing waits any more.
        delivery = (await client.request("lovia/status", {}))["delivery"]
        assert delivery["droppedEvents"] + delivery["skippedDeltas"] >= not_sent > 0
        assert delivery["droppedBytes"] > 0 and delivery["limitBytes"] > 0
    finally:
        await client.close()


@pytest.mark.timeout(600)
async def test_an_answer_to_a_slow_client_overtakes_the_events_queued_for_it(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "agent.py").write_text(STEADY)
    state = tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(LOVIA_CONFIG_TIMEOUT="10", LOVIA_LOG_LEVEL="INFO")
    client = SlowClient(
        settings={"agent": "agent.py:fast"}, env=env, stderr_path=tmp_path / "server.log"
    )
    rate = 20_000
    try:
        await client.initialize(
            root, {"client": "test", "approvals": "events", "stateDir": str(state)}
        )
        await client.request("lovia/status", {})
        client.rate = rate
        answers = await asyncio.gather(
            *(
                client.request("lovia/run", {"prompt": f"go {i}", "agent": "agent.py:fast"})
                for i in range(RUNS)
            )
        )
        async with asyncio.timeout(120):
            while len(client.events) < 20:  # noqa: ASYNC110 - the reader thread appends
                await asyncio.sleep(0.05)
        await asyncio.sleep(3)  # the runs stream faster than the client reads: a queue builds
        loop = asyncio.get_running_loop()
        sent = loop.time()
        status = await client.request("lovia/status", {}, within=120)
        waited = loop.time() - sent
        # What was queued when it was answered would take the client far longer to read: the
        # answer went ahead of it and waited only for the pipe (64 KB, about 3 s at 20 KB/s).
        queued = status["delivery"]["queuedBytes"]
        assert queued / rate > 2 * waited, (queued, waited)
        assert waited < 8, f"lovia/status waited {waited:.1f} s"
        client.rate = None
        finished = {e["runId"] for e in client.events if e["kind"] == "run.finished"}
        async with asyncio.timeout(300):
            while len(finished) < RUNS:
                await asyncio.sleep(0.05)
                finished = {e["runId"] for e in client.events if e["kind"] == "run.finished"}
        for answer in answers:
            live = [e["seq"] for e in client.events if e["runId"] == answer["runId"]]
            assert live == sorted(set(live))  # in order on the wire, never twice
    finally:
        await client.close()
