"""Todo: an externalised checklist the model keeps with ``todo_write``, re-shown every turn."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ValidationError

from lovia.plugins.base import PluginInstance
from lovia.run_context import RunContext
from lovia.tools.base import Tool, tool
from lovia.transcript import InputEntry, ToolCallEntry, TranscriptEntry

TodoStatus: TypeAlias = Literal["pending", "in_progress", "completed"]

_BOXES = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}

DEFAULT_INSTRUCTIONS = """## Todo
Use the `todo_write` tool to plan and track genuinely multi-step work (three or more distinct \
steps, or when the user gives you a list of things to do). Skip it for trivial or single-step \
tasks. Always send the complete list. Keep exactly one item `in_progress` while you work, mark \
items `completed` as soon as they are done, and add items you discover along the way. The \
current list is shown to you again at the start of every turn."""


class TodoItem(BaseModel):
    content: str
    status: TodoStatus = "pending"
    active_form: str | None = None


def render_todos(items: Iterable[TodoItem]) -> str:
    lines = []
    for item in items:
        label = item.active_form if item.status == "in_progress" and item.active_form else None
        lines.append(f"{_BOXES[item.status]} {label or item.content}")
    return "\n".join(lines)


def _parse_todos(arguments: str) -> list[TodoItem] | None:
    try:
        data = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("todos"), list):
        return None
    try:
        return [TodoItem.model_validate(t) for t in data["todos"]]
    except ValidationError:
        return None


def todos_from_entries(
    entries: Sequence[TranscriptEntry], *, tool_name: str = "todo_write"
) -> list[TodoItem]:
    """The latest well-formed todo list written in ``entries`` (``[]`` if none)."""
    for entry in reversed(entries):
        if isinstance(entry, ToolCallEntry) and entry.name == tool_name:
            items = _parse_todos(entry.arguments)
            if items is not None:
                return items
    return []


class TodoList:
    """One run's todo list; only the first ``in_progress`` item survives normalisation."""

    def __init__(self) -> None:
        self.items: list[TodoItem] = []

    def replace(self, inputs: Iterable[TodoItem]) -> list[TodoItem]:
        items = [item.model_copy() for item in inputs]
        seen_active = False
        for item in items:
            if item.status == "in_progress":
                if seen_active:
                    item.status = "pending"
                seen_active = True
        self.items = items
        return [item.model_copy() for item in items]

    def rehydrate_from(self, entries: Sequence[TranscriptEntry], *, tool_name: str) -> None:
        self.items = todos_from_entries(entries, tool_name=tool_name)


def _render_result(result: Any, ctx: RunContext[Any]) -> str:
    if not result:
        return "Todo list cleared."
    return "Updated todo list:\n" + render_todos(result)


@dataclass
class Todo:
    """Give the agent a todo list it maintains and sees again at every turn."""

    tool_name: str = "todo_write"
    inject: bool = True
    instructions: str | None = DEFAULT_INSTRUCTIONS
    name: str = "todos"

    def _make_tool(self, store: TodoList) -> Tool:
        async def todo_write(todos: list[TodoItem]) -> list[TodoItem]:
            """Replace the todo list with the complete, updated list of items."""
            return store.replace(todos)

        make = tool(
            name=self.tool_name,
            description=(
                "Write the complete todo list for the current task (replaces the previous "
                "list). Each item has `content`, `status` (pending, in_progress, completed) "
                "and an optional `active_form` shown while the item is in progress."
            ),
            result_renderer=_render_result,
            kind="think",
            title="Update todo list",
        )
        return make(todo_write)

    async def setup(self, ctx: RunContext[Any] | None = None) -> PluginInstance:
        store = TodoList()
        rehydrated = False
        tool_name = self.tool_name

        def reminder(run_ctx: RunContext[Any]) -> list[TranscriptEntry] | None:
            nonlocal rehydrated
            if not rehydrated:
                rehydrated = True
                if not store.items:
                    store.rehydrate_from(run_ctx.entries, tool_name=tool_name)
            if not store.items:
                return None
            content = (
                "<system-reminder>\n"
                "Your current todo list (keep it updated with todo_write; keep one item "
                "in progress):\n"
                f"{render_todos(store.items)}\n</system-reminder>"
            )
            return [InputEntry(role="user", content=content)]

        return PluginInstance(
            tools=[self._make_tool(store)],
            view_injectors=[reminder] if self.inject else [],
            instructions=self.instructions,
        )


__all__ = ["Todo", "TodoItem", "TodoList", "TodoStatus", "render_todos", "todos_from_entries"]
