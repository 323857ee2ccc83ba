"""``textDocument/codeAction``: the agent in the editor's code-action menu.

Answered from what the request carries and the host's in-memory state only (no model, no
editor round trip, no disk), so a menu with a thousand diagnostics opens at once. Each action
carries a ``workspace/executeCommand`` command (served by :mod:`lovia_server.lsp.action_commands`);
the titles are a contract with the editor recipes (docs/editors.md) and the VS Code extension.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
CMD_ANSWER = "lovia.action.answer"

QUICKFIX = "quickfix"
AUTOMATIC = 2
"""``CodeActionTriggerKind.Automatic``: the editor asks by itself (a lightbulb), not the user."""

ACTION_COMMANDS = (
    CMD_FIX,
    CMD_EXPLAIN,
    CMD_TESTS,
    CMD_ASK,
    CMD_TELL,
    CMD_APPROVALS,
    CMD_CANCEL,
    CMD_ANSWER,
)

MAX_PROBLEMS = 20
"""Diagnostics a *Fix this problem* carries: those touching the range, the first ones first."""


@dataclass(frozen=True)
class WaitingApproval:
    """The oldest approval still waiting, answerable from the menu itself: an editor with no
    prompt of its own (Helix has no ``window/showMessageRequest``) answers it there."""

    run_id: str
    approval_id: str
    title: str
    choices: tuple[tuple[str, str], ...]
    """(label, decision), the rejections first (as the prompt orders them)."""


@dataclass(frozen=True)
class LiveState:
    """What the menu needs of the host: the run the run actions act on, whether an approval
    waits, and (for a client without lovia's handlers) the one to answer in the menu."""

    run_id: str | None
    approvals_waiting: int
    answerable: WaitingApproval | None = None


Json = Any  # a decoded JSON value: the request is read as it came (structuring a thousand
# diagnostics into objects would cost more than answering)


def _point(position: Json) -> tuple[int, int]:
    if not isinstance(position, dict):
        return (0, 0)
    line, character = position.get("line", 0), position.get("character", 0)
    return (line if isinstance(line, int) else 0, character if isinstance(character, int) else 0)


def _span(rng: Json) -> tuple[tuple[int, int], tuple[int, int]] | None:
    if not isinstance(rng, dict):
        return None
    return _point(rng.get("start")), _point(rng.get("end"))


def _range_json(span: tuple[tuple[int, int], tuple[int, int]]) -> dict[str, Any]:
    (sl, sc), (el, ec) = span
    return {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}}


_SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}


def problem_json(uri: str, diagnostic: dict[str, Any]) -> dict[str, Any]:
    """A diagnostic as the command's argument (the shape of ``lovia/run``'s ``Problem``)."""
    severity = diagnostic.get("severity")
    out: dict[str, Any] = {
        "uri": uri,
        "severity": _SEVERITY.get(severity if isinstance(severity, int) else 1, "error"),
        "message": str(diagnostic.get("message", "")),
    }
    span = _span(diagnostic.get("range"))
    if span is not None:
        out["range"] = _range_json(span)
    source = diagnostic.get("source")
    if isinstance(source, str) and source:
        out["source"] = source
    return out


def _wanted(only: Json, kind: str | None) -> bool:
    """``context.only`` filters by kind prefix; an action with no kind matches no filter."""
    if not isinstance(only, list) or not only:
        return True
    if kind is None:
        return False
    return any(isinstance(w, str) and (kind == w or kind.startswith(f"{w}.")) for w in only)


def _touching(
    diagnostics: list[Any], span: tuple[tuple[int, int], tuple[int, int]]
) -> list[dict[str, Any]]:
    """The first :data:`MAX_PROBLEMS` diagnostics whose range touches ``span``: lines are
    compared first (most diagnostics of a long list are on other lines), malformed ones
    skipped."""
    (first, _), (last, _) = start, end = span
    out: list[dict[str, Any]] = []
    for diagnostic in diagnostics:
        try:
            rng = diagnostic["range"]
            d_start, d_end = rng["start"], rng["end"]
            if d_start["line"] > last or d_end["line"] < first:
                continue
        except (KeyError, TypeError):
            continue
        d = _span(rng)
        if d is not None and d[0] <= end and d[1] >= start:
            out.append(diagnostic)
            if len(out) == MAX_PROBLEMS:
                break
    return out


def code_actions(
    params: Json,
    *,
    allowed: Callable[[str], bool],
    live: LiveState,
) -> list[dict[str, Any]]:
    """The actions for the request, as JSON: none for a file the workspace's policy denies or
    protects (``allowed`` judges the document's URI)."""
    if not isinstance(params, dict):
        return []
    document = params.get("textDocument")
    uri = document.get("uri") if isinstance(document, dict) else None
    if not isinstance(uri, str) or not allowed(uri):
        return []
    span = _span(params.get("range")) or ((0, 0), (0, 0))
    context = params.get("context")
    context = context if isinstance(context, dict) else {}
    only = context.get("only")
    where = {"uri": uri, "range": _range_json(span)}
    out: list[dict[str, Any]] = []
    # VS Code asks on every cursor move to decide on its lightbulb (triggerKind 2): only a
    # problem there is worth one; the rest of the menu is for a request the user made.
    automatic = context.get("triggerKind") == AUTOMATIC

    if _wanted(only, QUICKFIX):
        diagnostics = context.get("diagnostics")
        touching = _touching(diagnostics if isinstance(diagnostics, list) else [], span)
        if automatic and not touching:
            return out
        args = {**where, "problems": [problem_json(uri, d) for d in touching]}
        fix: dict[str, Any] = {
            "title": FIX,
            "kind": QUICKFIX,
            "command": _command(FIX, CMD_FIX, args),
        }
        if touching:
            fix["diagnostics"] = touching
        out.append(fix)
    if (only is None or only == []) and not automatic:
        for title, command in ((EXPLAIN, CMD_EXPLAIN), (TESTS, CMD_TESTS), (ASK, CMD_ASK)):
            out.append({"title": title, "command": _command(title, command, where)})
        if live.run_id is not None:
            run = {"runId": live.run_id}
            out.append({"title": TELL, "command": _command(TELL, CMD_TELL, run)})
        waiting = live.answerable
        if waiting is not None:
            for label, decision in waiting.choices:
                title = f"lovia: {label} — {waiting.title}"
                answer = {
                    "runId": waiting.run_id,
                    "approvalId": waiting.approval_id,
                    "decision": decision,
                }
                out.append({"title": title, "command": _command(title, CMD_ANSWER, answer)})
        if live.approvals_waiting:
            out.append({"title": APPROVALS, "command": _command(APPROVALS, CMD_APPROVALS, {})})
        if live.run_id is not None:
            run = {"runId": live.run_id}
            out.append({"title": CANCEL, "command": _command(CANCEL, CMD_CANCEL, run)})
    return out


def _command(title: str, command: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"title": title, "command": command, "arguments": [args]}


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
    "WaitingApproval",
    "code_actions",
    "problem_json",
]
