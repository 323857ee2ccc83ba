"""The server's own tables in ``state.db``: session metadata, run records, run event logs.

lovia's ``SQLiteSession``/``SQLiteCheckpointer`` keep transcripts and checkpoints in the same
file; this module never touches their tables.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiosqlite

from lovia.exceptions import UserError
from lovia.stores._sqlite import daemonize
from lovia_server import protocol as p
from lovia_server.host.store_schema import SCHEMA_VERSION, create_tables

_ROWS_PER_INSERT = 300  # 900 parameters: under SQLite's oldest limit of 999

CHECKPOINT_EVERY = 200
"""Commits on the store's connection between two background WAL checkpoints (a streamed delta
is one commit of about two pages, so this keeps the WAL near 2 MB; SQLite's own automatic
checkpoint, which the store turns off, would run at 1,000 pages inside a commit)."""

DIRECT_ROWS = 32
DIRECT_BYTES = 64 * 1024
"""The largest event batch stored from the event loop itself (``ServerStore._store_directly``):
a few deltas take 50-150 us to commit there, a round trip through the database thread takes two
wake-ups of each thread. Bigger batches (a burst) go through the thread, on the other core."""

logger = logging.getLogger("lovia_server.host.store")


@functools.lru_cache(maxsize=_ROWS_PER_INSERT)
def _insert_events_sql(rows: int) -> str:
    values = ",".join(["(?,?,?)"] * rows)
    return f"INSERT OR IGNORE INTO server_run_events (run_id, seq, body) VALUES {values}"


def checkpoint_id(run_id: str, leg: int) -> str:
    """The checkpoint (and session segment) key of one leg of a run.

    A run continues in a new leg when steering messages arrive after its final answer; each leg
    is one lovia run with its own checkpoint, all under one protocol ``runId``.
    """
    return run_id if leg == 0 else f"{run_id}~{leg}"


def run_of_checkpoint(key: str) -> str:
    """The protocol ``runId`` a checkpoint key belongs to (``checkpoint_id``'s inverse)."""
    return key.partition("~")[0]


@dataclass
class RunRecord:
    id: str
    session_id: str
    status: str
    error: str | None
    prompt: str | None
    model: str | None
    agent: str | None
    cwd: str | None
    started_at: float
    finished_at: float | None
    usage: p.Usage | None
    resumable: bool
    leg: int = 0
    parent_run_id: str | None = None
    task_id: str | None = None
    spawn_key: str | None = None
    """``{parent checkpoint}:{spawning call or task id}``: one child per spawn, across resumes."""
    report: str | None = None
    """A finished child's output, kept until its parent has the report."""
    mode: str | None = None
    """``"plan"``: a plan-mode run, which continues in plan mode after a restart."""

    @property
    def checkpoint_id(self) -> str:
        return checkpoint_id(self.id, self.leg)

    def to_wire(self) -> p.RunInfo:
        return p.RunInfo(
            run_id=self.id,
            session_id=self.session_id,
            status=p.as_run_status(self.status),
            error=self.error,
            prompt=self.prompt,
            model=self.model,
            agent=self.agent,
            started_at=int(self.started_at * 1000),
            finished_at=int(self.finished_at * 1000) if self.finished_at else None,
            usage=self.usage,
            resumable=self.resumable,
            parent_run_id=self.parent_run_id,
            task_id=self.task_id,
        )


def _run_from_row(row: sqlite3.Row) -> RunRecord:
    return RunRecord(
        id=row["id"],
        session_id=row["session_id"],
        status=row["status"],
        error=row["error"],
        prompt=row["prompt"],
        model=row["model"],
        agent=row["agent"],
        cwd=row["cwd"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        usage=_usage(row["usage_json"]),
        resumable=bool(row["resumable"]),
        leg=int(row["leg"]),
        parent_run_id=row["parent_run_id"],
        task_id=row["task_id"],
        spawn_key=row["spawn_key"],
        report=row["report"],
        mode=row["mode"],
    )


def _usage(stored: str | None) -> p.Usage | None:
    """A run's stored token usage (rows from older versions may lack newer counters)."""
    if not stored:
        return None
    return p.Usage.model_validate_json(stored)


def _usage_json(usage: p.Usage | None) -> str | None:
    return usage.model_dump_json(by_alias=True) if usage is not None else None


def _direct_connection(path: Path) -> sqlite3.Connection:
    """The event loop's own connection: explicit transactions, no waiting, no checkpoints."""
    direct = sqlite3.connect(path, isolation_level=None)
    try:
        direct.execute("PRAGMA busy_timeout=0")
        direct.execute("PRAGMA synchronous=NORMAL")
        direct.execute("PRAGMA wal_autocheckpoint=0")
    except BaseException:
        direct.close()
        raise
    return direct


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        return (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)  # extended codes too
    return "locked" in str(exc)


class ServerStore:
    """One aiosqlite connection (WAL) serialised by a lock; every write is one transaction.

    Two things keep the path of a streamed delta short (it is stored before it is sent):

    - A small event batch is committed on the event loop, through a second, plain connection
      that never waits: its busy timeout is zero, so while another connection holds the write
      lock the batch goes through the database thread like any other write.
    - The WAL is checkpointed in the background, from a third connection: SQLite's automatic
      checkpoint runs inside the commit that crosses its threshold, and copying 1,000 pages
      back and syncing the file takes 10-20 ms, which every delta waiting to be stored (and
      then sent) would wait for.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()
        self._commits = 0
        self._direct: sqlite3.Connection | None = None
        self._direct_usable = str(path) != ":memory:"
        self.direct_batches = 0
        self._checkpoints: aiosqlite.Connection | None = None
        self._checkpoint_task: asyncio.Task[None] | None = None
        self.checkpoints_run = 0

    async def open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            connecting = aiosqlite.connect(self.path)
            # A client that sends ``exit`` before ``shutdown`` finished leaves this store open:
            # its worker thread must not keep the process alive.
            daemonize(connecting)
            db = await connecting
            db.row_factory = sqlite3.Row
            await db.execute("PRAGMA journal_mode=WAL")
            await db.execute("PRAGMA synchronous=NORMAL")
            await db.execute("PRAGMA busy_timeout=5000")
            await db.execute("PRAGMA wal_autocheckpoint=0")  # _committed() checkpoints instead
            await create_tables(db)
            async with db.execute("SELECT version FROM lovia_server_schema") as cur:
                row = await cur.fetchone()
            if row is None:
                await db.execute(
                    "INSERT INTO lovia_server_schema (version) VALUES (?)", (SCHEMA_VERSION,)
                )
            elif row[0] > SCHEMA_VERSION:
                raise UserError(
                    f"{self.path} was written by a newer lovia server (schema {row[0]})",
                    hint="Upgrade lovia, or point lovia.stateDir at another directory.",
                )
            await db.commit()
        except sqlite3.DatabaseError as exc:
            raise UserError(
                f"Cannot open the lovia state database {self.path}: {exc}",
                hint="The file is not a lovia state database or is corrupt; move it aside or "
                "set initializationOptions.lovia.stateDir to another directory.",
            ) from exc
        self._db = db

    async def close(self) -> None:
        task, self._checkpoint_task = self._checkpoint_task, None
        if task is not None:
            with contextlib.suppress(Exception):
                await task
        if self._checkpoints is not None:
            with contextlib.suppress(Exception):
                await self._checkpoints.close()
            self._checkpoints = None
        if self._direct is not None:
            with contextlib.suppress(sqlite3.Error):
                self._direct.close()
            self._direct = None
        if self._db is not None:
            await self._db.close()  # the last connection to close checkpoints the rest
            self._db = None

    def _committed(self) -> None:
        """Count a commit; every ``CHECKPOINT_EVERY`` start a checkpoint nobody waits for."""
        self._commits += 1
        if self._commits < CHECKPOINT_EVERY or self._db is None:
            return
        if self._checkpoint_task is not None and not self._checkpoint_task.done():
            return
        self._commits = 0
        self._checkpoint_task = asyncio.get_running_loop().create_task(self._checkpoint())

    async def _checkpoint(self) -> None:
        """A PASSIVE checkpoint: it copies what no reader still needs and never blocks a writer."""
        try:
            if self._checkpoints is None:
                connecting = aiosqlite.connect(self.path)
                daemonize(connecting)
                self._checkpoints = await connecting
                await self._checkpoints.execute("PRAGMA busy_timeout=5000")
            await self._checkpoints.execute_fetchall("PRAGMA wal_checkpoint(PASSIVE)")
            self.checkpoints_run += 1
        except Exception:
            logger.warning("store.checkpoint_failed: %s", self.path, exc_info=True)

    @property
    def db(self) -> aiosqlite.Connection:
        if self._db is None:
            raise RuntimeError("ServerStore is not open")
        return self._db

    async def _write(self, sql: str, args: Iterable[Any] = ()) -> None:
        async with self._lock:
            await self.db.execute(sql, tuple(args))
            await self.db.commit()
            self._committed()

    async def _fetchall(self, sql: str, args: Iterable[Any] = ()) -> list[sqlite3.Row]:
        async with self._lock, self.db.execute(sql, tuple(args)) as cur:
            return list(await cur.fetchall())

    async def execute(self, sql: str, args: Iterable[Any] = ()) -> None:
        """One committed statement on the store's connection (tables of other host parts)."""
        await self._write(sql, args)

    async def query(self, sql: str, args: Iterable[Any] = ()) -> list[sqlite3.Row]:
        return await self._fetchall(sql, args)

    # ------------------------------------------------------------------ sessions

    async def upsert_session(
        self,
        session_id: str,
        *,
        title: str,
        agent: str | None,
        cwd: str | None,
        parent_id: str | None = None,
    ) -> None:
        now = time.time()
        await self._write(
            "INSERT INTO server_sessions (id, title, created_at, updated_at, agent, cwd, "
            "parent_id) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET updated_at = excluded.updated_at",
            (session_id, title.strip()[:120] or "Untitled", now, now, agent, cwd, parent_id),
        )

    async def touch_session(self, session_id: str) -> None:
        await self._write(
            "UPDATE server_sessions SET updated_at = ? WHERE id = ?", (time.time(), session_id)
        )

    async def set_session_mode(self, session_id: str, mode: str) -> None:
        """The mode a conversation is in (ACP's session mode), for its next process."""
        await self._write("UPDATE server_sessions SET mode = ? WHERE id = ?", (mode, session_id))

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        rows = await self._fetchall("SELECT * FROM server_sessions WHERE id = ?", (session_id,))
        return dict(rows[0]) if rows else None

    async def list_sessions(
        self, *, limit: int, offset: int, query: str | None
    ) -> list[dict[str, Any]]:
        sql = (
            "SELECT s.*, r.id AS last_run_id, r.status AS last_run_status, "
            "r.resumable AS last_resumable FROM server_sessions s "
            "LEFT JOIN server_runs r ON r.id = ("
            " SELECT id FROM server_runs WHERE session_id = s.id "
            " ORDER BY started_at DESC LIMIT 1) "
        )
        args: list[Any] = []
        sql += "WHERE s.parent_id IS NULL "
        if query:
            sql += "AND s.title LIKE ? ESCAPE '\\' "
            escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            args.append(f"%{escaped}%")
        sql += "ORDER BY s.updated_at DESC LIMIT ? OFFSET ?"
        args += [limit, offset]
        return [dict(r) for r in await self._fetchall(sql, args)]

    async def delete_session(self, session_id: str) -> list[tuple[str, int]]:
        """Delete the session's metadata, run records and event logs; returns (run id, leg)."""
        async with self._lock:
            async with self.db.execute(
                "SELECT id, leg FROM server_runs WHERE session_id = ?", (session_id,)
            ) as cur:
                runs = [(r[0], int(r[1])) for r in await cur.fetchall()]
            run_ids = [r[0] for r in runs]
            await self.db.executemany(
                "DELETE FROM server_run_events WHERE run_id = ?", [(r,) for r in run_ids]
            )
            await self.db.execute("DELETE FROM server_runs WHERE session_id = ?", (session_id,))
            await self.db.execute("DELETE FROM server_sessions WHERE id = ?", (session_id,))
            await self.db.commit()
            self._committed()
        return runs

    async def delete_runs(self, run_ids: list[str]) -> None:
        """Delete run records and their event logs (a conversation cut back)."""
        async with self._lock:
            await self.db.executemany(
                "DELETE FROM server_run_events WHERE run_id = ?", [(r,) for r in run_ids]
            )
            await self.db.executemany(
                "DELETE FROM server_runs WHERE id = ?", [(r,) for r in run_ids]
            )
            await self.db.commit()
            self._committed()

    # ------------------------------------------------------------------ runs

    async def insert_run(self, record: RunRecord) -> None:
        await self._write(
            "INSERT INTO server_runs (id, session_id, status, error, prompt, model, agent, cwd, "
            "started_at, finished_at, usage_json, resumable, parent_run_id, task_id, spawn_key, "
            "mode) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET status = excluded.status, error = NULL, "
            "finished_at = NULL, resumable = 0",
            (
                record.id,
                record.session_id,
                record.status,
                record.error,
                record.prompt,
                record.model,
                record.agent,
                record.cwd,
                record.started_at,
                record.finished_at,
                _usage_json(record.usage),
                int(record.resumable),
                record.parent_run_id,
                record.task_id,
                record.spawn_key,
                record.mode,
            ),
        )

    async def finish_run(
        self,
        run_id: str,
        *,
        status: str,
        error: str | None,
        usage: p.Usage | None,
        resumable: bool,
    ) -> None:
        await self._write(
            "UPDATE server_runs SET status = ?, error = ?, finished_at = ?, usage_json = ?, "
            "resumable = ? WHERE id = ?",
            (
                status,
                error,
                time.time(),
                _usage_json(usage),
                int(resumable),
                run_id,
            ),
        )

    async def set_report(self, run_id: str, report: str | None) -> None:
        await self._write("UPDATE server_runs SET report = ? WHERE id = ?", (report, run_id))

    async def children_of(self, parent_run_ids: Iterable[str]) -> list[RunRecord]:
        """The child runs (subagents) of the given runs, oldest first."""
        ids = list(parent_run_ids)
        if not ids:
            return []
        marks = ", ".join("?" for _ in ids)
        rows = await self._fetchall(
            f"SELECT * FROM server_runs WHERE parent_run_id IN ({marks}) ORDER BY started_at",
            ids,
        )
        return [_run_from_row(r) for r in rows]

    async def child_by_spawn(self, spawn_key: str) -> RunRecord | None:
        rows = await self._fetchall(
            "SELECT * FROM server_runs WHERE spawn_key = ? ORDER BY started_at DESC LIMIT 1",
            (spawn_key,),
        )
        return _run_from_row(rows[0]) if rows else None

    async def set_leg(self, run_id: str, leg: int) -> None:
        await self._write("UPDATE server_runs SET leg = ? WHERE id = ?", (leg, run_id))

    async def get_run(self, run_id: str) -> RunRecord | None:
        rows = await self._fetchall("SELECT * FROM server_runs WHERE id = ?", (run_id,))
        return _run_from_row(rows[0]) if rows else None

    async def runs_for_session(self, session_id: str) -> list[RunRecord]:
        rows = await self._fetchall(
            "SELECT * FROM server_runs WHERE session_id = ? ORDER BY started_at", (session_id,)
        )
        return [_run_from_row(r) for r in rows]

    async def runs_with_status(self, status: str) -> list[RunRecord]:
        rows = await self._fetchall("SELECT * FROM server_runs WHERE status = ?", (status,))
        return [_run_from_row(r) for r in rows]

    # ------------------------------------------------------------------ events

    async def append_events(self, rows: list[tuple[str, int, str]]) -> None:
        """Store a batch of events in one transaction.

        One multi-row INSERT per chunk rather than ``executemany``: the database thread gives
        up and takes back the GIL around every statement step, and while the event loop is busy
        (a burst of deltas) each take can wait a whole switch interval.
        """
        if not rows:
            return
        if self._store_directly(rows):
            return
        async with self._lock:
            for start in range(0, len(rows), _ROWS_PER_INSERT):
                chunk = rows[start : start + _ROWS_PER_INSERT]
                await self.db.execute(_insert_events_sql(len(chunk)), [v for r in chunk for v in r])
            await self.db.commit()
            self._committed()

    def _store_directly(self, rows: list[tuple[str, int, str]]) -> bool:
        """Commit a small batch right here, or say why not (False: use the database thread)."""
        if (
            not self._direct_usable
            or self._db is None
            or len(rows) > DIRECT_ROWS
            or sum(len(r[2]) for r in rows) > DIRECT_BYTES
        ):
            return False
        try:
            if self._direct is None:
                self._direct = _direct_connection(self.path)
            direct = self._direct
            direct.execute("BEGIN IMMEDIATE")  # fails at once while another writer is active
            try:
                direct.execute(_insert_events_sql(len(rows)), [v for r in rows for v in r])
                direct.execute("COMMIT")
            except BaseException:
                if direct.in_transaction:
                    direct.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            if not _is_busy(exc):
                logger.debug("store.direct_write_failed: %s", exc)
            return False
        self.direct_batches += 1
        self._committed()
        return True

    async def events_after(self, run_id: str, after_seq: int) -> list[dict[str, Any]]:
        rows = await self._fetchall(
            "SELECT body FROM server_run_events WHERE run_id = ? AND seq > ? ORDER BY seq",
            (run_id, after_seq),
        )
        return [json.loads(r["body"]) for r in rows]

    async def typed_events_after(self, run_id: str, after_seq: int) -> list[p.LoviaEvent]:
        """The stored events as their models (replay, recovery). A row this version cannot read
        (a kind or field it does not know) is left out with a warning: the client sees the
        gap in ``seq``."""
        rows = await self._fetchall(
            "SELECT seq, body FROM server_run_events WHERE run_id = ? AND seq > ? ORDER BY seq",
            (run_id, after_seq),
        )
        out: list[p.LoviaEvent] = []
        for row in rows:
            try:
                out.append(p.parse_event(row["body"]))
            except ValueError as exc:
                logger.warning(
                    "store.event_unreadable: seq %s of run %s: %s", row["seq"], run_id, exc
                )
        return out

    async def last_seq(self, run_id: str) -> int:
        rows = await self._fetchall(
            "SELECT MAX(seq) AS m FROM server_run_events WHERE run_id = ?", (run_id,)
        )
        return int(rows[0]["m"] or 0) if rows else 0


__all__ = ["RunRecord", "ServerStore", "checkpoint_id", "run_of_checkpoint"]
