"""The server's tables in ``state.db`` and how an older file gains what is new.

Kept apart from the store's reads and writes so a schema change is one place to look.
"""

from __future__ import annotations

import aiosqlite

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS lovia_server_schema (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS server_sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    agent TEXT,
    cwd TEXT,
    parent_id TEXT
);
CREATE TABLE IF NOT EXISTS server_runs (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    prompt TEXT,
    model TEXT,
    agent TEXT,
    cwd TEXT,
    started_at REAL NOT NULL,
    finished_at REAL,
    usage_json TEXT,
    resumable INTEGER NOT NULL DEFAULT 0,
    leg INTEGER NOT NULL DEFAULT 0,
    parent_run_id TEXT,
    task_id TEXT,
    spawn_key TEXT,
    report TEXT
);
CREATE INDEX IF NOT EXISTS server_runs_session ON server_runs (session_id, started_at);
CREATE TABLE IF NOT EXISTS server_run_events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
"""

# Columns added after the first release: (table, column, declaration), added when missing.
_ADDED_COLUMNS = (
    ("server_sessions", "parent_id", "TEXT"),
    ("server_runs", "parent_run_id", "TEXT"),
    ("server_runs", "task_id", "TEXT"),
    ("server_runs", "spawn_key", "TEXT"),
    ("server_runs", "report", "TEXT"),
    ("server_runs", "mode", "TEXT"),
    ("server_sessions", "mode", "TEXT"),
)
_LATE_INDEXES = ("CREATE INDEX IF NOT EXISTS server_runs_parent ON server_runs (parent_run_id)",)


async def create_tables(db: aiosqlite.Connection) -> None:
    """The tables, and a state.db from an older server gains the new columns (values stay
    NULL)."""
    await db.executescript(_SCHEMA)
    for table, column, decl in _ADDED_COLUMNS:
        async with db.execute(f"PRAGMA table_info({table})") as cur:
            names = {row[1] for row in await cur.fetchall()}
        if column not in names:
            await db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
    for sql in _LATE_INDEXES:
        await db.execute(sql)


__all__ = ["SCHEMA_VERSION", "create_tables"]
