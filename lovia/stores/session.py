"""Session stores: ``SQLiteSession`` (one row per completed run) and the in-memory one."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from typing import Any

import aiosqlite

from lovia.exceptions import UserError
from lovia.session import Segment, Session
from lovia.stores._sqlite import Schema, SQLiteStore, dumps, entries_from_json, entries_to_json
from lovia.stores.maintenance import rewind_segments, trim_segments
from lovia.stores.memory import InMemorySession
from lovia.transcript import TranscriptEntry, to_json_safe

SESSION_SCHEMA = Schema(
    component="session",
    baseline=(
        "CREATE TABLE IF NOT EXISTS session_runs ("
        " id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " session_id TEXT NOT NULL,"
        " run_id TEXT NOT NULL,"
        " entries_json TEXT NOT NULL,"
        " meta_json TEXT NULL,"
        " created_at REAL NOT NULL,"
        " UNIQUE(session_id, run_id))",
        "CREATE INDEX IF NOT EXISTS session_runs_session ON session_runs(session_id, id)",
    ),
    tables={
        "session_runs": frozenset(
            {"id", "session_id", "run_id", "entries_json", "meta_json", "created_at"}
        )
    },
)

_Row = tuple[int, Segment]
_ROWS_AT_ONCE = 8
"""Rows fetched per trip to the connection's thread when a session is read."""


class SQLiteSession(SQLiteStore, Session):
    """A :class:`~lovia.session.Session` in an SQLite file: one ``session_runs`` row per run.

    ``append`` is an ``INSERT OR IGNORE`` keyed by ``(session_id, run_id)``: the first write
    wins, a re-issued run never duplicates, and no row is rewritten by normal use (only the
    explicit maintenance calls :meth:`trim_tool_results` and :meth:`rewind` change rows).
    """

    schema = SESSION_SCHEMA

    async def segments(self, session_id: str) -> list[Segment]:
        return [seg for _, seg in await self._read(lambda conn: self._rows(conn, session_id))]

    async def append(
        self,
        session_id: str,
        entries: list[TranscriptEntry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        run_id = run_id or uuid.uuid4().hex
        params = (
            session_id,
            run_id,
            entries_to_json(entries),
            self._meta_json(meta),
            time.time(),
        )

        async def insert(conn: aiosqlite.Connection) -> None:
            await conn.execute(
                "INSERT OR IGNORE INTO session_runs"
                " (session_id, run_id, entries_json, meta_json, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                params,
            )

        await self._write(insert)
        return run_id

    async def clear(self, session_id: str) -> None:
        async def delete(conn: aiosqlite.Connection) -> None:
            await conn.execute("DELETE FROM session_runs WHERE session_id = ?", (session_id,))

        await self._write(delete)

    # ------------------------------------------------------------------ maintenance

    async def trim_tool_results(
        self, session_id: str, *, keep_chars: int = 400, keep_runs: int = 1
    ) -> int:
        """Shorten stored tool results of all but the last ``keep_runs`` runs (one transaction)."""

        async def trim(conn: aiosqlite.Connection) -> int:
            rows = await self._rows(conn, session_id)
            new, count = trim_segments(
                [seg for _, seg in rows], keep_chars=keep_chars, keep_runs=keep_runs
            )
            for (row_id, old), seg in zip(rows, new, strict=True):
                if any(a is not b for a, b in zip(old.entries, seg.entries, strict=True)):
                    await self._rewrite(conn, row_id, seg)
            return count

        return await self._write(trim)

    async def rewind(self, session_id: str, *, keep_entries: int) -> int:
        """Keep the first ``keep_entries`` entries of the session; returns how many were removed."""

        async def cut(conn: aiosqlite.Connection) -> int:
            rows = await self._rows(conn, session_id)
            new, removed = rewind_segments([seg for _, seg in rows], keep_entries=keep_entries)
            if not removed:
                return 0
            for index, (row_id, old) in enumerate(rows):
                if index >= len(new):
                    await conn.execute("DELETE FROM session_runs WHERE id = ?", (row_id,))
                elif new[index] is not old:
                    await self._rewrite(conn, row_id, new[index])
            return removed

        return await self._write(cut)

    # ------------------------------------------------------------------ rows

    async def _rows(self, conn: aiosqlite.Connection, session_id: str) -> list[_Row]:
        """Decoded a few rows at a time: a long conversation's JSON text is never all held at
        once beside its decoded entries (only the entries stay, as long as the caller keeps
        them)."""
        cursor = await conn.execute(
            "SELECT id, run_id, entries_json, meta_json FROM session_runs"
            " WHERE session_id = ? ORDER BY id",
            (session_id,),
        )
        out: list[_Row] = []
        try:
            while rows := await cursor.fetchmany(_ROWS_AT_ONCE):
                out.extend(self._decode(session_id, row) for row in rows)
        finally:
            await cursor.close()
        return out

    def _decode(self, session_id: str, row: Sequence[Any]) -> _Row:
        row_id, run_id, entries_json, meta_json = row
        try:
            meta = None if meta_json is None else _loads_meta(meta_json)
            return int(row_id), Segment(str(run_id), entries_from_json(entries_json), meta)
        except (ValueError, TypeError, KeyError) as exc:
            raise self._corrupt_row(
                f"session '{session_id}', run '{run_id}' (session_runs.id={row_id})", exc
            ) from exc

    async def _rewrite(self, conn: aiosqlite.Connection, row_id: int, seg: Segment) -> None:
        await conn.execute(
            "UPDATE session_runs SET entries_json = ?, meta_json = ? WHERE id = ?",
            (entries_to_json(seg.entries), self._meta_json(seg.meta), row_id),
        )

    @staticmethod
    def _meta_json(meta: dict[str, Any] | None) -> str | None:
        if meta is None:
            return None
        safe = to_json_safe(meta)
        if not isinstance(safe, dict):
            raise UserError(
                "Session segment meta must be JSON-serialisable.",
                hint="Store plain dicts, lists, strings, numbers and booleans in meta.",
            )
        return dumps(safe)


def _loads_meta(text: str) -> dict[str, Any]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"meta is a JSON {type(value).__name__}, not an object")
    return value


__all__ = ["SESSION_SCHEMA", "InMemorySession", "SQLiteSession"]
