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
# entries judged (denied ones included) before a folder's listing stops
MAX_FOLDER_JUDGED = 4 * MAX_FOLDER_ENTRIES
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
    # (root, path) -> whether the ACL allows reading a path known to hold no symlink (a
    # listed folder's entries): nothing to resolve; None: ``readable`` judges them
    readable_plain: Callable[[Path, Path], bool] | None = None


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
        every = text.split("\n")
        if every and every[-1] == "":  # a final newline ends the last line, it starts none
            every.pop()
        start = item.range.start.line
        # a range past the end (30 lines around a problem in a short file) says what is there
        end = max(start, min(item.range.end.line, len(every) - 1))
        text = "\n".join(every[start : end + 1])
        label += f":{start + 1}-{end + 1}"
    return text, label, None


def _folder(root: Path, folder: Path, ws: ContextWorkspace) -> tuple[str, str, str | None]:
    """The folder's listing in ``os.walk`` order (a folder's subfolders, then its files, then
    each subfolder's), judged entry by entry and stopped at the cap: past it nothing more is
    read or judged, so a mention of a huge tree costs what the listing shows."""
    display = ws.readable(root, folder)
    if display is None:
        return "", str(folder), "denied by the workspace policy: not listed"
    lines: list[str] = []
    judged = 0
    full = deeper = False
    stack: list[tuple[Path, int]] = [(folder, 0)]
    while stack and not full:
        here, depth = stack.pop()
        try:
            with os.scandir(here) as it:
                found = [(e.name, _is_dir(e), e.is_symlink()) for e in it]
        except OSError:
            continue
        dirs = sorted((n, link) for n, is_dir, link in found if is_dir and n not in _SKIP_DIRS)
        files = sorted((n, link) for n, is_dir, link in found if not is_dir)
        below: list[Path] = []
        for name, is_dir, link in [
            *((d, True, lk) for d, lk in dirs),
            *((f, False, lk) for f, lk in files),
        ]:
            if len(lines) >= MAX_FOLDER_ENTRIES or judged >= MAX_FOLDER_JUDGED:
                full = True
                break
            judged += 1
            target = here / name
            if link or ws.readable_plain is None:
                allowed = ws.readable(root, target) is not None
            else:
                allowed = ws.readable_plain(root, target)
            if not allowed:
                continue
            lines.append("  " * depth + (name + "/" if is_dir else name))
            if is_dir and not link:
                if depth + 1 >= MAX_FOLDER_DEPTH:
                    deeper = deeper or _has_entries(target)  # not listed: the note says so
                else:
                    below.append(target)
        stack.extend((d, depth + 1) for d in reversed(below))
    note = None
    if full or deeper:
        note = (
            f"listing cut after {len(lines)} entries (there are more, or deeper than "
            f"{MAX_FOLDER_DEPTH} levels); list the rest with list_files"
        )
    return "\n".join(lines), (display if display != "." else root.name) + "/", note


def _has_entries(folder: Path) -> bool:
    try:
        with os.scandir(folder) as it:
            return next(it, None) is not None
    except OSError:
        return False


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


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
