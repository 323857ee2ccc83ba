"""A scripted demo agent (``lovia:demo``): shows the whole loop without a model or API key.

It plans with a todo list, looks around, writes a small script, asks to run it (a shell
command needs approval under the default ``coding`` preset) and reports back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lovia.agent import Agent
from lovia.plugins.todo import Todo
from lovia.testing import ScriptedProvider, call, text

DEMO_FILE = "hello_lovia.py"
DEMO_SCRIPT = '''"""Written by the lovia demo agent."""

import platform


def main() -> None:
    print(f"Hello from lovia on Python {platform.python_version()}!")


if __name__ == "__main__":
    main()
'''


def _todos(*statuses: str) -> dict[str, Any]:
    items = [
        ("Look at the workspace", "Looking at the workspace"),
        (f"Write {DEMO_FILE}", f"Writing {DEMO_FILE}"),
        (f"Run {DEMO_FILE}", f"Running {DEMO_FILE}"),
    ]
    return {
        "todos": [
            {"content": content, "status": status, "active_form": active}
            for (content, active), status in zip(items, statuses, strict=True)
        ]
    }


def demo_agent(root: Path) -> Agent[Any]:
    script = [
        call("todo_write", _todos("in_progress", "pending", "pending"), call_id="demo_plan"),
        call("list_files", {"path": "."}, call_id="demo_list"),
        call("todo_write", _todos("completed", "in_progress", "pending"), call_id="demo_plan2"),
        call("write_file", {"path": DEMO_FILE, "content": DEMO_SCRIPT}, call_id="demo_write"),
        call("todo_write", _todos("completed", "completed", "in_progress"), call_id="demo_plan3"),
        call(
            "shell",
            {"command": f"python3 {DEMO_FILE}", "description": f"Run {DEMO_FILE}"},
            call_id="demo_run",
        ),
        call("todo_write", _todos("completed", "completed", "completed"), call_id="demo_done"),
        text(
            f"Done. I created **`{DEMO_FILE}`** in `{root.name or root}` and ran it.\n\n"
            "- It prints a greeting with your Python version.\n"
            "- Running it needed your approval: shell commands are gated by the workspace "
            "policy (`lovia.permissions`).\n\n"
            "Configure a real model with `lovia.model` (or `LOVIA_MODEL`) to chat for real."
        ),
    ]
    return Agent(
        name="lovia-demo",
        instructions="You are the lovia demo agent.",
        model=ScriptedProvider(script, record=False),
        plugins=[Todo()],
    )


__all__ = ["DEMO_FILE", "demo_agent"]
