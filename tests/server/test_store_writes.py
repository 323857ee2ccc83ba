"""How the server store writes: small event batches on the loop, bursts on the database thread,
never waiting for another writer's lock or for a WAL checkpoint on the path of a delta."""

import asyncio
import itertools
import json
import sqlite3
import time

from lovia_server.host.store import CHECKPOINT_EVERY, DIRECT_ROWS


def _rows(run: str, first: int, count: int) -> list[tuple[str, int, str]]:
    return [(run, seq, json.dumps({"seq": seq})) for seq in range(first, first + count)]


async def test_a_small_batch_is_committed_on_the_loop_and_a_burst_through_the_thread(store):
    await store.append_events(_rows("r1", 1, 3))
    assert store.direct_batches == 1
    await store.append_events(_rows("r1", 4, DIRECT_ROWS + 1))  # a burst: the database thread
    assert store.direct_batches == 1
    await store.append_events(_rows("r1", 5 + DIRECT_ROWS, 1))
    assert store.direct_batches == 2
    stored = await store.events_after("r1", 0)
    assert [e["seq"] for e in stored] == list(range(1, 6 + DIRECT_ROWS))
    # Committed, not merely written: another connection sees every row.
    other = sqlite3.connect(store.path)
    try:
        (count,) = other.execute("SELECT COUNT(*) FROM server_run_events").fetchone()
    finally:
        other.close()
    assert count == 5 + DIRECT_ROWS


async def test_while_another_writer_holds_the_lock_the_batch_waits_without_blocking_the_loop(
    store,
):
    """A transcript store (another connection to the same file) is mid-transaction: the small
    batch cannot be committed on the loop, so it waits on the database thread while the loop
    keeps running, and is stored once the lock is free."""
    other = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
    other.execute("PRAGMA busy_timeout=5000")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO server_run_events (run_id, seq, body) VALUES ('x', 1, '{}')")
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.005)

    ticking = asyncio.create_task(ticker())
    try:
        appending = asyncio.create_task(store.append_events(_rows("r2", 1, 2)))
        await asyncio.sleep(0.3)
        assert not appending.done()  # waiting for the lock...
        gaps = [b - a for a, b in itertools.pairwise(ticks)]
        assert len(ticks) > 20 and max(gaps) < 0.1  # ...but not on the loop
        await asyncio.to_thread(other.execute, "COMMIT")
        await asyncio.wait_for(appending, 10)
    finally:
        ticking.cancel()
        other.close()
    assert store.direct_batches == 0
    assert [e["seq"] for e in await store.events_after("r2", 0)] == [1, 2]


async def test_the_wal_is_checkpointed_in_the_background_not_in_a_commit(store):
    """SQLite's automatic checkpoint is off on the store's connections; the store runs one in
    the background every CHECKPOINT_EVERY commits, so the WAL stays small."""
    async with store.db.execute("PRAGMA wal_autocheckpoint") as cursor:
        assert (await cursor.fetchone())[0] == 0
    wal = store.path.with_name(store.path.name + "-wal")
    largest = 0
    for seq in range(1, 6 * CHECKPOINT_EVERY + 1):
        await store.append_events(_rows("r3", seq, 1))
        if seq % 50 == 0:
            await asyncio.sleep(0)  # let a started checkpoint run
            largest = max(largest, wal.stat().st_size)
        if seq % CHECKPOINT_EVERY == 0:
            # The commit did not wait for it; give the checkpoint its own time (a cold first
            # connection on a busy machine is slower than 200 commits on the loop).
            before = store.checkpoints_run
            for _ in range(1000):
                if store.checkpoints_run > before:
                    break
                await asyncio.sleep(0.01)
    assert store.checkpoints_run >= 3
    # Without checkpoints 1,200 commits of two pages each would leave a WAL of ~10 MB.
    assert largest < 6 * 1024 * 1024
    assert await store.last_seq("r3") == 6 * CHECKPOINT_EVERY
