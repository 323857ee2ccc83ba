"""Plugins: the framework's one extension axis for bundled capabilities."""

from lovia.plugins.base import Plugin, PluginInstance, ViewInjector
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
from lovia.plugins.todo import (
    Todo,
    TodoItem,
    TodoList,
    TodoStatus,
    render_todos,
    todos_from_entries,
)

__all__ = [
    "DirectorySkillSource",
    "Plugin",
    "PluginInstance",
    "Skill",
    "SkillCatalog",
    "SkillFilter",
    "SkillMetadata",
    "SkillNotFoundError",
    "SkillSource",
    "Skills",
    "SkillsError",
    "Todo",
    "TodoItem",
    "TodoList",
    "TodoStatus",
    "ViewInjector",
    "render_todos",
    "todos_from_entries",
]
