"""Apply a restore plan to the work tree, crash-safely (internal, used by restore points).

A restore first writes a *journal* (the exact list of file operations, atomically:
temporary file, ``fsync``, rename) and only then touches the tree. Each operation sets
one path to its target state and is idempotent, so a restore interrupted by a crash
(``SIGKILL`` included) is finished by replaying the journal the next time the store is
opened: the tree ends up at the target, never half-way. Files are replaced atomically
(temporary file in the same directory + ``rename``); the temporary name is derived
from the file name so a replay can remove one a crash left behind. Directories are
opened one component at a time without following symlinks, so a symlink swapped into
the path can never redirect a write outside the workspace.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lovia.workspace import _fs

TEMP_PREFIX = ".lovia-restore-"
TEMP_SUFFIX = ".tmp"
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

OpKind = Literal["write", "delete"]


@dataclass(frozen=True)
class FileOp:
    """Set ``path`` to a blob (``write``) or remove it (``delete``)."""

    path: str
    op: OpKind
    mode: str | None = None  # "100644" | "100755" | "120000"
    blob: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "op": self.op, "mode": self.mode, "blob": self.blob}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileOp:
        op = data["op"]
        if op not in ("write", "delete"):
            raise ValueError(f"bad journal op {op!r}")
        return cls(path=str(data["path"]), op=op, mode=data.get("mode"), blob=data.get("blob"))


def temp_name(name: str) -> str:
    """The deterministic temporary name used while replacing ``name``."""
    digest = hashlib.sha1(name.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"{TEMP_PREFIX}{digest}{TEMP_SUFFIX}"


def check_rel(path: str) -> None:
    """Refuse paths that could leave the work tree or touch a ``.git``."""
    parts = path.split("/")
    if (
        not path
        or path.startswith("/")
        or any(p in ("", ".", "..") for p in parts)
        or any(p.lower() == ".git" for p in parts)
        or "\x00" in path
    ):
        raise ValueError(f"unsafe path in restore plan: {path!r}")


# --------------------------------------------------------------------------- journal


def write_journal(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    payload = json.dumps(data).encode()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _O_CLOEXEC, 0o600)
    try:
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def read_journal(path: Path) -> dict[str, Any] | None:
    with contextlib.suppress(FileNotFoundError):
        path.with_name(path.name + ".tmp").unlink()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("restore journal is not an object")
    return data


def remove_journal(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | _O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --------------------------------------------------------------------------- applying


def current_umask() -> int:
    """The process umask, read without changing it where /proc allows."""
    with (
        contextlib.suppress(OSError, ValueError),
        open("/proc/self/status", encoding="ascii", errors="replace") as fh,
    ):
        for line in fh:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def _split(root: Path, rel: str) -> tuple[Path, str]:
    full = root / rel
    return full.parent, full.name


def apply_delete(root: Path, rel: str) -> None:
    """Remove ``rel`` (a file or symlink) if present; prune directories it leaves empty."""
    check_rel(rel)
    parent, name = _split(root, rel)
    try:
        dfd = _fs.open_dir(parent)
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp_name(name), dir_fd=dfd)
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", rel)
        os.unlink(name, dir_fd=dfd)
    finally:
        os.close(dfd)
    _prune_empty_dirs(root, rel)


def _prune_empty_dirs(root: Path, rel: str) -> None:
    """Remove the directories above ``rel`` that are now empty (never through a symlink)."""
    parts = rel.split("/")[:-1]
    while parts:
        try:
            dfd = _fs.open_dir(root.joinpath(*parts[:-1]))
        except (OSError, _fs.PathChangedError):
            return
        try:
            os.rmdir(parts[-1], dir_fd=dfd)
        except OSError:
            return
        finally:
            os.close(dfd)
        parts.pop()


def apply_write(root: Path, rel: str, data: bytes, git_mode: str, umask: int) -> None:
    """Atomically set ``rel`` to ``data`` with ``git_mode`` (file, executable or symlink)."""
    check_rel(rel)
    parent, name = _split(root, rel)
    dfd = _fs.open_dir(parent, create=True)
    try:
        tmp = temp_name(name)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=dfd)
        try:
            st: os.stat_result | None = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "a directory is in the way", rel)
        if git_mode == "120000":
            os.symlink(os.fsdecode(data), tmp, dir_fd=dfd)
        else:
            mode = _file_mode(st, executable=git_mode == "100755", umask=umask)
            _fs.write_new(dfd, tmp, data, mode)
        try:
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
    finally:
        os.close(dfd)


def _file_mode(st: os.stat_result | None, *, executable: bool, umask: int) -> int:
    if st is not None and stat.S_ISREG(st.st_mode):
        mode = stat.S_IMODE(st.st_mode)
        if executable:
            return mode | ((mode & 0o444) >> 2)
        return mode & ~0o111
    return (0o777 if executable else 0o666) & ~umask


def cleanup_temps(root: Path, paths: Iterable[str]) -> None:
    """Remove temporary files a crashed restore may have left next to ``paths``."""
    for rel in paths:
        parent, name = _split(root, rel)
        with contextlib.suppress(OSError, ValueError):
            os.unlink(parent / temp_name(name))


__all__ = [
    "TEMP_PREFIX",
    "TEMP_SUFFIX",
    "FileOp",
    "apply_delete",
    "apply_write",
    "check_rel",
    "cleanup_temps",
    "current_umask",
    "read_journal",
    "remove_journal",
    "temp_name",
    "write_journal",
]
