"""Checkpoint stores: ``SQLiteCheckpointer`` (a row per non-empty append) and the in-memory one."""

from __future__ import annotations

import json
from typing import Any

import aiosqlite

from lovia.checkpointer import RunHead, RunSnapshot
from lovia.stores._sqlite import Schema, SQLiteStore, entries_from_json, entries_to_json
from lovia.stores.memory import InMemoryCheckpointer
from lovia.transcript import TranscriptEntry

CHECKPOINT_SCHEMA = Schema(
    component="checkpoint",
    baseline=(
        "CREATE TABLE IF NOT EXISTS snapshot_heads ("
        " run_id TEXT PRIMARY KEY,"
        " head_json TEXT NOT NULL,"
        " updated_at REAL NOT NULL)",
        "CREATE TABLE IF NOT EXISTS snapshot_turns ("
        " run_id TEXT NOT NULL,"
        " seq INTEGER NOT NULL,"
        " entries_json TEXT NOT NULL,"
        " PRIMARY KEY(run_id, seq))",
    ),
    tables={
        "snapshot_heads": frozenset({"run_id", "head_json", "updated_at"}),
        "snapshot_turns": frozenset({"run_id", "seq", "entries_json"}),
    },
)


class SQLiteCheckpointer(SQLiteStore):
    """A :class:`~lovia.checkpointer.Checkpointer` in an SQLite file.

    ``append`` adds one ``snapshot_turns`` row per non-empty batch (``seq`` 0, 1, ...) and
    overwrites the run's ``snapshot_heads`` row, in one transaction; turn rows are never
    rewritten. Its cost depends only on the batch, not on how long the run already is.
    """

    schema = CHECKPOINT_SCHEMA

    async def append(self, run_id: str, entries: list[TranscriptEntry], head: RunHead) -> None:
        batch = entries_to_json(entries) if entries else None
        head_json = head.to_json()

        async def write(conn: aiosqlite.Connection) -> None:
            if batch is not None:
                await conn.execute(
                    "INSERT INTO snapshot_turns (run_id, seq, entries_json)"
                    " SELECT ?, COALESCE(MAX(seq) + 1, 0), ? FROM snapshot_turns WHERE run_id = ?",
                    (run_id, batch, run_id),
                )
            await conn.execute(
                "INSERT INTO snapshot_heads (run_id, head_json, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT(run_id) DO UPDATE SET"
                " head_json = excluded.head_json, updated_at = excluded.updated_at",
                (run_id, head_json, head.updated_at),
            )

        await self._write(write)

    async def load(self, run_id: str) -> RunSnapshot | None:
        async def read(conn: aiosqlite.Connection) -> tuple[str, list[str]] | None:
            heads = list(
                await conn.execute_fetchall(
                    "SELECT head_json FROM snapshot_heads WHERE run_id = ?", (run_id,)
                )
            )
            if not heads:
                return None
            turns = await conn.execute_fetchall(
                "SELECT entries_json FROM snapshot_turns WHERE run_id = ? ORDER BY seq", (run_id,)
            )
            return str(heads[0][0]), [str(t[0]) for t in turns]

        found = await self._read(read)
        if found is None:
            return None
        head_json, batches = found
        try:
            head = RunHead.from_dict(_object(head_json))
            entries = [e for batch in batches for e in entries_from_json(batch)]
        except (ValueError, TypeError, KeyError) as exc:
            raise self._corrupt_row(f"checkpoint of run '{run_id}'", exc) from exc
        return RunSnapshot.from_parts(run_id, entries, head)

    async def delete(self, run_id: str) -> None:
        async def exists(conn: aiosqlite.Connection) -> bool:
            rows = list(
                await conn.execute_fetchall(
                    "SELECT EXISTS(SELECT 1 FROM snapshot_heads WHERE run_id = ?)"
                    " OR EXISTS(SELECT 1 FROM snapshot_turns WHERE run_id = ?)",
                    (run_id, run_id),
                )
            )
            return bool(rows[0][0])

        # Every fresh start with if_run_exists="restart" deletes a run that never checkpointed:
        # one read, instead of a write transaction that waits for the database's write lock.
        if not await self._run(exists):
            return

        async def delete(conn: aiosqlite.Connection) -> None:
            await conn.execute("DELETE FROM snapshot_turns WHERE run_id = ?", (run_id,))
            await conn.execute("DELETE FROM snapshot_heads WHERE run_id = ?", (run_id,))

        await self._write(delete)


def _object(text: str) -> dict[str, Any]:
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"head is a JSON {type(value).__name__}, not an object")
    return value


__all__ = ["CHECKPOINT_SCHEMA", "InMemoryCheckpointer", "SQLiteCheckpointer"]
