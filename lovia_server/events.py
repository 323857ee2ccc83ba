"""Pure mappings from lovia runs to protocol payloads: tool kinds, titles, locations, usage.

Nothing here touches the server or the disk; the supervisor feeds it what it knows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from lovia.handoff import HANDOFF_TOOL_PREFIX
from lovia.messages import Usage
from lovia_server import protocol as p
from lovia_server.uris import path_uri, uri_to_path

_KINDS = {
    "read_file": "read",
    "view_image": "read",
    "read_process_output": "read",
    "recall_tool_result": "read",
    "list_files": "search",
    "grep_files": "search",
    "web_search": "search",
    "duckduckgo_search": "search",
    "tavily_search": "search",
    "search_mcp_tools": "search",
    "write_file": "edit",
    "edit_file": "edit",
    "shell": "execute",
    "kill_process": "execute",
    "http_request": "fetch",
    "read_page": "fetch",
    "todo_write": "think",
}


def tool_kind(name: str) -> str:
    if name.startswith(HANDOFF_TOOL_PREFIX):
        return "other"
    return _KINDS.get(name, "other")


def parse_arguments(arguments: str) -> dict[str, Any]:
    """The call's arguments as an object; anything else is wrapped as ``{"_raw": text}``."""
    try:
        value = json.loads(arguments or "{}")
    except (json.JSONDecodeError, TypeError):
        return {"_raw": arguments}
    return value if isinstance(value, dict) else {"_raw": arguments}


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tool_title(name: str, args: Mapping[str, Any]) -> str:
    """A short human title for a tool call, e.g. ``Edit src/app.py`` or ``Run `pytest -q```."""
    path = args.get("path")
    path_s = str(path) if isinstance(path, str) else None
    if name == "read_file":
        rng = ""
        if args.get("start") or args.get("end"):
            rng = f" (lines {args.get('start') or 1}-{args.get('end') or 'end'})"
        return f"Read {path_s or 'file'}{rng}"
    if name == "view_image":
        return f"View image {path_s or ''}".rstrip()
    if name == "list_files":
        return f"List {path_s or '.'}"
    if name == "grep_files":
        where = path_s or "."
        return f"Search {_short(str(args.get('pattern', '')), 40)!r} in {where}"
    if name == "write_file":
        return f"Write {path_s or 'file'}"
    if name == "edit_file":
        return f"Edit {path_s or 'file'}"
    if name == "shell":
        desc = args.get("description")
        if isinstance(desc, str) and desc.strip():
            return _short(desc)
        return f"Run `{_short(str(args.get('command', '')), 70)}`"
    if name == "read_process_output":
        return f"Read output of {args.get('process_id', 'process')}"
    if name == "kill_process":
        return f"Stop {args.get('process_id', 'process')}"
    if name == "todo_write":
        return "Update todo list"
    if name == "ask_human":
        return _short(f"Ask: {args.get('question', '')}")
    if name.startswith(HANDOFF_TOOL_PREFIX):
        return f"Hand off to {name[len(HANDOFF_TOOL_PREFIX) :]}"
    return name


def resolve_display_path(path: str, root: Path, cwd: Path | None = None) -> Path:
    """Where a tool's path argument points (lexically; the workspace judges the real target)."""
    expanded = os.path.expanduser(path)
    candidate = Path(expanded)
    if not candidate.is_absolute():
        candidate = (cwd or root) / candidate
    return Path(os.path.normpath(candidate))


def tool_locations(name: str, args: Mapping[str, Any], root: Path) -> list[dict[str, Any]]:
    """Files a call touches, as ``{path, uri, line?}`` for click-through in the editor."""
    path = args.get("path")
    if name in ("shell", "kill_process", "read_process_output", "todo_write") or not isinstance(
        path, str
    ):
        if name == "shell" and isinstance(args.get("cwd"), str) and args["cwd"] not in ("", "."):
            where = resolve_display_path(args["cwd"], root)
            return [{"path": str(where), "uri": path_uri(where)}]
        return []
    where = resolve_display_path(path, root)
    loc: dict[str, Any] = {"path": str(where), "uri": path_uri(where)}
    start = args.get("start")
    if name == "read_file" and isinstance(start, int) and start >= 1:
        loc["line"] = start
    return [loc]


def usage_payload(
    usage: Usage, *, context_tokens: int | None, context_window: int | None
) -> p.Usage:
    return p.Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        context_tokens=context_tokens,
        context_window=context_window,
    )


def error_payload(exc: BaseException) -> p.RunError:
    hint = getattr(exc, "hint", None)
    return p.RunError(
        type=type(exc).__name__,
        message=getattr(exc, "message", None) or str(exc) or type(exc).__name__,
        hint=str(hint) if hint else None,
    )


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
        for d, label in zip(p.Decision, labels, strict=True)
    ]


APPROVAL_OPTIONS: dict[str, list[p.ApprovalOption]] = {
    "file": _options(
        "Accept", "Accept always for this file", "Reject", "Always reject for this file"
    ),
    "shell": _options("Run", "Always run this command", "Don't run", "Never run this command"),
    "other": _options("Allow", "Always allow", "Reject", "Always reject"),
}


def approval_subject(name: str, args: Mapping[str, Any], root: Path) -> str:
    """What an "always" decision is remembered for: the file, the exact command, or the tool."""
    if name == "shell":
        return f"shell:{' '.join(str(args.get('command', '')).split())}"
    path = args.get("path")
    if isinstance(path, str):
        return f"{name}:{resolve_display_path(path, root)}"
    return f"tool:{name}"


__all__ = [
    "APPROVAL_OPTIONS",
    "approval_subject",
    "error_payload",
    "output_payload",
    "parse_arguments",
    "path_uri",
    "resolve_display_path",
    "todo_items",
    "tool_kind",
    "tool_locations",
    "tool_title",
    "uri_to_path",
    "usage_payload",
]
