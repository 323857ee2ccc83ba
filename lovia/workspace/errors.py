"""Workspace errors: all are ``ToolError`` subclasses, so their text reaches the model."""

from __future__ import annotations

from lovia.exceptions import ToolError


class WorkspaceError(ToolError):
    """A workspace operation failed (not a file, bad range, bad pattern, unknown process…)."""


class PermissionDeniedError(WorkspaceError):
    """The workspace ACL says ``deny`` for a path or a command."""


class WorkspaceClosedError(WorkspaceError):
    """An I/O or process method was called on a closed session."""


class FileTooLargeError(WorkspaceError):
    """``read_bytes(max_bytes=...)`` found a file bigger than the cap."""


class FileChangedError(WorkspaceError):
    """A write computed from an older text of the file than the one there now (the user or
    another program changed it since the agent read it): nothing was written."""


class EditConflictError(WorkspaceError):
    """An approved change overlaps a change made to the file after the approval was shown:
    nothing was written, the file keeps its current text."""


__all__ = [
    "EditConflictError",
    "FileChangedError",
    "FileTooLargeError",
    "PermissionDeniedError",
    "WorkspaceClosedError",
    "WorkspaceError",
]
