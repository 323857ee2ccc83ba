"""Session and checkpoint stores."""

from lovia.stores.memory import InMemoryCheckpointer, InMemorySession

__all__ = ["InMemoryCheckpointer", "InMemorySession"]
