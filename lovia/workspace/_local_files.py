"""The workspace session's file helpers: opening and reading without following a swapped
link, digests of known text, and the notes a stale or merged write returns."""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from lovia.workspace import _fs
from lovia.workspace.errors import WorkspaceError
from lovia.workspace.paths import ResolvedPath

_PARTLY_KNOWN = "partly-known"
"""A ``_seen`` value no digest equals: the next whole-file write needs a read first."""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _changed_note(display: str) -> str:
    return (
        f"note: {display} had changed since you last read it (the user or another program "
        "edited it); your replacement was applied to its current text, which keeps their "
        "change. Read it again before rewriting it whole with write_file."
    )


def _merged_note(display: str) -> str:
    return (
        f"note: {display} had changed after your change was shown for approval (the user or "
        "another program edited other lines); your change was merged into it and their "
        "changes were kept. Read it again before rewriting it whole with write_file."
    )


def _check_range(start: int | None, end: int | None) -> None:
    if start is not None and start < 1:
        raise WorkspaceError("start must be >= 1.")
    if end is not None and end < 1:
        raise WorkspaceError("end must be >= 1.")
    if start is not None and end is not None and end < start:
        raise WorkspaceError("end must be >= start.")


def _binary_error(display: str) -> WorkspaceError:
    return WorkspaceError(
        f"Binary file: {display}",
        hint="Inspect it with the shell instead (file, xxd | head, sqlite3, ...).",
    )


def _open_file(rp: ResolvedPath) -> int:
    try:
        return _fs.open_regular(rp.abs)
    except _fs.NotRegularFileError:
        raise WorkspaceError(f"Not a file: {rp.display()}") from None
    except (FileNotFoundError, NotADirectoryError):
        raise WorkspaceError(f"Not a file: {rp.display()}") from None
    except PermissionError as exc:
        raise WorkspaceError(f"Cannot read {rp.display()}: {exc.strerror}") from None


def _open_listable(rp: ResolvedPath) -> int:
    try:
        return _fs.open_dir(rp.abs, listable=True)
    except (FileNotFoundError, NotADirectoryError):
        raise WorkspaceError(f"Not a directory: {rp.display()}") from None
    except PermissionError as exc:
        raise WorkspaceError(f"Cannot list {rp.display()}: {exc.strerror}") from None


def _read_capped(fd: int, cap: int) -> tuple[bytes, int]:
    size = os.fstat(fd).st_size
    return _fs.read_fd(fd, cap), size


def _lstat(rp: ResolvedPath) -> os.stat_result | None:
    try:
        return _fs.lstat_in(rp.abs)
    except OSError:
        return None


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _io_errors(method: Callable[_P, Awaitable[_R]]) -> Callable[_P, Awaitable[_R]]:
    """Turn an unexpected ``OSError`` (a race, EIO, EACCES...) into a ``WorkspaceError``."""

    @functools.wraps(method)
    async def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return await method(*args, **kwargs)
        except WorkspaceError:
            raise
        except OSError as exc:
            target = args[1] if len(args) > 1 else kwargs.get("path", ".")
            verb = method.__name__.replace("_", " ")
            raise WorkspaceError(
                f"{verb} failed for {target!r}: {exc.strerror or exc}",
                hint="The file system changed or refused the operation; retry or check the path.",
            ) from None

    return wrapper
