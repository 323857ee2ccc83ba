"""Plugins: the framework's one extension axis for bundled capabilities.

MCP lives in ``lovia.plugins.mcp`` (not re-exported: it needs the optional ``mcp`` SDK).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lovia._lazy import lazy_exports

if TYPE_CHECKING:
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
    from lovia.plugins.subagents import ChildSpec, DeliverFn, RunChildFn, SubagentReport, Subagents
    from lovia.plugins.todo import (
        Todo,
        TodoItem,
        TodoList,
        TodoStatus,
        render_todos,
        todos_from_entries,
    )

_LAZY: dict[str, str] = {
    "Plugin": "lovia.plugins.base",
    "PluginInstance": "lovia.plugins.base",
    "ViewInjector": "lovia.plugins.base",
    "Doc": "lovia.plugins.memory",
    "Embedder": "lovia.plugins.memory",
    "FileNotesStore": "lovia.plugins.memory",
    "Fusable": "lovia.plugins.memory",
    "Hit": "lovia.plugins.memory",
    "HybridIndex": "lovia.plugins.memory",
    "Index": "lovia.plugins.memory",
    "KeywordIndex": "lovia.plugins.memory",
    "Memory": "lovia.plugins.memory",
    "NotesStore": "lovia.plugins.memory",
    "OpenAIEmbedder": "lovia.plugins.memory",
    "VectorIndex": "lovia.plugins.memory",
    "DirectorySkillSource": "lovia.plugins.skills",
    "Skill": "lovia.plugins.skills",
    "SkillCatalog": "lovia.plugins.skills",
    "SkillFilter": "lovia.plugins.skills",
    "SkillMetadata": "lovia.plugins.skills",
    "SkillNotFoundError": "lovia.plugins.skills",
    "Skills": "lovia.plugins.skills",
    "SkillsError": "lovia.plugins.skills",
    "SkillSource": "lovia.plugins.skills",
    "ChildSpec": "lovia.plugins.subagents",
    "DeliverFn": "lovia.plugins.subagents",
    "RunChildFn": "lovia.plugins.subagents",
    "SubagentReport": "lovia.plugins.subagents",
    "Subagents": "lovia.plugins.subagents",
    "Todo": "lovia.plugins.todo",
    "TodoItem": "lovia.plugins.todo",
    "TodoList": "lovia.plugins.todo",
    "TodoStatus": "lovia.plugins.todo",
    "render_todos": "lovia.plugins.todo",
    "todos_from_entries": "lovia.plugins.todo",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


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
