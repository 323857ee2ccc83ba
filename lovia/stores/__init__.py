"""Session and checkpoint stores: in-memory (tests, short-lived hosts) and SQLite (durable)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lovia._lazy import lazy_exports

if TYPE_CHECKING:
    from lovia.stores.checkpointer import SQLiteCheckpointer
    from lovia.stores.memory import InMemoryCheckpointer, InMemorySession
    from lovia.stores.session import SQLiteSession

_LAZY: dict[str, str] = {
    "SQLiteCheckpointer": "lovia.stores.checkpointer",
    "InMemoryCheckpointer": "lovia.stores.memory",
    "InMemorySession": "lovia.stores.memory",
    "SQLiteSession": "lovia.stores.session",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


__all__ = ["InMemoryCheckpointer", "InMemorySession", "SQLiteCheckpointer", "SQLiteSession"]
