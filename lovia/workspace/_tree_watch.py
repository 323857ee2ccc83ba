"""Which paths of a workspace changed since a moment (Linux inotify; internal, used by
restore points).

git finds changed files by an ``lstat`` of every tracked file: ~0.4 s at 150,000 files, paid
by every point. Restore points instead keep one inotify watch per directory (in this process:
no program runs, unlike git's ``core.fsmonitor``, which stays off) and, between two full
scans, look only at the paths the kernel reported. Whatever could make the reported set
incomplete — a full event queue, a watched directory moved, a repository appearing, the
watch limit, a file system that is not local — marks the watch *lost*: the caller scans in
full and starts a new one. Directories holding a ``.git`` (the root's own excepted) are not
watched: nested repositories are never snapshotted.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import logging
import os
import stat
import struct
import sys
from collections.abc import Callable
from pathlib import Path

logger = logging.getLogger("lovia.workspace.restore_points")

_MODIFY, _ATTRIB, _CLOSE_WRITE = 0x2, 0x4, 0x8
_MOVED_FROM, _MOVED_TO, _CREATE, _DELETE = 0x40, 0x80, 0x100, 0x200
_DELETE_SELF, _MOVE_SELF, _OVERFLOW, _IGNORED = 0x400, 0x800, 0x4000, 0x8000
_ONLYDIR, _DONT_FOLLOW, _EXCL_UNLINK, _ISDIR = 0x01000000, 0x02000000, 0x04000000, 0x40000000
_MASK = (
    _MODIFY
    | _ATTRIB
    | _CLOSE_WRITE
    | _MOVED_FROM
    | _MOVED_TO
    | _CREATE
    | _DELETE
    | _DELETE_SELF
    | _MOVE_SELF
    | _ONLYDIR
    | _DONT_FOLLOW
    | _EXCL_UNLINK
)
_EVENT = struct.Struct("iIII")
_LOCAL_FS = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "zfs", "bcachefs", "jfs", "overlay"}
)
MAX_CHANGES = 2000
"""More changed paths than this: git's own scan is quicker than judging each in Python."""
MAX_WATCHES = 8192
"""More directories than this are not watched (full scans then): inotify watches are shared
by every program of the user (``fs.inotify.max_user_watches``), the editor's file watcher too."""


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6", use_errno=True)
        libc.inotify_init1  # noqa: B018 - present?
        libc.inotify_add_watch  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def local_file_system(root: Path) -> bool:
    """Whether ``root`` lies on a local file system (inotify sees every change there)."""
    best, kind = "", ""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) < 3:
                    continue
                point = parts[1].replace("\\040", " ")
                inside = str(root) == point or str(root).startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, parts[2]
    except OSError:
        return False
    return kind in _LOCAL_FS


def walk_dirs(root: Path, rel: str, skip: Callable[[str], bool]) -> list[str]:
    """``rel`` and the directories below it that may hold snapshotted files (no ``.git``,
    nothing ``skip`` names, no nested repository), without following symlinks."""
    out: list[str] = []
    stack = [rel]
    while stack:
        cur = stack.pop()
        path = root / cur if cur else root
        subdirs: list[str] = []
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    if entry.name == ".git":
                        if cur:
                            subdirs = []
                            break  # a nested repository: not ours
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        subdirs.append(f"{cur}/{entry.name}" if cur else entry.name)
                else:
                    out.append(cur)
                    stack.extend(d for d in subdirs if not skip(d))
        except OSError:
            continue
    return out


def expand_changes(
    root: Path, changed: set[str], skip: Callable[[str], bool]
) -> list[tuple[str, str]] | None:
    """``(path, kind)`` for what the changed paths stand for now — ``gone``, ``dir`` (a
    directory: every file below it is listed too), ``file`` (anything else) or
    ``unreadable``; None when there are too many to judge one by one."""
    out: list[tuple[str, str]] = []
    plain: dict[str, bool] = {"": True}

    def plain_dir(rel: str) -> bool:  # a real directory, with no symlink on the way
        if rel not in plain:
            parent = rel.rpartition("/")[0]
            try:
                ok = plain_dir(parent) and stat.S_ISDIR(os.lstat(root / rel).st_mode)
            except OSError:
                ok = False
            plain[rel] = ok
        return plain[rel]

    for rel in sorted(changed):
        if not plain_dir(rel.rpartition("/")[0]):
            out.append((rel, "gone"))  # beyond a symlink or a file now: gone for git
            continue
        try:
            st = os.lstat(root / rel)
        except (FileNotFoundError, NotADirectoryError):
            out.append((rel, "gone"))
            continue
        except OSError:
            out.append((rel, "unreadable"))
            continue
        if not stat.S_ISDIR(st.st_mode):
            out.append((rel, "file"))
            continue
        if skip(rel) or (root / rel / ".git").exists():
            out.append((rel, "gone"))  # not ours (a nested repository)
            continue
        for d in walk_dirs(root, rel, skip):
            out.append((d, "dir"))
            try:
                with os.scandir(root / d) as entries:
                    for entry in entries:
                        if not entry.is_dir(follow_symlinks=False) and entry.name != ".git":
                            out.append((f"{d}/{entry.name}", "file"))
            except OSError:
                continue
        if len(out) > MAX_CHANGES:
            return None
    return out if len(out) <= MAX_CHANGES else None


class TreeWatch:
    """The paths changed under ``root`` since :meth:`reset`. Build with :meth:`start`."""

    def __init__(self, libc: ctypes.CDLL, fd: int, root: Path, skip: Callable[[str], bool]):
        self._libc = libc
        self._fd = fd
        self.root = root
        self._skip = skip
        self._dirs: dict[int, str] = {}
        self._changed: set[str] = set()
        self.lost = False

    @classmethod
    def start(cls, root: Path, skip: Callable[[str], bool]) -> TreeWatch | None:
        """Watch every directory of ``root`` (blocking: call in a thread); None when the
        platform, the file system or the watch limit does not allow it."""
        libc = _libc()
        if libc is None or not local_file_system(root):
            return None
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            return None
        watch = cls(libc, fd, root, skip)
        if not watch._add(""):
            watch.close()
            return None
        return watch

    def close(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1
        self.lost = True

    def _add(self, rel: str) -> bool:
        dirs = walk_dirs(self.root, rel, self._skip)
        if len(self._dirs) + len(dirs) > MAX_WATCHES:
            logger.info("restore points: no change watch (over %d directories)", MAX_WATCHES)
            return False
        for d in dirs:
            path = os.fsencode(self.root / d if d else self.root)
            wd = self._libc.inotify_add_watch(self._fd, path, _MASK)
            if wd < 0:
                err = ctypes.get_errno()
                if err in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):
                    continue  # gone or unreadable meanwhile: git's scan sees the same
                logger.info("restore points: no change watch (%s)", os.strerror(err))
                return False
            self._dirs[wd] = d
        return True

    def reset(self) -> None:
        """Forget what changed so far (a full scan is about to start)."""
        self._drain()
        self._changed.clear()

    def take(self) -> set[str] | None:
        """Paths (files or directories) changed since the last :meth:`reset` or ``take``;
        None when lost. The caller must scan in full if it cannot use them all."""
        self._drain()
        if self.lost:
            return None
        changed, self._changed = self._changed, set()
        return changed

    def _drain(self) -> None:
        while not self.lost:
            try:
                data = os.read(self._fd, 1 << 16)
            except BlockingIOError:
                return
            except OSError:
                self.lost = True
                return
            if not data:
                return
            pos = 0
            while pos + _EVENT.size <= len(data):
                wd, mask, _, size = _EVENT.unpack_from(data, pos)
                raw = data[pos + _EVENT.size : pos + _EVENT.size + size].rstrip(b"\0")
                pos += _EVENT.size + size
                self._event(wd, mask, os.fsdecode(raw))
            if len(self._changed) > MAX_CHANGES:
                self.lost = True

    def _event(self, wd: int, mask: int, name: str) -> None:
        if mask & _OVERFLOW:
            self.lost = True
            return
        base = self._dirs.get(wd)
        if base is None:
            return
        if mask & _IGNORED:
            del self._dirs[wd]
            return
        if mask & (_MOVE_SELF | _DELETE_SELF):
            if mask & _MOVE_SELF or not base:
                self.lost = True  # the paths under it are not what they were
            self._changed.add(base)
            return
        if not name:
            return
        rel = f"{base}/{name}" if base else name
        if name == ".git":
            if base or mask & (_CREATE | _DELETE | _MOVED_FROM | _MOVED_TO):
                self.lost = True  # a repository appeared or went
            return
        if mask & _ISDIR and mask & _MOVED_FROM:
            self.lost = True
            return
        self._changed.add(rel)
        new_dir = mask & _ISDIR and mask & (_CREATE | _MOVED_TO) and not self._skip(rel)
        if new_dir and not self._add(rel):
            self.lost = True


__all__ = [
    "MAX_CHANGES",
    "MAX_WATCHES",
    "TreeWatch",
    "expand_changes",
    "local_file_system",
    "walk_dirs",
]
