"""SQLiteCheckpointer on real files: one row per non-empty append, a mutable head, atomicity."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lovia import Checkpointer, RunHead, SQLiteCheckpointer, Usage
from lovia.transcript import AssistantTextEntry, InputEntry, ToolCallEntry, ToolResultEntry

Rows = Callable[..., list[tuple[Any, ...]]]


def head(turns: int, **kw: Any) -> RunHead:
    return RunHead(agent_name="writer", usage=Usage(turns, 2 * turns), turns=turns, **kw)


async def test_two_non_empty_appends_make_two_turn_rows_and_one_head(
    sqlite_checkpointer: SQLiteCheckpointer, db_rows: Rows
) -> None:
    await sqlite_checkpointer.append("r1", [InputEntry("user", "hi")], head(0))
    await sqlite_checkpointer.append("r1", [AssistantTextEntry("hello")], head(1))
    turns = db_rows("SELECT COUNT(*) FROM snapshot_turns")[0][0]
    heads = db_rows("SELECT COUNT(*) FROM snapshot_heads")[0][0]
    assert (turns, heads) == (2, 1)
    await sqlite_checkpointer.append("r1", [], head(2, status="completed", output="hello"))
    assert db_rows("SELECT COUNT(*) FROM snapshot_turns") == [(2,)]
    assert db_rows("SELECT run_id, seq FROM snapshot_turns ORDER BY seq") == [("r1", 0), ("r1", 1)]


async def test_load_concatenates_batches_and_returns_the_latest_head(
    sqlite_checkpointer: SQLiteCheckpointer,
) -> None:
    batches = [
        [InputEntry("user", "hi")],
        [ToolCallEntry("c1", "f", "{}"), ToolCallEntry("c2", "g", "[1]")],
        [ToolResultEntry("c1", "one", raw={"v": 1})],
    ]
    for i, batch in enumerate(batches):
        await sqlite_checkpointer.append("r1", batch, head(i))
    state = {"cleared": ["c0"], "summary": {"text": "so far", "covers": 3}}
    await sqlite_checkpointer.append(
        "r1",
        [],
        head(
            7,
            status="interrupted",
            error={"type": "RunCancelled", "message": "stop"},
            last_input_tokens=42,
            context_state=state,
        ),
    )
    snap = await sqlite_checkpointer.load("r1")
    assert snap is not None
    assert snap.entries == [e for batch in batches for e in batch]
    assert (snap.run_id, snap.agent_name, snap.turns, snap.status) == (
        "r1",
        "writer",
        7,
        "interrupted",
    )
    assert snap.usage == Usage(7, 14)
    assert snap.error == {"type": "RunCancelled", "message": "stop"}
    assert snap.last_input_tokens == 42
    assert snap.context_state == state


async def test_runs_are_independent_and_delete_is_idempotent(
    sqlite_checkpointer: SQLiteCheckpointer, db_rows: Rows
) -> None:
    await sqlite_checkpointer.append("a", [InputEntry("user", "a")], head(1))
    await sqlite_checkpointer.append("b", [InputEntry("user", "b")], head(1))
    await sqlite_checkpointer.delete("a")
    await sqlite_checkpointer.delete("a")
    await sqlite_checkpointer.delete("never")
    assert await sqlite_checkpointer.load("a") is None
    snap = await sqlite_checkpointer.load("b")
    assert snap is not None and snap.entries == [InputEntry("user", "b")]
    assert db_rows("SELECT DISTINCT run_id FROM snapshot_turns") == [("b",)]


async def test_unknown_run_loads_as_none(sqlite_checkpointer: SQLiteCheckpointer) -> None:
    assert await sqlite_checkpointer.load("nope") is None


async def test_it_is_a_checkpointer(sqlite_checkpointer: SQLiteCheckpointer) -> None:
    assert isinstance(sqlite_checkpointer, Checkpointer)


async def test_turn_rows_are_never_rewritten(
    sqlite_checkpointer: SQLiteCheckpointer, db_rows: Rows
) -> None:
    await sqlite_checkpointer.append("r1", [InputEntry("user", "a")], head(0))
    first = db_rows("SELECT rowid, * FROM snapshot_turns")
    for i in range(5):
        await sqlite_checkpointer.append("r1", [AssistantTextEntry(str(i))], head(i + 1))
    assert db_rows("SELECT rowid, * FROM snapshot_turns WHERE seq = 0") == first


async def test_a_failed_append_is_rolled_back_so_a_retry_stores_the_batch_once(
    sqlite_checkpointer: SQLiteCheckpointer, db_path: Path
) -> None:
    await sqlite_checkpointer.append("r1", [InputEntry("user", "a")], head(0))
    with sqlite3.connect(db_path) as conn:  # make the head write fail after the turn row
        conn.execute(
            "CREATE TRIGGER boom BEFORE UPDATE ON snapshot_heads "
            "WHEN NEW.head_json LIKE '%\"turns\": 1,%' BEGIN SELECT RAISE(ABORT, 'boom'); END"
        )
    conn.close()
    with pytest.raises(sqlite3.IntegrityError, match="boom"):
        await sqlite_checkpointer.append("r1", [AssistantTextEntry("b")], head(1))
    snap = await sqlite_checkpointer.load("r1")
    assert snap is not None and snap.entries == [InputEntry("user", "a")] and snap.turns == 0
    await sqlite_checkpointer.append("r1", [AssistantTextEntry("b")], head(2))
    snap = await sqlite_checkpointer.load("r1")
    assert snap is not None
    assert snap.entries == [InputEntry("user", "a"), AssistantTextEntry("b")]


async def test_a_cancelled_append_lands_whole_before_the_cancellation(
    sqlite_checkpointer: SQLiteCheckpointer,
) -> None:
    await sqlite_checkpointer.append("r1", [InputEntry("user", "a")], head(0))
    task = asyncio.create_task(sqlite_checkpointer.append("r1", [AssistantTextEntry("b")], head(1)))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    snap = await sqlite_checkpointer.load("r1")
    assert snap is not None
    assert snap.entries == [InputEntry("user", "a"), AssistantTextEntry("b")]
    assert snap.turns == 1


async def test_concurrent_runs_on_one_file(db_path: Path) -> None:
    stores = [SQLiteCheckpointer(db_path) for _ in range(3)]

    async def run(store: SQLiteCheckpointer, run_id: str) -> None:
        for i in range(20):
            await store.append(run_id, [AssistantTextEntry(f"{run_id}-{i}")], head(i))

    try:
        await asyncio.gather(*(run(s, f"r{n}{k}") for n, s in enumerate(stores) for k in range(3)))
        for n in range(3):
            for k in range(3):
                snap = await stores[0].load(f"r{n}{k}")
                assert snap is not None
                assert [e.content for e in snap.entries] == [  # type: ignore[union-attr]
                    f"r{n}{k}-{i}" for i in range(20)
                ]
    finally:
        for store in stores:
            await store.aclose()
