"""A prompt's context items (the editor's ``@`` mentions) as text the model reads.

Files, selections and symbols are read the way the agent's own reads are: the workspace ACL
decides (a denied path is named, never read) and an open editor's unsaved text wins over the
disk. Folders become a bounded listing, Problems a list of diagnostics. Each item has a size
limit and the whole prompt a budget; whatever is cut says so, to the model and (through the
``user.message`` context summaries) to the user.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lovia_server import protocol as p
from lovia_server.host.uris import uri_to_path

MAX_ITEM_CHARS = 60_000
MAX_TOTAL_CHARS = 150_000
MAX_FOLDER_ENTRIES = 400
MAX_FOLDER_DEPTH = 3
MAX_PROBLEMS = 200
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", "dist"}


@dataclass
class ContextWorkspace:
    """What building the context needs from the editor workspace."""

    # path -> its workspace folder (None: outside every folder)
    root_of: Callable[[Path], Path | None]
    # (root, path) -> the workspace-relative display name, or None when the ACL denies reads
    readable: Callable[[Path, Path], str | None]
    # (root, path) -> the text (open buffer first), None when it cannot be read
    read: Callable[[Path, Path], Awaitable[str | None]]


@dataclass
class BuiltContext:
    text: str = ""
    summaries: list[p.ContextSummary] = field(default_factory=list)


def _kind(item: p.ContextItem, path: Path) -> str:
    if item.kind is not None:
        return item.kind
    return "folder" if path.is_dir() else "file"


def _cut(text: str, limit: int, what: str) -> tuple[str, str | None]:
    if len(text) <= limit:
        return text, None
    kept = text[:limit]
    kept = kept[: kept.rfind("\n") + 1] or kept
    lines = text.count("\n") + 1
    shown = kept.count("\n")
    note = (
        f"cut to the first {shown:,} of {lines:,} lines ({len(kept):,} of {len(text):,} "
        f"characters); read the rest of {what} with read_file"
    )
    return kept, note


async def build_context(items: list[p.ContextItem], ws: ContextWorkspace) -> BuiltContext:
    """The prompt's context blocks and one summary per item (raises -32602/-32015 on bad
    items, naming ``context.<i>``)."""
    out = BuiltContext()
    blocks: list[str] = []
    budget = MAX_TOTAL_CHARS
    for index, item in enumerate(items):
        field_name = f"context.{index}.uri"
        path = uri_to_path(item.uri)
        if path is None:
            raise p.invalid_params(f"context[{index}].uri must be a file: URI", field_name)
        path = path.resolve()
        root = ws.root_of(path)
        if root is None:
            raise p.ProtocolError(
                p.PATH_OUTSIDE_WORKSPACE,
                f"{path} is outside every workspace folder",
                {"field": field_name, "path": str(path)},
            )
        kind = _kind(item, path)
        limit = min(MAX_ITEM_CHARS, budget)
        if kind == "problems":
            body, label, note = _problems(item, ws)
        elif kind == "folder":
            body, label, note = await asyncio.to_thread(_folder, root, path, ws)
        else:
            body, label, note = await _file(item, kind, root, path, ws, field_name)
        if note is None and limit <= 0:
            body, note = "", "left out: the prompt's context budget is used up"
        elif note is None or not note.startswith("denied"):
            body, cut = _cut(body, max(limit, 0), label)
            note = cut or note
        budget -= len(body)
        summary: dict[str, Any] = {
            "kind": kind,
            "label": item.label or label,
            "uri": item.uri,
            "chars": len(body),
            "truncated": note is not None and not note.startswith("denied"),
        }
        if item.range is not None:
            summary["line"] = item.range.start.line + 1
            summary["end_line"] = item.range.end.line + 1
        if note is not None:
            summary["note"] = note
        out.summaries.append(p.ContextSummary.model_validate(summary))
        attrs = f'kind="{kind}" path="{label}"'
        if item.label:
            attrs += f' name="{item.label}"'
        suffix = f"\n[lovia: {note}]" if note else ""
        blocks.append(f"<context {attrs}>\n{body}{suffix}\n</context>")
    out.text = "\n\n".join(blocks)
    return out


async def _file(
    item: p.ContextItem, kind: str, root: Path, path: Path, ws: ContextWorkspace, field_name: str
) -> tuple[str, str, str | None]:
    display = ws.readable(root, path)
    if display is None:
        return "", str(path), "denied by the workspace policy: not read"
    text = await ws.read(root, path)
    if text is None:
        raise p.invalid_params(f"Cannot read {path}", field_name, path=str(path))
    label = display
    if item.range is not None:
        start, end = item.range.start.line, item.range.end.line
        lines = text.split("\n")[start : end + 1]
        text = "\n".join(lines)
        label += f":{start + 1}-{end + 1}"
    return text, label, None


def _folder(root: Path, folder: Path, ws: ContextWorkspace) -> tuple[str, str, str | None]:
    display = ws.readable(root, folder)
    if display is None:
        return "", str(folder), "denied by the workspace policy: not listed"
    lines: list[str] = []
    more = 0
    base_depth = len(folder.parts)
    for current, dirs, files in os.walk(folder):
        here = Path(current)
        depth = len(here.parts) - base_depth
        dirs[:] = sorted(
            d for d in dirs if d not in _SKIP_DIRS and ws.readable(root, here / d) is not None
        )
        if depth >= MAX_FOLDER_DEPTH:
            more += len(dirs) + len(files)
            dirs[:] = []
            continue
        for name in [*(d + "/" for d in dirs), *sorted(files)]:
            target = here / name.rstrip("/")
            if not name.endswith("/") and ws.readable(root, target) is None:
                continue
            if len(lines) >= MAX_FOLDER_ENTRIES:
                more += 1
                continue
            lines.append("  " * depth + name)
    note = None
    if more:
        note = (
            f"listing cut after {len(lines)} entries ({more} more, or deeper than "
            f"{MAX_FOLDER_DEPTH} levels); list the rest with list_files"
        )
    return "\n".join(lines), (display if display != "." else root.name) + "/", note


def _problems(item: p.ContextItem, ws: ContextWorkspace) -> tuple[str, str, str | None]:
    rows: list[str] = []
    hidden = 0
    problems = item.problems or []
    for problem in problems:
        path = uri_to_path(problem.uri)
        root = ws.root_of(path.resolve()) if path is not None else None
        shown = ws.readable(root, path.resolve()) if root is not None and path is not None else None
        if shown is None:
            hidden += 1  # outside the workspace or denied: not shown to the model
            continue
        where = shown
        if problem.range is not None:
            where += f":{problem.range.start.line + 1}:{problem.range.start.character + 1}"
        source = f" [{problem.source}]" if problem.source else ""
        rows.append(f"{where}: {problem.severity}: {problem.message}{source}")
    note = None
    if len(rows) > MAX_PROBLEMS:
        note = f"cut to the first {MAX_PROBLEMS} of {len(rows)} problems"
        rows = rows[:MAX_PROBLEMS]
    if hidden:
        extra = f"{hidden} problem(s) in files outside the workspace or denied were left out"
        note = f"{note}; {extra}" if note else extra
    body = "\n".join(rows) if rows else "(no problems)"
    return body, "Problems", note


__all__ = ["BuiltContext", "ContextWorkspace", "build_context"]
