"""The sandbox's mask walks: find what to hide under a directory, cached per directory.

A walk is bounded (an entry budget, optionally a depth). What it could not look at is
reported as :attr:`Walk.unwalked`, so a caller that must fail closed (the ``/tmp`` socket
walk) can hide those directories instead of trusting that nothing is in them. A walk given a
``rest`` classifier is not cut at its bounds: past them it reads every remaining directory,
judging each entry by ``rest`` from its name and kind alone (no ``stat``) — the root's walk
and a visible home's, whose denied names must all be found however big the tree.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

Hit = Literal["deny", "read-only", "protected"]
"""What the walk found: a path to hide, one to mount read-only, a protected one (read-only
for a command that ran without approval)."""
Classify = Callable[[str, str, os.stat_result], "tuple[str, Hit] | None"]
"""``(path, name, lstat) -> (path to mount over, what)`` or None, for one directory entry."""
ClassifyEntry = Callable[[os.DirEntry[str]], "tuple[str, Hit] | None"]
"""The same from the entry alone (its name and the kind the directory listing gives)."""
MayHit = Callable[[str, list[str]], "set[int] | None"]
"""``(folder, names) -> indexes of the names the classifier may hit`` (None: any of them). A
regular file or folder not among them is a known miss and is not classified; symlinks and
other kinds always are."""


@dataclass
class Walk:
    """What one walk saw beyond its hits."""

    linked: list[tuple[str, int, int]] = field(default_factory=list)
    """Regular files with more than one link: ``(path, st_dev, st_ino)``."""
    unwalked: list[str] = field(default_factory=list)
    """Directories the budget or the depth limit left unread (their contents are unknown)."""


@dataclass
class _DirScan:
    mtime_ns: int
    scanned_ns: int
    entries: int
    subdirs: list[str]
    hits: list[tuple[str, Hit]]
    linked: list[tuple[str, int, int]]
    full: bool = True
    """Judged by the walk's own classifier (False: by its ``rest`` one, past the bounds)."""


class ScanCache:
    """What the mask walks found per directory, reused while the directory is unchanged.

    Adding, removing or renaming an entry changes a directory's mtime, so a directory whose
    mtime is what it was — and was already old when it was scanned (timestamps are coarse:
    a change in the same tick must not hide) — has the same entries and the same verdicts.
    A large repository is then walked with one ``stat`` per directory instead of one policy
    judgement per file, for every command of a session. A walk forgets the folders it no
    longer reached, so the cache holds the trees as they are now (at most ``MAX_KEYS`` of
    them), not every folder created and removed during a long day.
    """

    STABLE_NS = 2_000_000_000
    MAX_KEYS = 8

    def __init__(self) -> None:
        self._dirs: dict[object, dict[str, _DirScan]] = {}
        self._lock = threading.Lock()

    def held(self) -> int:
        """How many folders' scans the cache holds (all walks)."""
        with self._lock:
            return sum(len(dirs) for dirs in self._dirs.values())

    def scan(
        self,
        key: object,
        top: str,
        classify: Classify,
        on_hit: Callable[[str, Hit], None],
        prune: Callable[[str], bool],
        *,
        budget: int,
        max_depth: int | None = None,
        rest: ClassifyEntry | None = None,
        may_hit: MayHit | None = None,
    ) -> Walk:
        """Walk ``top`` (symlinked dirs not followed), calling ``on_hit`` for each match
        before its subdirectories are entered. Past ``budget`` entries or ``max_depth`` the walk
        stops, or, with ``rest``, goes on to the end judging each entry there by ``rest``
        (hard links are then not collected: that needs a ``stat`` per entry)."""
        to_the_end = rest is not None
        with self._lock:  # commands are prepared in worker threads
            dirs = self._dirs.pop(key, None)
            if dirs is None:
                dirs = {}
                while len(self._dirs) >= self.MAX_KEYS:
                    self._dirs.pop(next(iter(self._dirs)))
            self._dirs[key] = dirs  # most recently used last
            walk = Walk()
            # breadth first: within the budget, the shallow places where sockets and secrets
            # usually are (/tmp/ssh-*/agent.*, /tmp/tmux-*/default) come before any deep tree
            queue: deque[tuple[str, int]] = deque([(top, 0)])
            seen = 0
            visited: set[str] = set()
            while queue:
                d, depth = queue.popleft()
                visited.add(d)
                try:
                    mtime = os.stat(d, follow_symlinks=False).st_mtime_ns
                except OSError:
                    dirs.pop(d, None)
                    continue
                full = not to_the_end or (
                    seen <= budget and (max_depth is None or depth < max_depth)
                )
                held = dirs.get(d)
                if (
                    held is None
                    or held.mtime_ns != mtime
                    or mtime > held.scanned_ns - self.STABLE_NS
                    or (full and not held.full)
                ):
                    if full or rest is None:
                        held = _scan_dir(d, mtime, classify, may_hit)
                    else:
                        held = _scan_names(d, mtime, rest, may_hit)
                    if held is None:
                        dirs.pop(d, None)
                        continue
                    held.full = full
                    dirs[d] = held
                for path, hit in held.hits:
                    on_hit(path, hit)
                walk.linked += held.linked
                seen += held.entries
                subdirs = [(sub, depth + 1) for sub in held.subdirs if not prune(sub)]
                if seen > budget and not to_the_end:
                    walk.unwalked += [sub for sub, _ in (*queue, *subdirs)]
                    break
                if max_depth is not None and depth + 1 >= max_depth and not to_the_end:
                    walk.unwalked += [sub for sub, _ in subdirs]
                    continue
                queue.extend(subdirs)
            if len(dirs) > len(visited):
                # folders removed or no longer reached (a temporary checkout, a build dir):
                # what is kept is this walk's tree, not every folder the day ever saw (the
                # other tops walked under the same key keep theirs)
                under = top.rstrip("/") + "/"
                for gone in [
                    d for d in dirs if d not in visited and (d == top or d.startswith(under))
                ]:
                    del dirs[gone]
            return walk


def bound_unix_sockets(table: str = "/proc/net/unix") -> tuple[list[str], bool]:
    """The file system paths of the unix sockets bound in this network namespace, from the
    kernel's own table, and whether that list is whole (the table was readable and every
    path in it absolute; a socket bound by a relative path cannot be placed).

    A walk can miss a socket (budget, depth); the table cannot, for the sockets it covers."""
    try:
        with open(table, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return [], False
    paths: list[str] = []
    whole = True
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) < 8:
            continue  # not bound to a name
        path = fields[7]
        if path.startswith("@"):
            continue  # abstract: per network namespace, which the sandbox does not share
        if not path.startswith("/"):
            whole = False
            continue
        paths.append(path)
    return sorted(set(paths)), whole


def linked_inodes(top: str, budget: int = 5_000) -> set[tuple[int, int]]:
    """``(st_dev, st_ino)`` of the regular files with more than one link under the folder
    ``top`` (symlinks not followed, at most ``budget`` entries): a denied folder is masked
    whole, but a hard link elsewhere to a file inside it is another name for the secret."""
    out: set[tuple[int, int]] = set()
    stack, seen = [top], 0
    while stack and seen < budget:
        try:
            it = os.scandir(stack.pop())
        except OSError:
            continue
        with it:
            for entry in it:
                seen += 1
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    stack.append(entry.path)
                elif stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                    out.add((st.st_dev, st.st_ino))
    return out


SHARED_SCANS = ScanCache()
"""The mask walks' cache shared by the sessions of this process (keyed by policy and root)."""


def _listing(d: str, may_hit: MayHit | None) -> tuple[list[os.DirEntry[str]], set[int] | None]:
    with os.scandir(d) as it:
        entries = list(it)
    return entries, None if may_hit is None else may_hit(d, [e.name for e in entries])


def _scan_dir(
    d: str, mtime_ns: int, classify: Classify, may_hit: MayHit | None = None
) -> _DirScan | None:
    scanned = time.time_ns()
    out = _DirScan(mtime_ns, scanned, 0, [], [], [])
    try:
        entries, maybe = _listing(d, may_hit)
    except OSError:
        return None
    out.entries = len(entries)
    for i, entry in enumerate(entries):
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        mode = st.st_mode
        is_dir, is_reg = stat.S_ISDIR(mode), stat.S_ISREG(mode)
        if maybe is None or i in maybe or not (is_dir or is_reg):
            hit = classify(entry.path, entry.name, st)
            if hit is not None:
                out.hits.append(hit)
        if is_dir:
            out.subdirs.append(entry.path)
        elif is_reg and st.st_nlink > 1:
            out.linked.append((entry.path, st.st_dev, st.st_ino))
    return out


def _scan_names(
    d: str, mtime_ns: int, classify: ClassifyEntry, may_hit: MayHit | None = None
) -> _DirScan | None:
    """:func:`_scan_dir` without a ``stat`` per entry: the listing gives names and kinds."""
    scanned = time.time_ns()
    out = _DirScan(mtime_ns, scanned, 0, [], [], [])
    try:
        entries, maybe = _listing(d, may_hit)
    except OSError:
        return None
    out.entries = len(entries)
    for i, entry in enumerate(entries):
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            plain = is_dir or entry.is_file(follow_symlinks=False)
        except OSError:
            is_dir = plain = False
        if maybe is None or i in maybe or not plain:
            hit = classify(entry)
            if hit is not None:
                out.hits.append(hit)
        if is_dir:
            out.subdirs.append(entry.path)
    return out


__all__ = [
    "SHARED_SCANS",
    "Classify",
    "ClassifyEntry",
    "Hit",
    "ScanCache",
    "Walk",
    "bound_unix_sockets",
    "linked_inodes",
]
