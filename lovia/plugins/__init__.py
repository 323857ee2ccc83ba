"""Plugins: the framework's one extension axis for bundled capabilities."""

from lovia.plugins.base import Plugin, PluginInstance, ViewInjector
from lovia.plugins.memory import (
    Doc,
    Embedder,
    FileNotesStore,
    Fusable,
    Hit,
    HybridIndex,
    Index,
    KeywordIndex,
    Memory,
    NotesStore,
    OpenAIEmbedder,
    VectorIndex,
)
from lovia.plugins.todo import (
    Todo,
    TodoItem,
    TodoList,
    TodoStatus,
    render_todos,
    todos_from_entries,
)

__all__ = [
    "Doc",
    "Embedder",
    "FileNotesStore",
    "Fusable",
    "Hit",
    "HybridIndex",
    "Index",
    "KeywordIndex",
    "Memory",
    "NotesStore",
    "OpenAIEmbedder",
    "Plugin",
    "PluginInstance",
    "Todo",
    "TodoItem",
    "TodoList",
    "TodoStatus",
    "VectorIndex",
    "ViewInjector",
    "render_todos",
    "todos_from_entries",
]
