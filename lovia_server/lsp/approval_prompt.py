"""An approval asked with ``window/showMessageRequest``: the diff readable first, a safe default.

Editors show the first action as the default (eglot pre-fills it, so RET picks it): the first is
never an *Accept*. Where the client can open documents (``window/showDocument``) the first is
*Show diff*, which opens the change as a ``.diff`` file and asks again; elsewhere the diff is in
the message itself, cut at :data:`DIFF_LINES` lines ("… N more lines").
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from lovia_server import protocol as p

SHOW_DIFF = "Show diff"
DIFF_LINES = 40
"""Lines of the diff a prompt shows in its message."""


def unified_diff(diffs: list[p.FileDiff]) -> list[str]:
    """The approval's files as one unified diff, line by line (no line ends)."""
    out: list[str] = []
    for diff in diffs:
        old = (diff.old_text or "").splitlines()
        new = diff.new_text.splitlines()
        before = "/dev/null" if diff.old_text is None else diff.path
        out.extend(difflib.unified_diff(old, new, before, diff.path, lineterm=""))
    return out


def bounded(lines: list[str], limit: int = DIFF_LINES) -> str:
    if len(lines) <= limit:
        return "\n".join(lines)
    return "\n".join([*lines[:limit], f"… {len(lines) - limit} more lines"])


def safe_first(options: list[p.ApprovalOption]) -> list[p.ApprovalOption]:
    """Rejections first (the default an editor pre-selects), then the allowing choices; within
    each, the one-time choice before the "always" one."""
    return sorted(options, key=lambda o: (o.decision.allows, o.decision.always))


@dataclass(frozen=True)
class Prompt:
    message: str
    titles: list[str]
    """The actions, in order; each but :data:`SHOW_DIFF` is an option's label."""


def prompt(payload: p.ApprovalRequested, *, can_show_document: bool, diff_shown: bool) -> Prompt:
    """The message and actions for one ask (``diff_shown``: the diff was opened already)."""
    child = payload.subagent
    who = f"lovia [{child.task_id} {child.name}]" if child is not None else "lovia"
    message = f"{who}: {payload.title}\n{payload.detail}".strip()
    if payload.warning:
        message = f"{message}\nWarning: {payload.warning}"
    titles = [o.label for o in safe_first(payload.options)]
    lines = unified_diff(payload.diff or [])
    if lines and can_show_document:
        if not diff_shown:
            titles.insert(0, SHOW_DIFF)
        message = f"{message}\n({len(lines)} diff lines: {SHOW_DIFF} opens them)"
    elif lines:
        message = f"{message}\n{bounded(lines)}"
    return Prompt(message, titles)


def write_preview(payload: p.ApprovalRequested, folder: Path) -> Path:
    """The approval's diff as a file the editor can open (named for the approval)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{payload.approval_id}.diff"
    path.write_text("\n".join(unified_diff(payload.diff or [])) + "\n", encoding="utf-8")
    return path


def decision_for(payload: p.ApprovalRequested, title: str) -> p.ApprovalChoice | None:
    for option in payload.options:
        if option.label == title:
            return option.decision
    return None


__all__ = [
    "SHOW_DIFF",
    "Prompt",
    "bounded",
    "decision_for",
    "prompt",
    "safe_first",
    "write_preview",
]
