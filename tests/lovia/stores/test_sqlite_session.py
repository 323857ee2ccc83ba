"""SQLiteSession on real files: the Session contract, idempotence, concurrency, maintenance."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from lovia import InMemorySession, Segment, SQLiteSession
from lovia.parts import ImagePart, TextPart
from lovia.session import Session
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)

Rows = Callable[..., list[tuple[Any, ...]]]


def every_kind() -> list[TranscriptEntry]:
    return [
        InputEntry("system", "be brief"),
        InputEntry(
            "user", [TextPart("what is this?"), ImagePart(data="aGk=", mime_type="image/png")]
        ),
        ReasoningEntry("thinking…", id="r1", provider="scripted", metadata={"signature": "s"}),
        AssistantTextEntry("Übersicht 東京", id="m1"),
        ToolCallEntry("c1", "lookup", '{"q": "x"}'),
        ToolResultEntry("c1", "found", raw={"hits": [1, 2]}, is_error=False),
        ToolResultEntry("c2", "shot", parts=[ImagePart(url="https://x/y.png")], is_error=True),
    ]


async def test_segments_round_trip_every_entry_kind(sqlite_session: SQLiteSession) -> None:
    entries = every_kind()
    await sqlite_session.append("s1", entries, run_id="r1", meta={"context_state": {"a": [1]}})
    assert await sqlite_session.segments("s1") == [
        Segment("r1", entries, {"context_state": {"a": [1]}})
    ]
    assert await sqlite_session.load("s1") == entries
    assert await sqlite_session.segments("unknown") == []


async def test_non_ascii_is_stored_verbatim(sqlite_session: SQLiteSession, db_rows: Rows) -> None:
    await sqlite_session.append("s1", [AssistantTextEntry("héllo 東京")], run_id="r1")
    [(text,)] = db_rows("SELECT entries_json FROM session_runs")
    assert "héllo 東京" in text


async def test_reappending_a_run_id_is_a_no_op_first_write_wins(
    sqlite_session: SQLiteSession, db_rows: Rows
) -> None:
    first = [InputEntry("user", "one")]
    assert await sqlite_session.append("s1", first, run_id="r1") == "r1"
    assert await sqlite_session.append("s1", [InputEntry("user", "two")], run_id="r1") == "r1"
    assert await sqlite_session.load("s1") == first
    assert db_rows("SELECT COUNT(*) FROM session_runs") == [(1,)]


async def test_same_run_id_in_two_sessions_is_two_rows(sqlite_session: SQLiteSession) -> None:
    await sqlite_session.append("s1", [InputEntry("user", "a")], run_id="r1")
    await sqlite_session.append("s2", [InputEntry("user", "b")], run_id="r1")
    assert [s.run_id for s in await sqlite_session.segments("s1")] == ["r1"]
    assert [s.run_id for s in await sqlite_session.segments("s2")] == ["r1"]


async def test_missing_run_id_is_generated(sqlite_session: SQLiteSession) -> None:
    run_id = await sqlite_session.append("s1", [InputEntry("user", "a")])
    assert len(run_id) == 32 and int(run_id, 16) >= 0
    assert [s.run_id for s in await sqlite_session.segments("s1")] == [run_id]


async def test_segments_keep_insertion_order_and_clear_is_per_session(
    sqlite_session: SQLiteSession,
) -> None:
    for i in range(3):
        await sqlite_session.append("s1", [InputEntry("user", f"a{i}")], run_id=f"z{i}")
        await sqlite_session.append("s2", [InputEntry("user", f"b{i}")], run_id=f"y{i}")
    assert [s.run_id for s in await sqlite_session.segments("s1")] == ["z0", "z1", "z2"]
    await sqlite_session.clear("s1")
    assert await sqlite_session.segments("s1") == []
    assert len(await sqlite_session.segments("s2")) == 3


async def test_data_survives_reopening_the_file(db_path: Path) -> None:
    async with SQLiteSession(db_path) as store:
        await store.append("s1", [InputEntry("user", "kept")], run_id="r1", meta={"k": 1})
    async with SQLiteSession(db_path) as reopened:
        assert await reopened.segments("s1") == [
            Segment("r1", [InputEntry("user", "kept")], {"k": 1})
        ]


async def test_it_is_a_session(sqlite_session: SQLiteSession) -> None:
    assert isinstance(sqlite_session, Session)


async def test_concurrent_appends_from_many_runs_on_one_store(
    sqlite_session: SQLiteSession,
) -> None:
    async def run(i: int) -> str:
        return await sqlite_session.append("s1", [InputEntry("user", str(i))], run_id=f"r{i}")

    await asyncio.gather(*(run(i) for i in range(50)), *(run(i) for i in range(50)))
    segs = await sqlite_session.segments("s1")
    assert sorted(s.run_id for s in segs) == sorted(f"r{i}" for i in range(50))


async def test_concurrent_appends_from_several_connections_to_one_file(db_path: Path) -> None:
    stores = [SQLiteSession(db_path) for _ in range(4)]
    try:
        await asyncio.gather(
            *(
                store.append("s1", [InputEntry("user", f"{n}-{i}")], run_id=f"{n}-{i}")
                for n, store in enumerate(stores)
                for i in range(25)
            )
        )
        segs = await stores[0].segments("s1")
        assert len(segs) == 100
        assert len({s.run_id for s in segs}) == 100
    finally:
        for store in stores:
            await store.aclose()


async def test_wal_is_the_default_for_files(db_path: Path, db_rows: Rows) -> None:
    async with SQLiteSession(db_path) as store:
        await store.append("s1", [], run_id="r")
        assert store.wal is True
    assert db_rows("PRAGMA journal_mode") == [("wal",)]


async def test_wal_can_be_turned_off(db_path: Path, db_rows: Rows) -> None:
    async with SQLiteSession(db_path, wal=False) as store:
        await store.append("s1", [], run_id="r")
    assert db_rows("PRAGMA journal_mode") == [("delete",)]


async def test_memory_database_uses_one_shared_connection() -> None:
    store = SQLiteSession(":memory:", wal=True)
    assert store.wal is False
    await store.append("s1", [InputEntry("user", "a")], run_id="r1")
    await store.append("s1", [InputEntry("user", "b")], run_id="r2")
    assert [e.content for e in await store.load("s1")] == ["a", "b"]  # type: ignore[union-attr]
    await store.aclose()


async def test_aclose_is_idempotent_and_a_closed_store_reopens(db_path: Path) -> None:
    store = SQLiteSession(db_path)
    await store.append("s1", [InputEntry("user", "a")], run_id="r1")
    await store.aclose()
    await store.aclose()
    assert len(await store.load("s1")) == 1
    await store.aclose()


async def test_meta_must_be_json(sqlite_session: SQLiteSession) -> None:
    from lovia.exceptions import UserError

    with pytest.raises(UserError, match="JSON"):
        await sqlite_session.append("s1", [], run_id="r", meta={"x": object()})
    assert await sqlite_session.segments("s1") == []


def test_a_store_outlives_its_event_loop(db_path: Path) -> None:
    store = SQLiteSession(db_path)
    asyncio.run(store.append("s1", [InputEntry("user", "a")], run_id="r1"))
    asyncio.run(store.append("s1", [InputEntry("user", "b")], run_id="r2"))
    assert len(asyncio.run(store.load("s1"))) == 2
    asyncio.run(store.aclose())


def test_an_unclosed_store_does_not_hang_interpreter_exit(db_path: Path) -> None:
    code = (
        "import asyncio\n"
        "from lovia import SQLiteSession\n"
        "from lovia.transcript import InputEntry\n"
        f"STORE = SQLiteSession({str(db_path)!r})\n"
        "asyncio.run(STORE.append('s', [InputEntry('user', 'x')], run_id='r'))\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# ---------------------------------------------------------------- maintenance (parity)


def long_run(run_id: str, n: int = 1000) -> list[TranscriptEntry]:
    return [
        InputEntry("user", f"go {run_id}"),
        ToolCallEntry(f"c{run_id}", "fetch", "{}"),
        ToolResultEntry(f"c{run_id}", "x" * n, raw={"big": True}),
        AssistantTextEntry(f"done {run_id}"),
    ]


@pytest.fixture(params=["memory", "sqlite"])
async def any_session(request: pytest.FixtureRequest, db_path: Path) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield InMemorySession()
    else:
        async with SQLiteSession(db_path) as store:
            yield store


async def test_trim_tool_results_matches_the_in_memory_store(any_session: Any) -> None:
    for run_id in ("1", "2", "3"):
        await any_session.append("s1", long_run(run_id), run_id=run_id, meta={"m": run_id})
    assert await any_session.trim_tool_results("s1", keep_chars=100, keep_runs=1) == 2
    segs = await any_session.segments("s1")
    trimmed = [e for s in segs[:2] for e in s.entries if isinstance(e, ToolResultEntry)]
    for result in trimmed:
        assert result.output.startswith("x" * 100)
        assert f'recall_tool_result("{result.call_id}")' in result.output
        assert result.output.endswith("archived to a result store]")
        assert result.raw is None
    assert segs[2].entries == long_run("3")
    assert [s.meta for s in segs] == [{"m": "1"}, {"m": "2"}, {"m": "3"}]
    assert await any_session.trim_tool_results("s1", keep_chars=100, keep_runs=1) == 0


async def test_trimming_a_short_output_is_a_no_op(any_session: Any) -> None:
    await any_session.append("s1", long_run("1", n=450), run_id="1")
    await any_session.append("s1", long_run("2"), run_id="2")
    assert await any_session.trim_tool_results("s1", keep_chars=400) == 0
    assert (await any_session.segments("s1"))[0].entries == long_run("1", n=450)


@pytest.mark.parametrize(
    ("keep", "removed", "runs"),
    [(5, 3, ["1", "2"]), (4, 4, ["1"]), (0, 8, []), (8, 0, ["1", "2"]), (99, 0, ["1", "2"])],
)
async def test_rewind_matches_the_in_memory_store(
    any_session: Any, keep: int, removed: int, runs: list[str]
) -> None:
    await any_session.append("s1", long_run("1"), run_id="1", meta={"m": 1})
    await any_session.append("s1", long_run("2"), run_id="2", meta={"m": 2})
    assert await any_session.rewind("s1", keep_entries=keep) == removed
    segs = await any_session.segments("s1")
    assert [s.run_id for s in segs] == runs
    assert sum(len(s.entries) for s in segs) == 8 - removed


async def test_rewind_into_a_tool_pair_drops_the_dangling_call(any_session: Any) -> None:
    await any_session.append("s1", long_run("1"), run_id="1", meta={"m": 1})
    await any_session.append("s1", long_run("2"), run_id="2", meta={"m": 2})
    assert await any_session.rewind("s1", keep_entries=6) == 3
    segs = await any_session.segments("s1")
    assert segs[0] == Segment("1", long_run("1"), {"m": 1})
    assert segs[1] == Segment("2", [InputEntry("user", "go 2")], None)
    assert await any_session.rewind("s1", keep_entries=5) == 0
    assert await any_session.rewind("s1", keep_entries=4) == 1
    assert [s.run_id for s in await any_session.segments("s1")] == ["1"]


async def test_maintenance_rejects_negative_arguments(any_session: Any) -> None:
    with pytest.raises(ValueError, match="keep_chars must be >= 0"):
        await any_session.trim_tool_results("s1", keep_chars=-1)
    with pytest.raises(ValueError, match="keep_runs must be >= 0"):
        await any_session.trim_tool_results("s1", keep_runs=-1)
    with pytest.raises(ValueError, match="keep_entries must be >= 0"):
        await any_session.rewind("s1", keep_entries=-1)


async def test_trim_rewrites_only_the_rows_it_changes(
    sqlite_session: SQLiteSession, db_rows: Rows
) -> None:
    await sqlite_session.append("s1", long_run("1", n=10), run_id="1")
    await sqlite_session.append("s1", long_run("2"), run_id="2")
    await sqlite_session.append("s1", long_run("3"), run_id="3")
    before = db_rows("SELECT id, run_id, entries_json, created_at FROM session_runs ORDER BY id")
    assert await sqlite_session.trim_tool_results("s1", keep_chars=100) == 1
    after = db_rows("SELECT id, run_id, entries_json, created_at FROM session_runs ORDER BY id")
    assert [after[0], after[2]] == [before[0], before[2]]
    assert after[1][:2] == before[1][:2] and after[1][3] == before[1][3]
    assert after[1][2] != before[1][2]


async def test_a_failing_rewind_changes_nothing(
    sqlite_session: SQLiteSession, monkeypatch: pytest.MonkeyPatch, db_rows: Rows
) -> None:
    for run_id in ("1", "2", "3"):
        await sqlite_session.append("s1", long_run(run_id), run_id=run_id)
    before = db_rows("SELECT * FROM session_runs ORDER BY id")

    async def broken(*args: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(sqlite_session, "_rewrite", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        await sqlite_session.rewind("s1", keep_entries=6)
    assert db_rows("SELECT * FROM session_runs ORDER BY id") == before
    assert len(await sqlite_session.load("s1")) == 12
