"""Race-free file access for the session (internal).

The ACL judges a *resolved* path (no symlinks left in it). These helpers then walk
that exact path from ``/`` one component at a time with ``O_NOFOLLOW``, so a symlink
swapped in after the check cannot redirect the operation: the walk fails instead.
Writes go to a temporary file created with ``O_EXCL|O_NOFOLLOW`` in the verified
parent directory and are renamed over the target, which replaces the directory
entry (a symlink or a hard link there is replaced, never written through).
Non-regular files (FIFOs, sockets, devices) are refused before they are opened, and
opened with ``O_NONBLOCK`` so a swap cannot make a read hang.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path
from typing import NoReturn

from lovia.workspace.errors import WorkspaceError

_O_PATH = getattr(os, "O_PATH", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_NOCTTY = getattr(os, "O_NOCTTY", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)

_DIR_WALK = (_O_PATH or os.O_RDONLY) | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
_DIR_LIST = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
_FILE_READ = os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_NOCTTY | _O_CLOEXEC
FILE_READ_FLAGS = _FILE_READ
"""Flags for opening a file to read: no symlink, no blocking on FIFOs, no controlling tty."""


class PathChangedError(WorkspaceError):
    """A path changed between the ACL check and its use (e.g. a symlink was swapped in)."""


class NotRegularFileError(WorkspaceError):
    pass


class IsDirectoryError(WorkspaceError):
    pass


def _changed(path: Path) -> PathChangedError:
    return PathChangedError(
        f"Path changed while it was being accessed: {path}",
        hint="A directory or file on the path was replaced (for example by a symbolic link) "
        "after the permission check. Retry the operation.",
    )


def open_dir(path: Path, *, create: bool = False, listable: bool = False) -> int:
    """Open directory ``path`` (absolute, resolved) without following any symlink.

    ``create`` makes missing components (``mkdir -p``). ``listable`` returns an fd
    that ``os.scandir`` accepts. Raises ``FileNotFoundError``/``NotADirectoryError``
    for honest misses and :class:`PathChangedError` when a symlink is in the way.
    """
    parts = path.parts
    if not parts or parts[0] != "/":
        raise WorkspaceError(f"Not an absolute path: {path}")
    fd = os.open("/", (_DIR_LIST if listable and len(parts) == 1 else _DIR_WALK))
    try:
        for i, comp in enumerate(parts[1:], start=1):
            flags = _DIR_LIST if listable and i == len(parts) - 1 else _DIR_WALK
            try:
                nfd = os.open(comp, flags, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(comp, 0o777, dir_fd=fd)
                nfd = _open_component(comp, flags, fd, path)
            except OSError as exc:
                _raise_component_error(exc, comp, fd, path)
            os.close(fd)
            fd = nfd
        return fd
    except BaseException:
        os.close(fd)
        raise


def _open_component(comp: str, flags: int, fd: int, path: Path) -> int:
    try:
        return os.open(comp, flags, dir_fd=fd)
    except OSError as exc:
        _raise_component_error(exc, comp, fd, path)


def _raise_component_error(exc: OSError, comp: str, fd: int, path: Path) -> NoReturn:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        try:
            st = os.stat(comp, dir_fd=fd, follow_symlinks=False)
        except OSError:
            raise _changed(path) from None
        if stat.S_ISLNK(st.st_mode):
            raise _changed(path) from None
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(path)) from None
    raise exc


def lstat_in(path: Path) -> os.stat_result | None:
    """``lstat`` of ``path`` through a verified parent; None if it does not exist."""
    try:
        dfd = open_dir(path.parent)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return os.stat(path.name or ".", dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    finally:
        os.close(dfd)


def open_regular(path: Path) -> int:
    """Open a regular file for reading without following symlinks and without blocking."""
    if not path.name:
        raise NotRegularFileError(f"Not a file: {path}")
    try:
        dfd = open_dir(path.parent)
    except (FileNotFoundError, NotADirectoryError):
        raise NotRegularFileError(f"Not a file: {path}") from None
    try:
        try:
            st = os.stat(path.name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            raise NotRegularFileError(f"Not a file: {path}") from None
        if stat.S_ISLNK(st.st_mode):
            raise _changed(path)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(f"Not a file: {path}")
        try:
            fd = os.open(path.name, _FILE_READ, dir_fd=dfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _changed(path) from None
            raise
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(f"Not a file: {path}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_fd(fd: int, limit: int | None = None) -> bytes:
    """Read up to ``limit`` bytes (all when None) from ``fd``."""
    chunks: list[bytes] = []
    remaining = limit
    while remaining is None or remaining > 0:
        want = 1 << 20 if remaining is None else min(remaining, 1 << 20)
        try:
            chunk = os.read(fd, want)
        except BlockingIOError:  # pragma: no cover - regular files never block
            break
        if not chunk:
            break
        chunks.append(chunk)
        if remaining is not None:
            remaining -= len(chunk)
    return b"".join(chunks)


def read_bytes(path: Path, limit: int | None = None) -> tuple[bytes, int]:
    """``(data, size)``: up to ``limit`` leading bytes of a regular file and its size."""
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        return read_fd(fd, limit), size
    finally:
        os.close(fd)


def _check_target(dfd: int, name: str, path: Path) -> os.stat_result | None:
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode):
        raise IsDirectoryError(f"Is a directory: {path}")
    if stat.S_ISLNK(st.st_mode):
        raise _changed(path)
    if not stat.S_ISREG(st.st_mode):
        raise NotRegularFileError(f"Not a regular file: {path}")
    return st


def atomic_write(path: Path, data: bytes) -> bool:
    """Replace ``path`` with ``data`` atomically; return whether it existed before.

    Parents are created. Permission bits of an existing file are kept (else 0644).
    The temporary file ``.{name}.*.tmp`` lives in the same, verified directory.
    """
    dfd = open_dir(path.parent, create=True)
    try:
        return replace_in(dfd, path.name, data, path=path)
    finally:
        os.close(dfd)


def write_new(dfd: int, name: str, data: bytes, mode: int) -> None:
    """Create entry ``name`` of the open directory ``dfd`` (it must not exist: no link is ever
    followed) holding ``data`` with permission bits ``mode``."""
    fd = os.open(
        name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600, dir_fd=dfd
    )
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def replace_in(dfd: int, name: str, data: bytes, *, path: Path, mode: int | None = None) -> bool:
    """Atomically set entry ``name`` of the open directory ``dfd`` to a regular file holding
    ``data``; return whether it existed. ``mode`` defaults to the existing file's bits (else
    0644). A symlink, a directory or a special file there is refused, never written through;
    a hard link is replaced (the rename swaps the entry), so its other names keep their data."""
    st = _check_target(dfd, name, path)
    if mode is None:
        mode = stat.S_IMODE(st.st_mode) if st is not None else 0o644
    tmp = f".{name}.{secrets.token_hex(4)}.tmp"
    try:
        write_new(dfd, tmp, data, mode)
        os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dfd)
        raise
    return st is not None


def remove_in(dfd: int, name: str, *, path: Path) -> bool:
    """Remove entry ``name`` (a file or a symlink, never followed) of the open directory
    ``dfd``; return whether it existed. A directory or a special file is refused."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(st.st_mode):
        raise IsDirectoryError(f"Is a directory: {path}")
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise NotRegularFileError(f"Not a regular file: {path}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dfd)
    return True


def exclusive_create(path: Path, data: bytes) -> bool:
    """Create ``path`` with ``data`` only if nothing exists there; False if something does."""
    dfd = open_dir(path.parent, create=True)
    try:
        try:
            fd = os.open(
                path.name,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC,
                0o644,
                dir_fd=dfd,
            )
        except FileExistsError:
            return False
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
        finally:
            os.close(fd)
        return True
    finally:
        os.close(dfd)


def is_regular_mode(mode: int) -> bool:
    return stat.S_ISREG(mode)


def is_special_mode(mode: int) -> bool:
    """FIFOs, sockets and devices: never opened by walks or reads."""
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode)


__all__ = [
    "IsDirectoryError",
    "NotRegularFileError",
    "PathChangedError",
    "atomic_write",
    "exclusive_create",
    "is_regular_mode",
    "is_special_mode",
    "lstat_in",
    "open_dir",
    "open_regular",
    "read_bytes",
    "read_fd",
    "remove_in",
    "replace_in",
]
