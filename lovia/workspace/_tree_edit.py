"""Write a tree that is an earlier tree plus a few changed files (internal, restore points).

Every git command that reads the shadow index parses all of it (~0.15 s of CPU at 150,000
files). When the change watch names the few changed files, a point is instead built here
without the index: the changed files become loose blob objects, the trees along their
paths are read from the store (one ``cat-file --batch``) and rewritten, and the new root
tree is handed to ``commit-tree``. The index catches up at the next full scan.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path

TREE_MODE = "40000"


@dataclass
class _Node:
    """Changes under one directory: ``files`` set (mode, id) or delete (None) a name."""

    files: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    dirs: dict[str, _Node] = field(default_factory=dict)


def write_object(objects: Path, kind: str, data: bytes) -> str:
    """Store one loose object (if absent); return its id."""
    raw = f"{kind} {len(data)}\0".encode() + data
    oid = hashlib.sha1(raw).hexdigest()
    path = objects / oid[:2] / oid[2:]
    if path.exists():
        return oid
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_name(f"tmp-lovia-{os.getpid()}-{oid[2:]}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(zlib.compress(raw, 1))
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return oid


def file_entry(objects: Path, path: Path) -> tuple[str, str]:
    """``(mode, blob id)`` of a regular file or symlink, as git would store it."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "120000", write_object(objects, "blob", os.fsencode(os.readlink(path)))
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"not a regular file: {path}")
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    mode = "100755" if st.st_mode & stat.S_IXUSR else "100644"
    return mode, write_object(objects, "blob", b"".join(chunks))


def plan(changes: dict[str, tuple[str, str] | None]) -> _Node:
    """The changes (path -> entry, or None to delete) as a tree of directories."""
    root = _Node()
    for path, entry in changes.items():
        node = root
        *dirs, name = path.split("/")
        for d in dirs:
            node = node.dirs.setdefault(d, _Node())
        node.files[name] = entry
    return root


def directories(node: _Node, prefix: str = "") -> list[str]:
    """Every directory the changes touch ("" is the root)."""
    out = [prefix]
    for name, child in node.dirs.items():
        out += directories(child, f"{prefix}{name}/")
    return out


def parse_tree(data: bytes) -> dict[str, tuple[str, str]]:
    entries: dict[str, tuple[str, str]] = {}
    pos = 0
    while pos < len(data):
        space = data.index(b" ", pos)
        nul = data.index(b"\0", space)
        mode = data[pos:space].decode()
        name = data[space + 1 : nul].decode("utf-8", "surrogateescape")
        entries[name] = (mode, data[nul + 1 : nul + 21].hex())
        pos = nul + 21
    return entries


DIR = ("dir", "")
"""A changed path that is a directory now (a file there goes; what is below comes in)."""


class Incomplete(Exception):
    """The change list cannot be told file by file (a whole directory went)."""


def build(
    objects: Path,
    node: _Node,
    trees: dict[str, dict[str, tuple[str, str]]],
    changed: list[tuple[str, str, str | None, str | None]],
    prefix: str = "",
) -> str | None:
    """Write the tree at ``prefix``: ``trees[prefix]`` (its old entries; absent for a new
    directory) with ``node``'s changes; None when it ends up empty. ``changed`` collects
    ``(path, status A/M/D, old id, new id)`` of the files that changed; a directory removed
    whole raises :class:`Incomplete` only after the tree is written (callers then diff)."""
    entries = dict(trees.get(prefix, {}))
    incomplete = False
    for name, entry in node.files.items():
        old = entries.get(name)
        old_tree = old is not None and old[0] == TREE_MODE
        if entry is None:  # nothing there now: the file, or the whole directory, goes
            entries.pop(name, None)
            if old_tree:
                incomplete = True
            elif old is not None:
                changed.append((prefix + name, "D", old[1], None))
        elif entry == DIR:
            if old is not None and not old_tree:
                entries.pop(name)
                changed.append((prefix + name, "D", old[1], None))
        else:
            entries[name] = entry
            if old_tree:
                incomplete = True
            elif old != entry:
                status = "M" if old is not None else "A"
                changed.append((prefix + name, status, old[1] if old else None, entry[1]))
    for name, child in node.dirs.items():
        if name in node.files and node.files[name] != DIR:
            continue  # a file, or nothing, is there now
        old = entries.get(name)
        if old is not None and old[0] != TREE_MODE:
            entries.pop(name)  # a file that became a directory
            changed.append((prefix + name, "D", old[1], None))
        try:
            sub = build(objects, child, trees, changed, f"{prefix}{name}/")
        except Incomplete as exc:
            sub, incomplete = exc.args[0], True
        if sub is None:
            entries.pop(name, None)
        else:
            entries[name] = (TREE_MODE, sub)
    oid = _write_tree(objects, entries) if entries else None
    if incomplete:
        raise Incomplete(oid)
    return oid


def _write_tree(objects: Path, entries: dict[str, tuple[str, str]]) -> str:
    def key(item: tuple[str, tuple[str, str]]) -> bytes:
        name, (mode, _) = item
        raw = name.encode("utf-8", "surrogateescape")
        return raw + b"/" if mode == TREE_MODE else raw

    data = b"".join(
        mode.encode() + b" " + name.encode("utf-8", "surrogateescape") + b"\0" + bytes.fromhex(oid)
        for name, (mode, oid) in sorted(entries.items(), key=key)
    )
    return write_object(objects, "tree", data)


__all__ = [
    "DIR",
    "Incomplete",
    "build",
    "directories",
    "file_entry",
    "parse_tree",
    "plan",
    "write_object",
]
