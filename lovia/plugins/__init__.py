"""Plugins: the framework's one extension axis for bundled capabilities."""

from lovia.plugins.base import Plugin, PluginInstance, ViewInjector
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
    "Plugin",
    "PluginInstance",
    "RunChildFn",
    "SubagentReport",
    "Subagents",
    "Todo",
    "TodoItem",
    "TodoList",
    "TodoStatus",
    "ViewInjector",
    "render_todos",
    "todos_from_entries",
]
