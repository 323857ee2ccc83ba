"""Edits the user reviewed hunk by hunk (or rewrote) before approving them.

``lovia/approve`` may carry ``edits``: per file, the text the user approved instead of the
tool's proposal. They travel in the call's :class:`ApprovalAnswer`, which lovia core hands to
the approved call as ``current_approval``. The editor workspace wraps every previewable tool of
the conversation's workspace with :func:`reviewed_tools`: when the call's answer carries a
reviewed version, the tool itself does not run; the approved text is written through the same
workspace session (ACL, unsaved buffers, ``workspaceEdit`` mode all apply) and the model is
told exactly what was applied and what of its proposal was not.

The approved text is the user's change of the text the approval card showed, and it lands as a
three-way merge (``base``: the card's text, ``theirs``: the approved text, ``ours``: the file
now), so a line the user typed after the card appeared is kept; a change that overlaps it
writes nothing and fails the call with a conflict error (``LocalWorkspaceSession.write_text``).
"""

from __future__ import annotations

import copy
import difflib
from typing import Any

from lovia.run_context import current_approval
from lovia.tools.base import Tool, ToolInvoker
from lovia.tools.presentation import can_preview
from lovia.workspace.errors import WorkspaceError
from lovia_server.host.approval_answer import ApprovalAnswer, ReviewedFile

_MAX_DIFF_CHARS = 12_000


def _diff(a: str, b: str, from_label: str, to_label: str) -> str:
    lines = difflib.unified_diff(
        a.splitlines(keepends=True), b.splitlines(keepends=True), from_label, to_label, n=2
    )
    no_newline = "\n\\ No newline at end of file\n"
    text = "".join(line if line.endswith("\n") else line + no_newline for line in lines)
    if len(text) > _MAX_DIFF_CHARS:
        cut = text[:_MAX_DIFF_CHARS]
        text = cut[: cut.rfind("\n") + 1] + f"[... diff cut at {_MAX_DIFF_CHARS} characters ...]\n"
    return text


def review_note(files: list[ReviewedFile], merged: frozenset[str] = frozenset()) -> str:
    """What the model is told instead of the tool's own result."""
    parts = [
        "The user reviewed this change before it was applied and approved a different version "
        "(some hunks accepted, others rejected, or the text edited by hand). What was written is "
        "what the user approved, not your proposal."
    ]
    for f in files:
        applied = _diff(f.old_text or "", f.applied, f"{f.path} (before)", f"{f.path} (applied)")
        parts.append(
            f"{f.path}: applied (the file before your call -> now):\n"
            + (applied or "(nothing: the file is unchanged)\n")
        )
        missing = _diff(f.applied, f.proposed, "applied", "your proposal")
        if missing:
            parts.append(f"{f.path}: of your proposal, this was NOT applied:\n{missing}")
        if f.path in merged:
            parts.append(
                f"{f.path}: the file had changed after the approval was shown (the user or "
                "another program edited other lines); the approved change was merged into it "
                "and those changes were kept."
            )
    parts.append("Build on the text as applied; read the file again before editing it further.")
    return "\n".join(parts)


def reviewed_tools(tools: list[Tool], session: Any) -> list[Tool]:
    """``tools`` with the review policy outermost on every previewable (edit) tool."""
    out = []
    for tool in tools:
        if can_preview(tool):
            tool = copy.copy(tool)
            tool.policies = (_review_policy(session, tool.name), *tool.policies)
        out.append(tool)
    return out


def _review_policy(session: Any, name: str) -> Any:
    async def reviewed(invoke: ToolInvoker, args: dict[str, Any], ctx: Any) -> Any:
        answer = current_approval.get()
        if not isinstance(answer, ApprovalAnswer):
            return await invoke(args, ctx)
        files = answer.edits
        if not files:
            card = answer.shown[0] if name == "write_file" and answer.shown else None
            if card is not None and _as_shown(card, args):
                return await _write_as_shown(session, card, args)
            return await invoke(args, ctx)
        merged = set()
        for f in files:
            current = await session.current_text(f.path)
            if None not in (current, f.old_text) and current != f.old_text:
                merged.add(f.path)
            change = await session.write_text(
                f.path, f.applied, create_only=f.old_text is None, base=f.old_text
            )
            if not getattr(change, "ok", True):  # created meanwhile by someone else
                raise WorkspaceError(
                    f"{f.path} was created by someone else after the approval was shown; "
                    "nothing was written.",
                    hint="Read the file and propose the change anew.",
                )
            session.known_in_part(f.path)  # the user's text, not the agent's
        return review_note(list(files), frozenset(merged))

    return reviewed


def _as_shown(card: ReviewedFile, args: dict[str, Any]) -> bool:
    """Whether the call replaces an existing file with the card's proposal."""
    return (
        card.old_text is not None
        and isinstance(args.get("path"), str)
        and args.get("content") == card.proposed
        and not args.get("create_only")
    )


async def _write_as_shown(session: Any, card: ReviewedFile, args: dict[str, Any]) -> Any:
    """An approved ``write_file``, as the card showed it: refused when the agent built it from
    an older text than the card's (as the tool itself would be), else the card's change merged
    into the file as it is now (the user may have typed in it since the card appeared).
    ``edit_file`` needs none of this: its replacement applies to the current text."""
    session.check_known(args["path"], card.old_text)
    return await session.write_text(args["path"], card.proposed, base=card.old_text)


__all__ = ["ReviewedFile", "review_note", "reviewed_tools"]
