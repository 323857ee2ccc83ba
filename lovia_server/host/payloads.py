"""Pure mappings from lovia runs to protocol payloads: tool kinds, titles, locations, usage.

Nothing here touches the server or the disk; the supervisor feeds it what it knows. Tools are
never known by name: kinds, titles and locations come from the tool's own presentation
(``lovia.tools.presentation``), given the ``Tool`` the run resolved the call to.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lovia.messages import Usage
from lovia.tools import presentation
from lovia.tools.base import Tool
from lovia.workspace import LocalWorkspace, WorkspacePolicy
from lovia.workspace.errors import WorkspaceError
from lovia.workspace.paths import resolve_path
from lovia.workspace.protected import protected_command_targets, protected_path
from lovia.workspace.workspace import WorkspaceSessionBinding
from lovia_server import protocol as p
from lovia_server.host.prices import Price
from lovia_server.host.uris import path_uri, uri_to_path


def tool_kind(tool: Tool | None) -> str:
    """The call's kind as the tool declares it (``other`` for a tool the run did not name)."""
    return presentation.tool_kind(tool)


def tool_source(tool: Tool | None) -> str | None:
    """Who serves the tool when it is not the agent's own (an MCP server's name)."""
    return tool.source if tool is not None else None


def parse_arguments(arguments: str) -> dict[str, Any]:
    """The call's arguments as an object; anything else is wrapped as ``{"_raw": text}``."""
    try:
        value = json.loads(arguments or "{}")
    except (json.JSONDecodeError, TypeError):
        return {"_raw": arguments}
    return value if isinstance(value, dict) else {"_raw": arguments}


def tool_title(tool: Tool | None, name: str, args: Mapping[str, Any]) -> str:
    """A short human title for a call, e.g. ``Edit src/app.py``, from the tool's declaration."""
    return presentation.call_title(tool, name, args)


def resolve_display_path(path: str, root: Path, cwd: Path | None = None) -> Path:
    """Where a tool's path argument points (lexically; the workspace judges the real target)."""
    expanded = os.path.expanduser(path)
    candidate = Path(expanded)
    if not candidate.is_absolute():
        candidate = (cwd or root) / candidate
    return Path(os.path.normpath(candidate))


def tool_locations(tool: Tool | None, args: Mapping[str, Any], root: Path) -> list[dict[str, Any]]:
    """Files a call touches, as ``{path, uri, line?}`` for click-through in the editor."""
    out: list[dict[str, Any]] = []
    for location in presentation.call_locations(tool, args):
        where = resolve_display_path(location.path, root)
        loc: dict[str, Any] = {"path": str(where), "uri": path_uri(where)}
        if location.line is not None:
            loc["line"] = location.line
        out.append(loc)
    return out


def usage_payload(
    usage: Usage,
    *,
    context_tokens: int | None,
    context_window: int | None,
    price: Price | None = None,
    turn: Usage | None = None,
    earlier_cost_usd: float | None = None,
) -> p.Usage:
    """A run's usage on the wire: the counts, ``turn`` (the last model call's own counts), and
    with a price its cost and the session's (``earlier_cost_usd`` is the other runs')."""
    cost = price.cost(usage) if price is not None else None
    return p.Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        context_tokens=context_tokens,
        context_window=context_window,
        cost_usd=round(cost, 6) if cost is not None else None,
        session_cost_usd=(
            round(cost + earlier_cost_usd, 6)
            if cost is not None and earlier_cost_usd is not None
            else None
        ),
        turn=(
            p.TurnUsage(
                input_tokens=turn.input_tokens,
                output_tokens=turn.output_tokens,
                cache_read_tokens=turn.cache_read_tokens,
                cache_write_tokens=turn.cache_write_tokens,
            )
            if turn is not None
            else None
        ),
    )


def error_payload(exc: BaseException) -> p.RunError:
    hint = getattr(exc, "hint", None)
    return p.RunError(
        type=type(exc).__name__,
        message=getattr(exc, "message", None) or str(exc) or type(exc).__name__,
        hint=str(hint) if hint else None,
    )


def file_diffs(diffs: Iterable[Mapping[str, Any]]) -> list[p.FileDiff]:
    """A tool's preview (``presentation.preview_call``: path, oldText, newText) as wire diffs."""
    return [
        p.FileDiff(
            path=diff["path"],
            uri=path_uri(Path(diff["path"])),
            old_text=diff["oldText"],
            new_text=diff["newText"],
        )
        for diff in diffs
    ]


def todo_items(items: Iterable[Any]) -> list[p.TodoItem]:
    out = []
    for item in items:
        data = item.model_dump() if hasattr(item, "model_dump") else dict(item)
        out.append(
            p.TodoItem(
                content=data.get("content", ""),
                status=data.get("status", "pending"),
                active_form=data.get("active_form") or None,
            )
        )
    return out


def output_payload(output: Any) -> Any:
    """A run's output as JSON: pydantic models dumped, scalars as is, anything else ``str``."""
    if hasattr(output, "model_dump"):
        return output.model_dump(mode="json")
    try:
        json.dumps(output)
    except (TypeError, ValueError):
        return str(output)
    return output


def _options(
    allow: str, allow_always: str, reject: str, reject_always: str
) -> list[p.ApprovalOption]:
    labels = (allow, allow_always, reject, reject_always)
    return [
        p.ApprovalOption(decision=d, label=label)
        for d, label in zip(p.ApprovalChoice, labels, strict=True)
    ]


APPROVAL_OPTIONS: dict[str, list[p.ApprovalOption]] = {
    "file": _options(
        "Accept", "Accept always for this file", "Reject", "Always reject for this file"
    ),
    "command": _options("Run", "Always run this command", "Don't run", "Never run this command"),
    "other": _options("Allow", "Always allow", "Reject", "Always reject"),
}
PROTECTED_OPTIONS: list[p.ApprovalOption] = [
    p.ApprovalOption(decision=p.ApprovalChoice.ALLOW_ONCE, label="Accept this change"),
    p.ApprovalOption(decision=p.ApprovalChoice.REJECT_ONCE, label="Reject"),
]
"""A change to protected paths is approved one call at a time: no "always"."""


def approval_command(tool: Tool | None, args: Mapping[str, Any]) -> str | None:
    """The command line an ``execute`` call runs (its ``command`` argument), if it has one."""
    command = args.get("command")
    return command if tool_kind(tool) == "execute" and isinstance(command, str) else None


def _command_cwd(args: Mapping[str, Any], root: Path) -> str:
    """The directory a command runs in, resolved as the workspace resolves it."""
    cwd = args.get("cwd")
    text = cwd if isinstance(cwd, str) and cwd else "."
    try:
        return resolve_path(Path(os.path.realpath(root)), text).abs_posix
    except WorkspaceError:
        return text


def approval_subject(tool: Tool | None, name: str, args: Mapping[str, Any], root: Path) -> str:
    """What an "always" decision is remembered for: the exact command, the file, or the tool.

    A command is remembered byte for byte together with the directory it runs in
    (``rm -rf build`` allowed in ``a/`` is not allowed in ``b/``; ``rm  x`` is not
    ``rm x``), as ``name:["<resolved cwd>", "<command>"]``.
    """
    command = approval_command(tool, args)
    if command is not None:
        return f"{name}:{json.dumps([_command_cwd(args, root), command], ensure_ascii=False)}"
    locations = tool_locations(tool, args, root)
    if len(locations) == 1:
        return f"{name}:{locations[0]['path']}"
    if locations:  # every path: "always" for one set of paths allows no other
        return f"{name}:{json.dumps([loc['path'] for loc in locations], ensure_ascii=False)}"
    return f"tool:{name}"


async def workspace_policy(workspace: Any) -> WorkspacePolicy | None:
    """The policy a run's workspace enforces now (a live session's, when bound to one)."""
    if isinstance(workspace, WorkspaceSessionBinding):
        policy = getattr(await workspace.open(), "policy", None)
        return policy if isinstance(policy, WorkspacePolicy) else workspace.workspace.policy
    if isinstance(workspace, LocalWorkspace):
        return workspace.policy
    return None


def protected_targets(
    policy: WorkspacePolicy | None, tool: Tool | None, args: Mapping[str, Any], root: Path
) -> list[str]:
    """Protected paths an edit, delete, shell or other (an MCP tool that may write) call
    would change (empty for anything else)."""
    if policy is None:
        return []
    command = approval_command(tool, args)
    if command is not None:
        cwd = args.get("cwd")
        return protected_command_targets(
            policy, root, command, cwd if isinstance(cwd, str) else "."
        )
    if tool_kind(tool) not in ("edit", "delete", "move", "other"):
        return []  # a tool of another kind says it does not write (an MCP read-only hint)
    found: list[str] = []
    for location in presentation.call_locations(tool, args):
        hit = protected_path(policy, root, location.path)
        if hit is not None and hit not in found:
            found.append(hit)
    return found


_VERDICTS = {
    "allow": "allowed",
    "ask": "needs this approval (outside the workspace or a rule asks)",
    "deny": "denied",
}


def judged_paths(policy: WorkspacePolicy | None, paths: list[str], root: Path) -> str | None:
    """The paths a call names with the workspace's verdict on reading each, one a line, for
    an approval card (an MCP tool's arguments: the server cannot be watched, only judged)."""
    if policy is None or not paths:
        return None
    lines = []
    for path in paths:
        try:
            resolved = resolve_path(Path(os.path.realpath(root)), path)
        except WorkspaceError:
            lines.append(f"- {path}: cannot be resolved")
            continue
        verdict = policy.decide_path(rel=resolved.rel, abs_posix=resolved.abs_posix, op="read")
        lines.append(f"- {resolved.display()}: {_VERDICTS.get(verdict, verdict)}")
    return "Paths in the arguments:\n" + "\n".join(lines)


__all__ = [
    "APPROVAL_OPTIONS",
    "PROTECTED_OPTIONS",
    "approval_command",
    "approval_subject",
    "error_payload",
    "judged_paths",
    "output_payload",
    "parse_arguments",
    "path_uri",
    "protected_targets",
    "resolve_display_path",
    "todo_items",
    "tool_kind",
    "tool_locations",
    "tool_source",
    "tool_title",
    "uri_to_path",
    "usage_payload",
    "workspace_policy",
]
