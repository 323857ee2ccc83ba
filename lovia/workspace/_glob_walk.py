"""The glob walk behind ``list_files(pattern=...)``: a glob compiled to a regex, and the tree
walk that prunes by it."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from lovia.workspace import _fs
from lovia.workspace.errors import WorkspaceError
from lovia.workspace.patterns import segment_regex
from lovia.workspace.policy import Decision


@dataclass(frozen=True)
class _GlobRegex:
    pattern: re.Pattern[str]
    max_depth: int | None


def _compile_glob(pattern: str) -> _GlobRegex:
    if not pattern or pattern == "." or pattern.startswith("/") or "\x00" in pattern:
        raise WorkspaceError(f"Invalid glob pattern: {pattern!r}")
    segs = [s for s in pattern.split("/") if s not in ("", ".")]
    if not segs:
        raise WorkspaceError(f"Invalid glob pattern: {pattern!r}")
    if ".." in segs:
        raise WorkspaceError(
            f"Invalid glob pattern: {pattern!r} ('..' is not supported; pass the directory as "
            "path= instead)"
        )
    pieces: list[str] = []
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        if seg == "**":
            pieces.append("[^/]+(?:/[^/]+)*" if last else "(?:[^/]+/)*")
        else:
            pieces.append(segment_regex(seg) + ("" if last else "/"))
    regex = "".join(pieces)
    try:
        compiled = re.compile(regex)
    except re.error:
        raise WorkspaceError(f"Invalid glob pattern: {pattern!r}") from None
    depth = None if "**" in segs else len(segs)
    return _GlobRegex(pattern=compiled, max_depth=depth)


def _walk_tree(
    top: Path,
    max_depth: int | None,
    include_hidden: bool,
    read_decision: Callable[[Path], Decision],
) -> Iterator[tuple[str, Path, int, str]]:
    """``(rel, abs_path, dir_fd, name)`` for the entries under ``top``, each folder's in name
    order (not following symlinked dirs; hidden and denied dirs pruned). Only folders are
    judged here: a file is judged by the caller once it is wanted (a glob over a big tree
    matches few), and ``dir_fd`` (open while the entry is current) lets it ``stat`` by name."""
    stack: list[tuple[Path, str]] = [(top, "")]
    while stack:
        d, rel = stack.pop()
        try:
            fd = _fs.open_dir(d, listable=True)
        except (OSError, WorkspaceError):
            continue
        try:
            with os.scandir(fd) as it:
                entries = sorted((de.name, de) for de in it)
            subdirs: list[tuple[Path, str]] = []
            depth = rel.count("/") + 1 if rel else 0
            for name, de in entries:
                if name.startswith(".") and not include_hidden:
                    continue
                abs_path = d / name
                parts = f"{rel}/{name}" if rel else name
                try:
                    is_dir = de.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir and read_decision(abs_path) == "deny":
                    continue
                yield parts, abs_path, fd, name
                if is_dir and (max_depth is None or depth + 1 < max_depth):
                    subdirs.append((abs_path, parts))
            stack.extend(reversed(subdirs))
        finally:
            os.close(fd)
