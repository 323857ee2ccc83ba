"""The shadow git store's plain parts: where the store lives, how git's status and raw diff
output read, the excludes it writes, diffs of restored files and its journal files."""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lovia.exceptions import UserError
from lovia.workspace.paths import relative_to_root, resolve_abs
from lovia.workspace.patterns import _canonical_abs_pattern
from lovia.workspace.policy import WorkspacePolicy
from lovia.workspace.protected import protected_warning
from lovia.workspace.restore_models import FileRestore, UnconfirmedProtectedPaths, _Entry


def _resolve_dirs(root: str | Path, store_dir: str | Path) -> tuple[Path, Path]:
    root_path = resolve_abs(Path(root).expanduser())
    if not root_path.is_dir():
        raise UserError(
            f"Workspace root does not exist: {root_path}",
            hint="Restore points need an existing workspace directory.",
        )
    return root_path, resolve_abs(Path(store_dir).expanduser())


def _store_path(root: Path, base: Path) -> Path:
    key = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", root.name)[:40] or "root"
    return base / f"{safe}-{key}"


def _label(user_message: str | None, turn_index: int) -> str:
    if user_message:
        flat = " ".join(user_message.split())
        return flat if len(flat) <= 80 else flat[:79] + "…"
    return f"Turn {turn_index}"


def _parse_status(out: bytes) -> Iterator[tuple[str, bool, bool]]:
    """``(path, tracked, deleted_in_worktree)`` for entries needing an index update."""
    records = out.split(b"\0")
    i = 0
    while i < len(records):
        rec = records[i]
        i += 1
        if not rec:
            continue
        kind = rec[:1]
        if kind == b"?":
            yield rec[2:].decode("utf-8", "surrogateescape"), False, False
        elif kind == b"1":
            parts = rec.split(b" ", 8)
            if len(parts) < 9:
                continue
            y = parts[1][1:2]
            if y != b".":
                yield parts[8].decode("utf-8", "surrogateescape"), True, y == b"D"
        elif kind == b"2":
            i += 1  # a rename record carries the original path too (renames are off)
        elif kind == b"u":
            parts = rec.split(b" ", 10)
            if len(parts) == 11:
                yield parts[10].decode("utf-8", "surrogateescape"), True, False


def _parse_raw_diff(out: bytes) -> Iterator[_Entry]:
    fields = out.split(b"\0")
    i = 0
    while i + 1 < len(fields):
        meta = fields[i].decode()
        if not meta.startswith(":"):
            i += 1
            continue
        path = fields[i + 1].decode("utf-8", "surrogateescape")
        i += 2
        old_mode, new_mode, old_sha, new_sha, status = meta[1:].split(" ")
        zero = "0" * len(old_sha)
        yield _Entry(
            path=path,
            old_mode=None if old_mode == "000000" else old_mode,
            new_mode=None if new_mode == "000000" else new_mode,
            old_sha=None if old_sha == zero else old_sha,
            new_sha=None if new_sha == zero else new_sha,
            status=status[:1],
        )


def _as_text(data: bytes | None, limit: int) -> tuple[str | None, bool]:
    """``(text, binary)``; text is None for missing, binary or oversized content."""
    if data is None:
        return None, False
    if len(data) > limit or b"\0" in data[:8192]:
        return None, True
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        return None, True


def _file_diff(f: FileRestore) -> str:
    a = "/dev/null" if f.action == "create" else f"a/{f.path}"
    b = "/dev/null" if f.action == "delete" else f"b/{f.path}"
    header = f"diff --lovia a/{f.path} b/{f.path}\n"
    if f.old_mode != f.new_mode and f.old_mode and f.new_mode:
        header += f"old mode {f.old_mode}\nnew mode {f.new_mode}\n"
    if f.binary:
        return header + f"Binary files {a} and {b} differ\n"
    if f.too_large:
        return header + f"Files {a} and {b} differ (too large to show)\n"
    old = (f.old_text or "").splitlines(keepends=True)
    new = (f.new_text or "").splitlines(keepends=True)
    lines = []
    for line in difflib.unified_diff(old, new, a, b):
        lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return header + "".join(lines)


def _escape_ignore(text: str) -> str:
    out = re.sub(r"([\\\[\]*?!#])", r"\\\1", text)
    return out[:-1] + "\\ " if out.endswith(" ") else out


def _refuse_unconfirmed(todo: list[FileRestore], confirmed: set[str]) -> None:
    paths = [
        f.path for f in todo if f.protected and f.action != "delete" and f.path not in confirmed
    ]
    if paths:
        raise UnconfirmedProtectedPaths(
            protected_warning(paths),
            hint="Show the warning; restore again listing the files the user confirmed.",
            paths=paths,
        )


def _denied_as_ignore(policy: WorkspacePolicy, root: Path) -> list[str]:
    """Gitignore lines that exclude (a subset of) the policy's denied paths.

    Only an optimisation (git then skips denied directories); every path is still
    judged by the policy itself before it is stored.
    """
    patterns = list(policy.denied_paths) + [
        r.pattern for r in policy.path_rules if r.action == "deny" and "read" in r.ops
    ]
    lines: list[str] = []
    for pattern in patterns:
        if not pattern or "\\" in pattern or pattern.startswith("./"):
            continue
        if pattern.startswith(("/", "~")):
            canon = _canonical_abs_pattern(pattern)
            rel = relative_to_root(root, Path(canon)) if canon else None
            if rel and rel != ".":
                lines.append("/" + rel)
            continue
        pat = pattern.rstrip("/")
        if not pat:
            continue
        if pat.startswith(("!", "#")):
            pat = "\\" + pat
        lines.append(pat if "/" not in pat else "/" + pat)
    return lines


def _occupied(path: Path) -> bool:
    """Something other than a directory is at ``path`` (a directory may empty out first)."""
    try:
        return not stat.S_ISDIR(os.lstat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)
