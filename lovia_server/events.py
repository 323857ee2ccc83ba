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
from lovia_server.uris import path_uri, uri_to_path


def tool_kind(tool: Tool | None) -> str:
    """The call's kind as the tool declares it (``other`` for a tool the run did not name)."""
    return presentation.tool_kind(tool)


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
    usage: Usage, *, context_tokens: int | None, context_window: int | None
) -> dict[str, Any]:
    return {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheReadTokens": usage.cache_read_tokens,
        "contextTokens": context_tokens,
        "contextWindow": context_window,
    }


def error_payload(exc: BaseException) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": type(exc).__name__,
        "message": getattr(exc, "message", None) or str(exc) or type(exc).__name__,
    }
    hint = getattr(exc, "hint", None)
    if hint:
        out["hint"] = hint
    return out


def todo_items(items: Iterable[Any]) -> list[dict[str, Any]]:
    out = []
    for item in items:
        data = item.model_dump() if hasattr(item, "model_dump") else dict(item)
        entry = {"content": data.get("content", ""), "status": data.get("status", "pending")}
        if data.get("active_form"):
            entry["activeForm"] = data["active_form"]
        out.append(entry)
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


APPROVAL_OPTIONS: dict[str, list[dict[str, str]]] = {
    "file": [
        {"decision": "allow_once", "label": "Accept"},
        {"decision": "allow_always", "label": "Accept always for this file"},
        {"decision": "reject_once", "label": "Reject"},
        {"decision": "reject_always", "label": "Always reject for this file"},
    ],
    "command": [
        {"decision": "allow_once", "label": "Run"},
        {"decision": "allow_always", "label": "Always run this command"},
        {"decision": "reject_once", "label": "Don't run"},
        {"decision": "reject_always", "label": "Never run this command"},
    ],
    "other": [
        {"decision": "allow_once", "label": "Allow"},
        {"decision": "allow_always", "label": "Always allow"},
        {"decision": "reject_once", "label": "Reject"},
        {"decision": "reject_always", "label": "Always reject"},
    ],
}


def approval_command(tool: Tool | None, args: Mapping[str, Any]) -> str | None:
    """The command line an ``execute`` call runs (its ``command`` argument), if it has one."""
    command = args.get("command")
    return command if tool_kind(tool) == "execute" and isinstance(command, str) else None


def approval_subject(tool: Tool | None, name: str, args: Mapping[str, Any], root: Path) -> str:
    """What an "always" decision is remembered for: the exact command, the file, or the tool."""
    command = approval_command(tool, args)
    if command is not None:
        return f"{name}:{' '.join(command.split())}"
    locations = tool_locations(tool, args, root)
    if locations:
        return f"{name}:{locations[0]['path']}"
    return f"tool:{name}"


__all__ = [
    "APPROVAL_OPTIONS",
    "approval_command",
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
