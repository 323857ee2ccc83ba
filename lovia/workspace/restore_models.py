"""Restore points' models: the settings, the points, previews and results hosts see, the errors,
and the two records the store passes around internally."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr, field_validator

from lovia.exceptions import LoviaError

PointKind = Literal["turn", "restore", "manual"]


@dataclass(frozen=True)
class RestorePointSettings:
    """Caps of the restore-point store (documented in ``docs/restore-points.md``).

    The editor setting that becomes it is ``lovia_server.protocol.settings.RestorePointSettings``.
    """

    max_file_bytes: int = 5 * 1024 * 1024
    """Files bigger than this are not snapshotted (listed as skipped, never touched)."""
    max_store_bytes: int = 1024 * 1024 * 1024
    """Per-workspace store size; ``prune()`` deletes the oldest points beyond it."""
    max_listed_paths: int = 200
    """How many changed/skipped paths a point lists (counts are always exact)."""
    preview_max_bytes: int = 1024 * 1024
    """Per-file text shown in a preview; bigger or binary files show no text."""


def _display(path: str) -> str:
    """A file name that is not valid UTF-8 shows with U+FFFD (JSON cannot carry it)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


class _PathModel(BaseModel):
    path: str

    @field_validator("path", mode="before")
    @classmethod
    def _printable(cls, value: Any) -> Any:
        return _display(value) if isinstance(value, str) else value


class ChangedPath(_PathModel):
    status: Literal["added", "modified", "deleted"]


class SkippedPath(_PathModel):
    reason: Literal["too_large", "unreadable", "denied", "unsaved_file_in_the_way", "failed"]
    detail: str | None = None


class RestorePoint(BaseModel):
    """One snapshot of the tree. ``changed`` is relative to the previous point."""

    id: str
    created_at: float
    kind: PointKind = "manual"
    session_id: str | None = None
    turn_index: int | None = None
    label: str = ""
    user_message: str | None = None
    changed: list[ChangedPath] = Field(default_factory=list)
    changed_count: int = 0
    skipped: list[SkippedPath] = Field(default_factory=list)
    skipped_count: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)
    base_tree: str = ""
    """The tree last recorded for the agent when this point was taken (a settled run, a
    restore or the previous point); where it differs from ``tree`` the difference was made
    by hand. Empty when they were equal."""
    commit: str = ""
    tree: str = ""
    changes_after: list[ChangedPath] | None = None
    """With ``list_points(with_changes=True)``: what changed from this point to the state
    recorded after it (the next point's ``base_tree``, or the newest recorded state), i.e.
    what the turn did. Hand changes made outside runs are not included."""
    changes_after_count: int | None = None


class FileRestore(_PathModel):
    """What a restore does to one path. ``old_*`` is the disk now, ``new_*`` the point."""

    action: Literal["create", "modify", "delete"]
    old_mode: str | None = None
    new_mode: str | None = None
    old_blob: str | None = None
    new_blob: str | None = None
    old_text: str | None = None
    new_text: str | None = None
    binary: bool = False
    too_large: bool = False
    """Over ``preview_max_bytes``: no text is shown (the restore itself is not affected)."""
    hand_changed: bool = False
    protected: bool = False
    """The policy protects the path (editor, git, CI or agent configuration): restoring its
    content needs the user's confirmation (``confirmed_protected``)."""
    diff: str = ""
    _raw: str = PrivateAttr(default="")  # the path as on disk (may not be valid UTF-8)

    @property
    def raw_path(self) -> str:
        return self._raw or self.path


class RestorePreview(BaseModel):
    point: RestorePoint
    files: list[FileRestore]
    skipped: list[SkippedPath] = Field(default_factory=list)

    @property
    def hand_changed(self) -> list[str]:
        """Paths changed by hand since the last snapshot; restore keeps them unless forced."""
        return [f.path for f in self.files if f.hand_changed]

    def unified_diff(self) -> str:
        return "".join(f.diff for f in self.files)


class RestoreResult(BaseModel):
    """What a restore did; its wire form is ``lovia_server.protocol.methods.RestoreResult``."""

    point: RestorePoint
    undo_point: RestorePoint | None = None
    """The snapshot taken just before restoring: restore it to undo this restore."""
    restored: list[str] = Field(default_factory=list)
    changes: list[ChangedPath] = Field(default_factory=list)
    """The restored paths with what the restore did to each (``added`` = recreated)."""
    kept: list[str] = Field(default_factory=list)
    """Hand-changed paths left alone (pass them in ``force_paths`` to overwrite)."""
    skipped: list[SkippedPath] = Field(default_factory=list)


class RestorePointError(LoviaError):
    """A restore-point operation cannot be done (unknown point, git missing, damaged store)."""


class UnconfirmedProtectedPaths(RestorePointError):
    """The restore would land protected paths (``paths``) the user did not confirm."""

    paths: list[str]


@dataclass(frozen=True)
class _Head:
    """The shadow repository's HEAD: the state last recorded for the agent."""

    commit: str
    tree: str


@dataclass
class _Entry:
    path: str
    old_mode: str | None
    new_mode: str | None
    old_sha: str | None
    new_sha: str | None
    status: str
