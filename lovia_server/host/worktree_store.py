"""Worktree runs in ``state.db``: where each works and what became of its worktree.

A record is written before git is touched (state ``queued``, with the path and branch it will
use), so a process that dies halfway through creating a worktree leaves a record naming what
to clean up. The run itself is an ordinary run record (``server_runs``) with the same id.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

from lovia_server.host.store import ServerStore

_SCHEMA = """
CREATE TABLE IF NOT EXISTS server_worktrees (
    run_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    workspace TEXT NOT NULL,
    path TEXT NOT NULL,
    branch TEXT NOT NULL,
    base TEXT,
    state TEXT NOT NULL,
    prompt TEXT NOT NULL,
    created_at REAL NOT NULL,
    request_json TEXT NOT NULL
)
"""

OPEN_STATES = ("queued", "active")


@dataclass(frozen=True)
class WorktreeRecord:
    run_id: str
    session_id: str
    workspace: str
    """The repository's top folder (the user's working copy)."""
    path: str
    branch: str
    base: str | None
    state: str
    prompt: str
    created_at: float
    request: dict[str, Any]
    """What starts the run when it leaves the queue: agent, model, max turns, carry flag."""

    def but(self, **changes: Any) -> WorktreeRecord:
        return replace(self, **changes)


class WorktreeStore:
    def __init__(self, store: ServerStore) -> None:
        self.store = store
        self._ready = False

    async def _ensure(self) -> None:
        if not self._ready:
            await self.store.execute(_SCHEMA)
            self._ready = True

    async def put(self, record: WorktreeRecord) -> None:
        await self._ensure()
        row = asdict(record)
        row["request_json"] = json.dumps(row.pop("request"))
        cols = ", ".join(row)
        await self.store.execute(
            f"INSERT OR REPLACE INTO server_worktrees ({cols}) VALUES "
            f"({', '.join('?' for _ in row)})",
            tuple(row.values()),
        )

    async def get(self, run_id: str) -> WorktreeRecord | None:
        await self._ensure()
        rows = await self.store.query("SELECT * FROM server_worktrees WHERE run_id = ?", (run_id,))
        return _record(rows[0]) if rows else None

    async def all(self, *, open_only: bool) -> list[WorktreeRecord]:
        """Newest first."""
        await self._ensure()
        where = f"WHERE state IN ({', '.join('?' for _ in OPEN_STATES)})" if open_only else ""
        rows = await self.store.query(
            f"SELECT * FROM server_worktrees {where} ORDER BY created_at DESC",
            OPEN_STATES if open_only else (),
        )
        return [_record(row) for row in rows]

    async def of_session(self, session_id: str) -> list[WorktreeRecord]:
        await self._ensure()
        rows = await self.store.query(
            "SELECT * FROM server_worktrees WHERE session_id = ?", (session_id,)
        )
        return [_record(row) for row in rows]


def new_record(
    *,
    run_id: str,
    session_id: str,
    workspace: str,
    path: str,
    branch: str,
    prompt: str,
    request: dict[str, Any],
) -> WorktreeRecord:
    return WorktreeRecord(
        run_id=run_id,
        session_id=session_id,
        workspace=workspace,
        path=path,
        branch=branch,
        base=None,
        state="queued",
        prompt=prompt,
        created_at=time.time(),
        request=request,
    )


def _record(row: sqlite3.Row) -> WorktreeRecord:
    return WorktreeRecord(
        run_id=row["run_id"],
        session_id=row["session_id"],
        workspace=row["workspace"],
        path=row["path"],
        branch=row["branch"],
        base=row["base"],
        state=row["state"],
        prompt=row["prompt"],
        created_at=row["created_at"],
        request=json.loads(row["request_json"]),
    )


__all__ = ["OPEN_STATES", "WorktreeRecord", "WorktreeStore", "new_record"]
