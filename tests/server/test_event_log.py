"""Event logs: sequencing, coalescing, persist-then-send, and back-pressure on a slow client."""

import asyncio

import pytest_asyncio

from lovia_server.event_log import EventLog, Publisher
from lovia_server.store import ServerStore


@pytest_asyncio.fixture
async def store(tmp_path):
    s = ServerStore(tmp_path / "state.db")
    await s.open()
    yield s
    await s.close()


async def test_coalesced_deltas_then_ordered_events(store):
    sent = []
    pub = Publisher(store, sent.append)
    log = EventLog("r1", "s1", pub, interval=0.02)
    log.emit("run.started", {"prompt": "p"})
    for ch in "hello":
        log.delta("message.delta", "m1", ch)
    log.delta("reasoning.delta", "m1", "think")
    await asyncio.sleep(0.05)
    log.delta("message.delta", "m1", " world")
    log.emit("message.completed", {"messageId": "m1", "text": "hello world"})
    await log.close()
    kinds = [(e["seq"], e["kind"], e.get("text")) for e in sent]
    assert kinds == [
        (1, "run.started", None),
        (2, "message.delta", "hello"),
        (3, "reasoning.delta", "think"),
        (4, "message.delta", " world"),
        (5, "message.completed", "hello world"),
    ]
    stored = await store.events_after("r1", 0)
    assert stored == sent and await store.last_seq("r1") == 5


async def test_events_are_stored_before_they_are_sent(store):
    seen_in_store = []

    def send(event):
        seen_in_store.append(event["seq"] in {e["seq"] for e in stored_now})

    stored_now = []
    pub = Publisher(store, send)
    original = store.append_events

    async def recording(rows):
        await original(rows)
        stored_now.extend({"seq": r[1]} for r in rows)

    store.append_events = recording
    log = EventLog("r2", "s", pub, interval=0)
    for i in range(50):
        log.emit("tool.call", {"i": i})
    await log.close()
    assert len(seen_in_store) == 50 and all(seen_in_store)


async def test_slow_client_skips_deltas_but_never_other_events(store):
    sent = []
    backlog = {"bytes": 10**9}
    pub = Publisher(store, sent.append, backlog=lambda: backlog["bytes"], backlog_limit=1000)
    log = EventLog("r3", "s", pub, interval=0)
    log.emit("run.started", {})
    log.delta("message.delta", "m", "lost on the wire")
    log.delta("tool.update", "c1", "output", "stdout")
    log.emit("run.finished", {"status": "completed"})
    await log.close()
    assert [e["kind"] for e in sent] == ["run.started", "run.finished"]
    assert [e["seq"] for e in sent] == [1, 4]  # the gap tells the client to replay
    assert pub.skipped == 2
    replay = await store.events_after("r3", 1)
    assert [e["kind"] for e in replay] == ["message.delta", "tool.update", "run.finished"]
    assert replay[1]["output"] == {"text": "output", "stream": "stdout"}


async def test_seq_continues_from_the_stored_log(store):
    pub = Publisher(store, lambda e: None)
    first = EventLog("r4", "s", pub, interval=0)
    first.emit("run.started", {})
    first.emit("run.finished", {})
    await first.close()
    again = EventLog("r4", "s", pub, last_seq=await store.last_seq("r4"), interval=0)
    event = again.emit("run.started", {"resumed": True})
    await again.close()
    assert event["seq"] == 3


def test_a_legs_checkpoint_key_leads_back_to_its_run() -> None:
    from lovia_server.store import checkpoint_id, run_of_checkpoint

    for leg in (0, 1, 7):
        assert run_of_checkpoint(checkpoint_id("r_abc123", leg)) == "r_abc123"
