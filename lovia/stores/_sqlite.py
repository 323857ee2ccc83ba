"""The shared base of the SQLite stores: one persistent aiosqlite connection and schema versions.

Every store keeps one connection for its lifetime (opened on first use, closed by ``aclose``),
guarded by an asyncio lock. Each operation runs as one job that cannot be torn in half by
cancellation: a cancelled caller waits for the job to commit or roll back before the
``CancelledError`` propagates, so the connection is never left inside a transaction.

Schema versions are recorded per component in the ``lovia_schema`` table (several stores, and the
host's own tables, can share one database file, so the single ``PRAGMA user_version`` integer is
not enough). A component's ``baseline`` creates version 1; ``migrations[i]`` moves version
``i + 1`` to ``i + 2``. Opening a database created by a newer release, or one whose tables of the
same name were created by another program, raises :class:`~lovia.exceptions.UserError` and
changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ClassVar, TypeVar

import aiosqlite

from lovia.exceptions import UserError
from lovia.transcript import TranscriptEntry, entry_from_dict, entry_to_dict

T = TypeVar("T")
Migration = Callable[[aiosqlite.Connection], Awaitable[None]]

SCHEMA_TABLE = "lovia_schema"
BUSY_TIMEOUT_MS = 5000
_MEMORY = ":memory:"
_BROKEN_FILE = {"SQLITE_NOTADB", "SQLITE_CORRUPT", "SQLITE_CORRUPT_VTAB", "SQLITE_CORRUPT_INDEX"}


@dataclass(frozen=True)
class Schema:
    """One component's tables: the version-1 DDL plus the migrations that follow it."""

    component: str
    baseline: Sequence[str]
    tables: Mapping[str, frozenset[str]]
    migrations: Sequence[Migration] = field(default=())

    @property
    def version(self) -> int:
        return 1 + len(self.migrations)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def entries_to_json(entries: Sequence[TranscriptEntry]) -> str:
    return dumps([entry_to_dict(e) for e in entries])


def entries_from_json(text: str) -> list[TranscriptEntry]:
    data = json.loads(text)
    if not isinstance(data, list):
        raise ValueError(f"expected a JSON list of entries, got {type(data).__name__}")
    return [entry_from_dict(d) for d in data]


def daemonize(conn: aiosqlite.Connection) -> None:
    """Let the interpreter exit even when a store was never closed.

    aiosqlite's worker thread is a non-daemon thread that waits for work forever, so a store
    left open (common with ``Runner.run_sync`` in scripts) would hang interpreter shutdown.
    """
    thread = getattr(conn, "_thread", conn)
    if isinstance(thread, threading.Thread) and not thread.is_alive():
        thread.daemon = True


class SQLiteStore:
    """Base of :class:`SQLiteSession` and :class:`SQLiteCheckpointer`.

    ``path`` is a file (created with its parent directory when missing) or ``":memory:"`` (one
    private in-memory database per store). ``wal`` defaults to on for files and is ignored for
    ``":memory:"``.
    """

    schema: ClassVar[Schema]

    def __init__(self, path: str | os.PathLike[str], *, wal: bool | None = None) -> None:
        self.path = os.fspath(path)
        self._memory = self.path == _MEMORY
        self._target = _MEMORY if self._memory else os.path.abspath(os.path.expanduser(self.path))
        self.wal = False if self._memory else (True if wal is None else bool(wal))
        self._conn: aiosqlite.Connection | None = None
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path!r}, wal={self.wal})"

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self: _S) -> _S:
        await self._run(_noop)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection (idempotent). A later call opens a new one."""
        conn = self._conn
        if conn is None:
            return
        async with self._get_lock():
            if self._conn is conn:
                self._conn = None
                await conn.close()

    # ------------------------------------------------------------------ running jobs

    def _get_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            # A store may outlive an event loop (``Runner.run_sync`` twice): a lock is bound to
            # the loop it first waited on, so each loop gets its own.
            self._lock = asyncio.Lock()
            self._lock_loop = loop
        return self._lock

    async def _run(self, job: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        """Run ``job`` under the lock; cancellation waits for it to finish first."""
        task = asyncio.ensure_future(self._locked(job))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():
                with contextlib.suppress(BaseException):
                    await task
            raise

    async def _locked(self, job: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        async with self._get_lock():
            try:
                return await job(await self._connection())
            except sqlite3.Error as exc:
                raise self._translate(exc) from exc

    async def _read(self, job: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        """Run ``job`` inside one read transaction (a consistent view across statements)."""

        async def tx(conn: aiosqlite.Connection) -> T:
            return await _in_transaction(conn, "BEGIN", job)

        return await self._run(tx)

    async def _write(self, job: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        """Run ``job`` inside one write transaction: committed whole or rolled back."""

        async def tx(conn: aiosqlite.Connection) -> T:
            return await _in_transaction(conn, "BEGIN IMMEDIATE", job)

        return await self._run(tx)

    # ------------------------------------------------------------------ connection

    async def _connection(self) -> aiosqlite.Connection:
        if self._conn is not None:
            return self._conn
        if not self._memory:
            await asyncio.to_thread(os.makedirs, os.path.dirname(self._target), exist_ok=True)
        conn = aiosqlite.connect(self._target, isolation_level=None)
        daemonize(conn)
        try:
            await conn
            await conn.execute_fetchall(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            await self._prepare(conn)
        except BaseException:
            with contextlib.suppress(Exception):
                await conn.close()
            raise
        self._conn = conn
        return conn

    async def _prepare(self, conn: aiosqlite.Connection) -> None:
        """Switch to WAL and check/create the schema.

        Connections opening a fresh file at the same moment can get ``SQLITE_BUSY`` right away
        (switching the journal mode bypasses the busy handler), so this step retries with
        back-off for up to the busy timeout.
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
        delay = 0.005
        while True:
            try:
                if self.wal:
                    # fetch the result row: an unfinished PRAGMA statement would keep a read
                    # transaction open and make every later write fail with SQLITE_BUSY_SNAPSHOT
                    await conn.execute_fetchall("PRAGMA journal_mode=WAL")
                await _in_transaction(conn, "BEGIN IMMEDIATE", self._ensure_schema)
                return
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() > deadline:
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.1)

    async def _ensure_schema(self, conn: aiosqlite.Connection) -> None:
        schema = self.schema
        tables = await _columns_by_table(conn)
        version: int | None = None
        if SCHEMA_TABLE in tables:
            if not {"component", "version"} <= tables[SCHEMA_TABLE]:
                raise self._foreign(f"its table '{SCHEMA_TABLE}' was not created by lovia")
            rows = await conn.execute_fetchall(
                f"SELECT version FROM {SCHEMA_TABLE} WHERE component = ?", (schema.component,)
            )
            for (value,) in rows:
                version = int(value)
        if version is not None and version > schema.version:
            raise UserError(
                f"{self.path} holds {schema.component} data in schema version {version}, "
                f"newer than this lovia release reads (version {schema.version}).",
                hint="Upgrade lovia, or point the store at another file; the database was left "
                "unchanged.",
            )
        if version is None:
            for table, required in schema.tables.items():
                if table in tables and not required <= tables[table]:
                    missing = ", ".join(sorted(required - tables[table]))
                    raise self._foreign(
                        f"it has a table '{table}' that lovia did not create (missing {missing})"
                    )
            for statement in schema.baseline:
                await conn.execute(statement)
            version = 1
        for step in schema.migrations[version - 1 :]:
            await step(conn)
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} ("
            "component TEXT PRIMARY KEY, version INTEGER NOT NULL, updated_at REAL NOT NULL)"
        )
        await conn.execute(
            f"INSERT INTO {SCHEMA_TABLE} (component, version, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(component) DO UPDATE SET version = excluded.version, "
            "updated_at = excluded.updated_at WHERE version <> excluded.version",
            (schema.component, schema.version, time.time()),
        )

    # ------------------------------------------------------------------ errors

    def _foreign(self, why: str) -> UserError:
        return UserError(
            f"{self.path} is not a lovia {self.schema.component} store: {why}.",
            hint="Point the store at its own file (or a lovia state.db); lovia left this one "
            "unchanged.",
        )

    def _translate(self, exc: sqlite3.Error) -> Exception:
        name = getattr(exc, "sqlite_errorname", "")
        if name in _BROKEN_FILE or str(exc) == "file is not a database":
            return UserError(
                f"{self.path} is corrupt or not an SQLite database ({exc}).",
                hint="lovia left the file untouched. Restore it from a backup, or move it aside "
                "and let the store create a new one.",
            )
        if name.startswith("SQLITE_CANTOPEN"):
            return UserError(
                f"Cannot open {self.path} ({exc}).",
                hint="Check that the path is a file (not a directory) in a writable location.",
            )
        if name.startswith("SQLITE_READONLY"):
            return UserError(
                f"{self.path} is read-only ({exc}).",
                hint="lovia needs write access to the database file and its directory.",
            )
        return exc

    def _corrupt_row(self, what: str, exc: Exception) -> UserError:
        return UserError(
            f"{self.path}: {what} cannot be read ({type(exc).__name__}: {exc}).",
            hint="The row was damaged or written by another program. lovia left it in place; "
            "repair or remove it to continue.",
        )


_S = TypeVar("_S", bound=SQLiteStore)


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    name = getattr(exc, "sqlite_errorname", "")
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in str(exc)


async def _noop(conn: aiosqlite.Connection) -> None:
    return None


async def _in_transaction(
    conn: aiosqlite.Connection,
    begin: str,
    job: Callable[[aiosqlite.Connection], Awaitable[T]],
) -> T:
    await conn.execute(begin)
    try:
        result = await job(conn)
        await conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(Exception):  # nothing to roll back if COMMIT went through
            await conn.execute("ROLLBACK")
        raise
    return result


async def _columns_by_table(conn: aiosqlite.Connection) -> dict[str, frozenset[str]]:
    names = await conn.execute_fetchall(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    )
    out: dict[str, frozenset[str]] = {}
    for (name,) in names:
        quoted = str(name).replace('"', '""')
        cols = await conn.execute_fetchall(f'PRAGMA table_info("{quoted}")')
        out[str(name)] = frozenset(str(c[1]) for c in cols)
    return out


__all__ = [
    "SCHEMA_TABLE",
    "Migration",
    "SQLiteStore",
    "Schema",
    "dumps",
    "entries_from_json",
    "entries_to_json",
]
