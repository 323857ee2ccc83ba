"""Schema versions, shared files and bad input: every refusal is a UserError and deletes nothing."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from lovia import RunHead, SQLiteCheckpointer, SQLiteSession, Usage, UserError
from lovia.stores._sqlite import SCHEMA_TABLE, Schema
from lovia.stores.session import SESSION_SCHEMA
from lovia.transcript import InputEntry


def query(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return list(conn.execute(sql))


def execute(path: Path, *statements: str) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        for statement in statements:
            conn.execute(statement)
        conn.commit()


def read(path: Path) -> bytes:
    return path.read_bytes()


def write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def tables(path: Path) -> list[str]:
    return [
        r[0] for r in query(path, "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")
    ]


async def test_both_stores_share_one_file_with_their_own_versions(db_path: Path) -> None:
    async with SQLiteSession(db_path) as session, SQLiteCheckpointer(db_path) as checkpointer:
        await session.append("s1", [InputEntry("user", "a")], run_id="r1")
        await checkpointer.append("r2", [InputEntry("user", "b")], RunHead("a", Usage(), 1))
        assert len(await session.load("s1")) == 1
        assert (await checkpointer.load("r2")) is not None
    assert sorted(query(db_path, f"SELECT component, version FROM {SCHEMA_TABLE}")) == [
        ("checkpoint", 1),
        ("session", 1),
    ]


async def test_unrelated_tables_in_the_file_are_left_alone(db_path: Path) -> None:
    execute(
        db_path,
        "CREATE TABLE threads (id TEXT PRIMARY KEY, title TEXT)",
        "INSERT INTO threads VALUES ('t1', 'hello')",
    )
    async with SQLiteSession(db_path) as session:
        await session.append("s1", [InputEntry("user", "a")], run_id="r1")
    assert query(db_path, "SELECT * FROM threads") == [("t1", "hello")]


@pytest.mark.parametrize("garbage", [b"this is not a database at all" * 100, os.urandom(8192)])
async def test_a_corrupt_file_is_refused_and_left_untouched(db_path: Path, garbage: bytes) -> None:
    write(db_path, garbage)
    store = SQLiteSession(db_path)
    with pytest.raises(UserError) as info:
        await store.segments("s1")
    assert "corrupt or not an SQLite database" in str(info.value)
    assert info.value.hint and "untouched" in info.value.hint
    assert read(db_path) == garbage
    await store.aclose()


async def test_a_damaged_database_page_is_refused(db_path: Path) -> None:
    async with SQLiteSession(db_path, wal=False) as store:
        for i in range(30):
            await store.append("s1", [InputEntry("user", "x" * 3000)], run_id=str(i))
    data = bytearray(read(db_path))
    page = 4096  # keep page 1 (the schema) and wreck every table page after it
    data[page:] = b"\xff" * (len(data) - page)
    write(db_path, bytes(data))
    store = SQLiteSession(db_path, wal=False)
    with pytest.raises(UserError, match="corrupt"):
        await store.load("s1")
    assert read(db_path) == bytes(data)


async def test_a_foreign_table_of_the_same_name_is_refused(db_path: Path) -> None:
    execute(
        db_path,
        "CREATE TABLE session_runs (id INTEGER PRIMARY KEY, payload BLOB)",
        "INSERT INTO session_runs VALUES (1, x'00')",
    )
    with pytest.raises(UserError) as info:
        async with SQLiteSession(db_path):
            pass
    assert "not a lovia session store" in str(info.value)
    assert "session_runs" in str(info.value)
    assert info.value.hint
    assert tables(db_path) == ["session_runs"]
    assert query(db_path, "SELECT id FROM session_runs") == [(1,)]


async def test_a_foreign_schema_table_is_refused(db_path: Path) -> None:
    execute(db_path, f"CREATE TABLE {SCHEMA_TABLE} (name TEXT)")
    with pytest.raises(UserError, match="not a lovia checkpoint store"):
        async with SQLiteCheckpointer(db_path):
            pass
    assert tables(db_path) == [SCHEMA_TABLE]


async def test_a_newer_schema_version_is_refused(db_path: Path) -> None:
    async with SQLiteSession(db_path) as store:
        await store.append("s1", [InputEntry("user", "a")], run_id="r1")
    execute(db_path, f"UPDATE {SCHEMA_TABLE} SET version = 7 WHERE component = 'session'")
    with pytest.raises(UserError) as info:
        async with SQLiteSession(db_path) as store:
            pass
    assert "schema version 7" in str(info.value)
    assert info.value.hint and "Upgrade lovia" in info.value.hint
    assert query(db_path, "SELECT COUNT(*) FROM session_runs") == [(1,)]


async def test_tables_from_before_versioning_are_adopted(db_path: Path) -> None:
    execute(
        db_path,
        *SESSION_SCHEMA.baseline,
        "INSERT INTO session_runs (session_id, run_id, entries_json, created_at) "
        'VALUES (\'s1\', \'r1\', \'[{"type": "input", "role": "user", "content": "old"}]\', 0)',
    )
    async with SQLiteSession(db_path) as store:
        assert await store.load("s1") == [InputEntry("user", "old")]
    assert query(db_path, f"SELECT component, version FROM {SCHEMA_TABLE}") == [("session", 1)]


class _TaggedSession(SQLiteSession):
    """A later release: version 2 adds a column to session_runs."""

    calls = 0

    @staticmethod
    async def _add_tag(conn: aiosqlite.Connection) -> None:
        _TaggedSession.calls += 1
        await conn.execute("ALTER TABLE session_runs ADD COLUMN tag TEXT")

    schema = Schema(
        component=SESSION_SCHEMA.component,
        baseline=SESSION_SCHEMA.baseline,
        tables=SESSION_SCHEMA.tables,
        migrations=(_add_tag,),
    )


async def test_the_migration_hook_upgrades_an_old_file_once(db_path: Path) -> None:
    async with SQLiteSession(db_path) as v1:
        await v1.append("s1", [InputEntry("user", "kept")], run_id="r1")
    _TaggedSession.calls = 0
    async with _TaggedSession(db_path) as v2:
        assert await v2.load("s1") == [InputEntry("user", "kept")]
    async with _TaggedSession(db_path) as v2:
        await v2.append("s1", [InputEntry("user", "new")], run_id="r2")
    assert _TaggedSession.calls == 1
    assert query(db_path, f"SELECT version FROM {SCHEMA_TABLE} WHERE component='session'") == [(2,)]
    assert "tag" in {r[1] for r in query(db_path, "PRAGMA table_info(session_runs)")}
    with pytest.raises(UserError, match="newer than this lovia release"):
        async with SQLiteSession(db_path):
            pass


async def test_a_new_file_gets_baseline_and_all_migrations(db_path: Path) -> None:
    _TaggedSession.calls = 0
    async with _TaggedSession(db_path) as store:
        await store.append("s1", [], run_id="r")
    assert _TaggedSession.calls == 1
    assert query(db_path, f"SELECT version FROM {SCHEMA_TABLE}") == [(2,)]


async def test_a_directory_path_is_a_user_error(tmp_path: Path) -> None:
    store = SQLiteSession(tmp_path)
    with pytest.raises(UserError, match="Cannot open"):
        await store.load("s1")


async def test_missing_parent_directories_are_created(tmp_path: Path) -> None:
    path = tmp_path / ".lovia" / "nested" / "state.db"
    async with SQLiteSession(path) as store:
        await store.append("s1", [], run_id="r")
    assert path.is_file()


async def test_an_unreadable_session_row_is_a_user_error_and_stays(db_path: Path) -> None:
    async with SQLiteSession(db_path) as store:
        await store.append("s1", [InputEntry("user", "a")], run_id="r1")
    execute(db_path, 'UPDATE session_runs SET entries_json = \'[{"type": "alien"}]\'')
    async with SQLiteSession(db_path) as store:
        with pytest.raises(UserError) as info:
            await store.load("s1")
    assert "session 's1', run 'r1'" in str(info.value)
    assert info.value.hint and "left it in place" in info.value.hint
    assert query(db_path, "SELECT COUNT(*) FROM session_runs") == [(1,)]


async def test_an_unreadable_checkpoint_is_a_user_error_and_stays(db_path: Path) -> None:
    async with SQLiteCheckpointer(db_path) as store:
        await store.append("r1", [InputEntry("user", "a")], RunHead("a", Usage(), 1))
    execute(db_path, 'UPDATE snapshot_heads SET head_json = \'{"no": "agent"}\'')
    async with SQLiteCheckpointer(db_path) as store:
        with pytest.raises(UserError, match="checkpoint of run 'r1'"):
            await store.load("r1")
    assert query(db_path, "SELECT COUNT(*) FROM snapshot_turns") == [(1,)]
