"""The offline demo model (``lovia:demo``): the whole loop without a model or an API key.

It is clearly a script — it does the same thing in every workspace: plan with a todo list, list
the files, read the README, propose an edit to it (an approval with a diff) and answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lovia.agent import Agent
from lovia.plugins.todo import Todo
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import ToolResultEntry
from lovia.workspace.tools import edit_file, list_files, read_file

DEMO_FILE = "README.md"


def _todos(*statuses: str) -> dict[str, Any]:
    items = [
        ("Look around the workspace", "Looking around the workspace"),
        (f"Read {DEMO_FILE}", f"Reading {DEMO_FILE}"),
        (f"Tidy up {DEMO_FILE}", f"Tidying up {DEMO_FILE}"),
    ]
    return {
        "todos": [
            {"content": content, "status": status, "active_form": active}
            for (content, active), status in zip(items, statuses, strict=True)
        ]
    }


class DemoModel(ScriptedProvider):
    """A scripted provider whose edit adapts to the README it just read."""

    name = "lovia-demo"
    model = "demo"

    async def stream(self, entries: Any, **kw: Any) -> Any:
        upcoming = self.script[0].tool_calls if self.script else []
        if upcoming and upcoming[0].id == "demo_edit":  # base the edit on what was read
            readme = next(
                (
                    e.output
                    for e in entries
                    if isinstance(e, ToolResultEntry) and e.call_id == "demo_read"
                ),
                "",
            )
            lines = readme.splitlines()[1:]  # drop the read_file header line
            old = next((line for line in lines if line.strip()), "")
            self.script[0] = call(
                edit_file.name,
                {"path": DEMO_FILE, "old": old, "new": _tidy(old)},
                call_id="demo_edit",
            )
        elif self.script and not upcoming:  # the answer: say what became of the edit
            edit = _result(entries, "demo_edit")
            if edit is not None and "not approved" in edit.output:
                said = edit.output.partition("The user said:")[2].strip()
                self.script[0] = text(_rejected_answer(said))
        async for delta in super().stream(entries, **kw):
            yield delta


def _result(entries: Any, call_id: str) -> ToolResultEntry | None:
    return next(
        (e for e in entries if isinstance(e, ToolResultEntry) and e.call_id == call_id), None
    )


def _rejected_answer(reason: str) -> str:
    why = f" You said: “{reason}”." if reason else ""
    return (
        f"Understood — you rejected my edit to `{DEMO_FILE}`, so I left it unchanged.{why}\n\n"
        "This was the **offline demo model**: it follows a script. Configure a real model "
        "with `lovia.model` or `LOVIA_MODEL` to work on your own requests."
    )


def _tidy(line: str) -> str:
    stripped = line.strip()
    if stripped.startswith("#"):
        return stripped.rstrip(".") + " — tidied by lovia"
    return stripped[:1].upper() + stripped[1:] if stripped else "Tidied by lovia."


def demo_agent(root: Path) -> Agent[Any]:
    todo = Todo()
    plan = todo.tool_name
    script = [
        call(plan, _todos("in_progress", "pending", "pending"), call_id="demo_plan"),
        call(list_files.name, {"path": "."}, call_id="demo_list"),
        call(read_file.name, {"path": DEMO_FILE}, call_id="demo_read"),
        call(plan, _todos("completed", "completed", "in_progress"), call_id="demo_plan2"),
        call(edit_file.name, {"path": DEMO_FILE, "old": "", "new": ""}, call_id="demo_edit"),
        call(plan, _todos("completed", "completed", "completed"), call_id="demo_done"),
        text(
            f"Here is what I did in `{root.name or root}`:\n\n"
            f"- listed the files and read `{DEMO_FILE}`;\n"
            f"- proposed a small edit to `{DEMO_FILE}` — edits need your approval, with a diff "
            "first (`lovia.permissions`).\n\n"
            "This was the **offline demo model**: it follows a script. Configure a real model "
            "with `lovia.model` or `LOVIA_MODEL` to work on your own requests."
        ),
    ]
    return Agent(
        name="lovia-demo",
        instructions="You are the lovia demo agent.",
        model=DemoModel(script, record=False),
        plugins=[todo],
    )


__all__ = ["DEMO_FILE", "demo_agent"]
