"""Session and checkpoint stores: in-memory (tests, short-lived hosts) and SQLite (durable)."""

from lovia.stores.checkpointer import SQLiteCheckpointer
from lovia.stores.memory import InMemoryCheckpointer, InMemorySession
from lovia.stores.session import SQLiteSession

__all__ = ["InMemoryCheckpointer", "InMemorySession", "SQLiteCheckpointer", "SQLiteSession"]
