from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from lovia.stores import SQLiteCheckpointer, SQLiteSession

Rows = Callable[..., list[tuple[Any, ...]]]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
async def sqlite_session(db_path: Path) -> AsyncIterator[SQLiteSession]:
    async with SQLiteSession(db_path) as store:
        yield store


@pytest.fixture
async def sqlite_checkpointer(db_path: Path) -> AsyncIterator[SQLiteCheckpointer]:
    async with SQLiteCheckpointer(db_path) as store:
        yield store


@pytest.fixture
def db_rows(db_path: Path) -> Rows:
    """Query the database file through a separate, plain sqlite3 connection."""

    def query(sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with contextlib.closing(sqlite3.connect(db_path)) as conn:
            return list(conn.execute(sql, params))

    return query
