"""Plugins: the framework's one extension axis for bundled capabilities.

MCP lives in ``lovia.plugins.mcp`` (not re-exported: it needs the optional ``mcp`` SDK).
"""

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
from lovia.plugins.skills import (
    DirectorySkillSource,
    Skill,
    SkillCatalog,
    SkillFilter,
    SkillMetadata,
    SkillNotFoundError,
    Skills,
    SkillsError,
    SkillSource,
)
from lovia.plugins.subagents import (
    ChildSpec,
    DeliverFn,
    RunChildFn,
    SubagentReport,
    Subagents,
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
    "ChildSpec",
    "DeliverFn",
    "DirectorySkillSource",
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
    "RunChildFn",
    "Skill",
    "SkillCatalog",
    "SkillFilter",
    "SkillMetadata",
    "SkillNotFoundError",
    "SkillSource",
    "Skills",
    "SkillsError",
    "SubagentReport",
    "Subagents",
    "Todo",
    "TodoItem",
    "TodoList",
    "TodoStatus",
    "VectorIndex",
    "ViewInjector",
    "render_todos",
    "todos_from_entries",
]
