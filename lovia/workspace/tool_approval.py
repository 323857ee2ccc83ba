"""The workspace tools' approval predicates: when a path or a command needs the user's ``ask``."""

from __future__ import annotations

from typing import Any

from lovia.run_context import RunContext
from lovia.tools.base import ApprovalPredicate
from lovia.workspace.policy import FileOp


def path_needs_approval(*ops: FileOp) -> ApprovalPredicate:
    """``needs_approval`` predicate: True iff some op on ``args['path']`` is ``ask``.

    ``deny`` returns False (the session raises a clear error instead); a non-string path
    or a failing decision returns True (fail closed).
    """

    def predicate(args: dict[str, Any], ctx: RunContext[Any]) -> bool:
        workspace = getattr(ctx, "workspace", None)
        if workspace is None:
            return False
        path = args.get("path", ".")
        if not isinstance(path, str):
            return True
        try:
            decisions = [workspace.decide_path(path, write=op == "write") for op in ops]
        except Exception:
            return True
        if "deny" in decisions:
            return False
        return "ask" in decisions or any(d not in ("allow", "ask", "deny") for d in decisions)

    return predicate


def _shell_needs_approval(args: dict[str, Any], ctx: RunContext[Any]) -> bool:
    workspace = getattr(ctx, "workspace", None)
    if workspace is None:
        return False
    command = args.get("command")
    cwd = args.get("cwd", ".")
    if cwd is None:
        cwd = "."
    if not isinstance(command, str) or not isinstance(cwd, str):
        return True
    try:
        return bool(workspace.decide_command(command, cwd) == "ask")
    except Exception:
        return True
