"""The offline demo model (``lovia:demo``): the whole loop without a model or an API key.

It is clearly a script — it does the same thing in every workspace: plan with a todo list, list
the files, read the README, propose an edit to it (an approval with a diff) and answer. A prompt
that mentions a subagent plays the subagent script instead: the demo spawns a helper that
proposes a new file (the helper's approval, labelled with its name), waits for its report and
answers with it. A phrase in double quotes in the prompt becomes the edit's note instead of
"tidied by lovia" (``Tidy up the README "variant A"``), so that runs of the demo side by side
(worktree runs, docs/worktrees.md) make changes you can tell apart.
"""

from __future__ import annotations

import re
from collections import deque
from pathlib import Path
from typing import Any

from lovia.agent import Agent
from lovia.context.prompts import REQUIRED_SECTIONS, SUMMARY_SYSTEM_PROMPT
from lovia.plugins.subagents import Subagents
from lovia.plugins.todo import Todo
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import InputEntry, ToolResultEntry
from lovia.workspace.tools import edit_file, list_files, read_file, write_file

DEMO_FILE = "README.md"
DEFAULT_NOTE = "tidied by lovia"
HELPER = "demo-helper"
HELPER_FILE = "NOTES.md"
# The demo runs in a terminal (lovia chat) and in editors: it names how each picks a model.
CLOSING = (
    "This was the **offline demo model**: it follows a script. To work on your own requests, "
    "choose a real model: `lovia chat --model openai:gpt-4.1-mini` (or `LOVIA_MODEL`) in a "
    "terminal, the `lovia.model` setting in an editor."
)
HELPER_TASK = f"Create {HELPER_FILE} with a short note that the lovia demo helper was here."


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

    def __init__(self, script: Any, subagent_script: Any = (), **kw: Any) -> None:
        super().__init__(script, **kw)
        self._subagent_script = list(subagent_script)
        self._chosen = False
        self._note = DEFAULT_NOTE

    def _choose(self, entries: Any) -> None:
        """The first call picks the script: the subagent one when the prompt asks for it."""
        self._chosen = True
        prompt = next(
            (
                e.content
                for e in reversed(list(entries))
                if isinstance(e, InputEntry) and e.role == "user"
            ),
            "",
        )
        quoted = re.search(r'"([^"\n]{1,60})"', str(prompt))
        if quoted and quoted.group(1).strip():
            self._note = quoted.group(1).strip()
        if self._subagent_script and "subagent" in str(prompt).lower():
            self.script = deque(self._subagent_script)

    async def stream(self, entries: Any, **kw: Any) -> Any:
        summary = _summary_request(entries)
        if summary is not None:  # /compact (or a full context): a summary, not the script
            self.script.appendleft(text(_demo_summary(summary)))
            async for delta in super().stream(entries, **kw):
                yield delta
            return
        if not self._chosen:
            self._choose(entries)
        if self.script and not self.script[0].tool_calls and _result(entries, "demo_wait"):
            self.script[0] = text(_helper_answer(entries))
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
                {"path": DEMO_FILE, "old": old, "new": _tidy(old, self._note)},
                call_id="demo_edit",
            )
        elif self.script and not upcoming:  # the answer: say what became of the edit
            edit = _result(entries, "demo_edit")
            if edit is not None and "not approved" in edit.output:
                said = edit.output.partition("The user said:")[2].strip()
                self.script[0] = text(_rejected_answer(said))
        async for delta in super().stream(entries, **kw):
            yield delta


def _summary_request(entries: Any) -> str | None:
    """The summariser's request (its system prompt first), or None for a turn of the run."""
    listed = list(entries)
    if (
        len(listed) >= 2
        and isinstance(listed[0], InputEntry)
        and listed[0].role == "system"
        and str(listed[0].content) == SUMMARY_SYSTEM_PROMPT
    ):
        return str(listed[1].content) if isinstance(listed[1], InputEntry) else ""
    return None


def _demo_summary(ask: str) -> str:
    """A summary in the six sections the summariser asks for, with the user's focus if any."""
    focus = re.search(r"<focus>\s*(.*?)\s*</focus>", ask, re.S)
    kept = focus.group(1) if focus else "nothing in particular"
    lines = (
        "The user tried lovia's offline demo.",
        "The demo tidied (or was refused) README.md's first line.",
        f"The user asked to keep: {kept}.",
        "README.md",
        "This summary comes from the offline demo model.",
        "Choose a real model to work on your own requests.",
    )
    return "\n\n".join(
        f"{heading}\n{line}" for heading, line in zip(REQUIRED_SECTIONS, lines, strict=True)
    )


def _result(entries: Any, call_id: str) -> ToolResultEntry | None:
    return next(
        (e for e in entries if isinstance(e, ToolResultEntry) and e.call_id == call_id), None
    )


def _helper_answer(entries: Any) -> str:
    texts = [
        e.output if isinstance(e, ToolResultEntry) else str(e.content)
        for e in entries
        if isinstance(e, ToolResultEntry | InputEntry)
    ]
    report = next((t for t in texts if "[subagent t1:" in t), "")
    said = str(report).partition("\n")[2].strip() or "it finished without a report"
    return (
        f"My helper subagent `{HELPER}` worked in the background and reported: {said}\n\n" + CLOSING
    )


def _helper() -> Agent[Any]:
    """The demo's subagent: proposes a new file (an approval), then reports."""
    note = "# Notes\n\nThe lovia demo helper was here.\n"
    return Agent(
        name=HELPER,
        instructions="You are the lovia demo helper.",
        model=ScriptedProvider(
            [
                call(write_file.name, {"path": HELPER_FILE, "content": note}, call_id="help_w"),
                text(f"I created {HELPER_FILE}."),
            ],
            record=False,
        ),
    )  # write_file comes with the editor workspace the host binds to it


def _rejected_answer(reason: str) -> str:
    why = f" You said: “{reason}”." if reason else ""
    return (
        f"Understood — you rejected my edit to `{DEMO_FILE}`, so I left it unchanged.{why}\n\n"
        + CLOSING
    )


def _tidy(line: str, note: str = DEFAULT_NOTE) -> str:
    stripped = line.strip()
    if stripped.startswith("#"):
        return stripped.rstrip(".") + f" — {note}"
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
            "first (`lovia.permissions`).\n\n" + CLOSING
        ),
    ]
    subagent_script = [
        call("spawn_subagent", {"agent": HELPER, "prompt": HELPER_TASK}, call_id="demo_spawn"),
        call("wait_subagents", {"timeout_seconds": 600}, call_id="demo_wait"),
        text("(replaced by the helper's report)"),
    ]
    return Agent(
        name="lovia-demo",
        instructions="You are the lovia demo agent.",
        model=DemoModel(script, subagent_script, record=False),
        plugins=[todo, Subagents([_helper()], max_concurrent=1)],
    )


__all__ = ["DEMO_FILE", "HELPER", "HELPER_FILE", "demo_agent"]
