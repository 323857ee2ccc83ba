"""``textDocument/codeAction``: the agent in the editor's code-action menu.

Answered from what the request carries and the host's in-memory state only (no model, no
editor round trip, no disk), so a menu with a thousand diagnostics opens at once. Each action
carries a ``workspace/executeCommand`` command (served by :mod:`lovia_server.lsp.action_commands`);
the titles are a contract with the editor recipes (docs/editors.md) and the VS Code extension.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

FIX = "lovia: Fix this problem"
EXPLAIN = "lovia: Explain this"
TESTS = "lovia: Write tests for this"
ASK = "lovia: Ask about this…"
TELL = "lovia: Tell the agent…"
APPROVALS = "lovia: Show pending approvals"
CANCEL = "lovia: Cancel"

CMD_FIX = "lovia.action.fix"
CMD_EXPLAIN = "lovia.action.explain"
CMD_TESTS = "lovia.action.tests"
CMD_ASK = "lovia.action.ask"
CMD_TELL = "lovia.action.tell"
CMD_APPROVALS = "lovia.action.approvals"
CMD_CANCEL = "lovia.action.cancel"

ACTION_COMMANDS = (CMD_FIX, CMD_EXPLAIN, CMD_TESTS, CMD_ASK, CMD_TELL, CMD_APPROVALS, CMD_CANCEL)

MAX_PROBLEMS = 20
"""Diagnostics a *Fix this problem* carries: those touching the range, the first ones first."""


@dataclass(frozen=True)
class LiveState:
    """What the menu needs of the host: the run the run actions act on, and whether an
    approval waits."""

    run_id: str | None
    approvals_waiting: int


def _touches(diagnostic: lsp.Diagnostic, rng: lsp.Range) -> bool:
    d = diagnostic.range
    starts_before_end = (d.start.line, d.start.character) <= (rng.end.line, rng.end.character)
    ends_after_start = (d.end.line, d.end.character) >= (rng.start.line, rng.start.character)
    return starts_before_end and ends_after_start


_SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}


def _range_json(rng: lsp.Range) -> dict[str, Any]:
    return {
        "start": {"line": rng.start.line, "character": rng.start.character},
        "end": {"line": rng.end.line, "character": rng.end.character},
    }


def problem_json(uri: str, diagnostic: lsp.Diagnostic) -> dict[str, Any]:
    """A diagnostic as the command's argument (the shape of ``lovia/run``'s ``Problem``)."""
    out: dict[str, Any] = {
        "uri": uri,
        "range": _range_json(diagnostic.range),
        "severity": _SEVERITY.get(int(diagnostic.severity or 1), "error"),
        "message": diagnostic.message,
    }
    if diagnostic.source:
        out["source"] = diagnostic.source
    return out


def _wanted(only: Sequence[str] | None, kind: str | None) -> bool:
    """``context.only`` filters by kind prefix; an action with no kind matches no filter."""
    if not only:
        return True
    if kind is None:
        return False
    return any(kind == want or kind.startswith(f"{want}.") for want in only)


def code_actions(
    params: lsp.CodeActionParams,
    *,
    allowed: Callable[[str], bool],
    live: LiveState,
) -> list[lsp.CodeAction]:
    """The actions for the request: none for a file the workspace's policy denies or
    protects (``allowed`` judges the document's URI)."""
    uri = params.text_document.uri
    if not allowed(uri):
        return []
    rng = params.range
    only = params.context.only
    where = {"uri": uri, "range": _range_json(rng)}
    out: list[lsp.CodeAction] = []

    if _wanted(only, lsp.CodeActionKind.QuickFix):
        touching: list[lsp.Diagnostic] = []
        for diagnostic in params.context.diagnostics:
            if _touches(diagnostic, rng):
                touching.append(diagnostic)
                if len(touching) == MAX_PROBLEMS:
                    break
        args = {**where, "problems": [problem_json(uri, d) for d in touching]}
        out.append(
            lsp.CodeAction(
                title=FIX,
                kind=lsp.CodeActionKind.QuickFix,
                diagnostics=touching or None,
                is_preferred=False,
                command=lsp.Command(title=FIX, command=CMD_FIX, arguments=[args]),
            )
        )
    if not only:
        for title, command in ((EXPLAIN, CMD_EXPLAIN), (TESTS, CMD_TESTS), (ASK, CMD_ASK)):
            out.append(_plain(title, command, where))
        if live.run_id is not None:
            run = {"runId": live.run_id}
            out.append(_plain(TELL, CMD_TELL, run))
        if live.approvals_waiting:
            out.append(_plain(APPROVALS, CMD_APPROVALS, {}))
        if live.run_id is not None:
            out.append(_plain(CANCEL, CMD_CANCEL, {"runId": live.run_id}))
    return out


def _plain(title: str, command: str, args: dict[str, Any]) -> lsp.CodeAction:
    return lsp.CodeAction(
        title=title, command=lsp.Command(title=title, command=command, arguments=[args])
    )


def uri_path(uri: str) -> Path | None:
    from lovia_server.host.uris import uri_to_path

    path = uri_to_path(uri)
    return path.resolve() if path is not None else None


__all__ = [
    "ACTION_COMMANDS",
    "APPROVALS",
    "ASK",
    "CANCEL",
    "EXPLAIN",
    "FIX",
    "TELL",
    "TESTS",
    "LiveState",
    "code_actions",
    "problem_json",
]
