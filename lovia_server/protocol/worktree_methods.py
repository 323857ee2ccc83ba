"""Params and results of the ``lovia/worktree/*`` requests: review and land worktree runs.

A worktree run (``lovia/run`` with ``isolation: "worktree"``) works in a git worktree of its
own; these requests list such runs, show what one changed, land it in the workspace, discard
it or keep its branch. The ``Method`` rows are in ``methods.py`` with every other request.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field
from typing_extensions import TypeAliasType

from lovia_server.protocol.events import Usage
from lovia_server.protocol.wire import WireModel, WireParams, omitted

Isolation = TypeAliasType("Isolation", Literal["workspace", "worktree"])
WorktreeState = TypeAliasType(
    "WorktreeState", Literal["queued", "active", "applied", "discarded", "kept"]
)
LandingVerdict = TypeAliasType(
    "LandingVerdict", Literal["clean", "merged", "unchanged", "conflict"]
)
_Id = Annotated[str, Field(min_length=1)]


class WorktreeRunParams(WireParams):
    run_id: _Id


class WorktreeListParams(WireParams):
    include_closed: bool = False
    """Also the runs already applied, discarded or kept."""


class WorktreeRun(WireModel):
    """One worktree run: where it works and how far it got."""

    run_id: str
    session_id: str
    state: WorktreeState
    """``queued`` (waits for a slot), ``active`` (its worktree exists, lovia owns it), then
    ``applied``, ``discarded`` or ``kept`` (the branch is the user's)."""
    run_status: str | None
    """The run's own status (``running``, ``completed``, ``interrupted``...); null while queued."""
    prompt: str
    branch: str
    path: str
    workspace: str
    base: str | None
    """The commit the run's changes are measured against (HEAD plus carried changes)."""
    created_at: int
    usage: Usage | None = None
    parent_run_id: str | None = omitted()
    """Set for a subagent's worktree: the run that spawned it (``spawn_subagent`` with
    ``isolation: "worktree"``)."""
    latest_run_id: str | None = omitted()
    """The session's latest run in this worktree: ``runId`` itself, or the last follow-up
    (``lovia/run`` with this ``sessionId``); ``runStatus`` and ``usage`` are that run's."""


class WorktreeListResult(WireModel):
    worktrees: list[WorktreeRun]


class WorktreeFile(WireModel):
    """One file the run changed, judged against the workspace as it is now."""

    path: str
    uri: str
    """The workspace's file (where applying writes)."""
    status: Literal["added", "modified", "deleted"]
    binary: bool
    old_text: str | None
    """The workspace's text now (null: absent or binary)."""
    new_text: str | None
    """What applying writes (null: the file is deleted, or binary, or a conflict)."""
    patch: str
    """The run's unified diff of the file against its base."""
    verdict: LandingVerdict
    reason: str | None = None
    protected: bool = False
    """The workspace's policy protects the path (editor, git, CI or agent configuration):
    applying it needs ``confirmProtected`` after the user saw the warning."""


class WorktreeDiffResult(WireModel):
    run_id: str
    branch: str
    base: str
    files: list[WorktreeFile]
    skipped: list[str]
    """Changed paths the ACL denies (``deniedPaths``): never shown nor applied."""


class WorktreeEdit(WireParams):
    """The text the user approved for one file after reviewing its hunks."""

    path: _Id
    new_text: str


class WorktreeApplyParams(WireParams):
    run_id: _Id
    paths: list[_Id] | None = None
    """Only these files (default: every changed file)."""
    edits: list[WorktreeEdit] = Field(default_factory=list)
    """Per file, the reviewed text to land instead of the run's (hunks accepted or edited)."""
    also_discard: list[_Id] = Field(default_factory=list)
    """Other worktree runs to discard once this one landed (best-of-n in one call)."""
    confirm_protected: list[_Id] = Field(default_factory=list)
    """The protected files (``protected: true`` in the diff) the user confirmed after seeing
    the warning; a protected file not listed refuses the apply (-32021, ``data.paths``)."""


class WorktreeApplyResult(WireModel):
    run_id: str
    applied: bool
    files: list[str]
    """The workspace files written (relative), when applied."""
    conflicts: list[WorktreeFile]
    """Why nothing was written: the files whose workspace version changed in the way."""
    checkpoint_id: str | None = None
    """The restore point taken first (``lovia/restore`` undoes the landing)."""
    discarded: list[str] = Field(default_factory=list)


class WorktreeDiscardResult(WireModel):
    run_id: str
    state: WorktreeState


class WorktreeKeepResult(WireModel):
    run_id: str
    branch: str
    state: WorktreeState


class WorktreeCounts(WireModel):
    """``lovia/status.worktrees``: where this state directory's open worktree runs stand (the
    runs themselves: ``lovia/worktree/list``)."""

    queued: int
    """Waiting for a slot."""
    running: int
    """A run is live in its worktree (a subagent's too)."""
    review: int
    """Nothing runs there: the work waits to be applied, discarded or kept."""
    max_concurrent: int
    """``lovia.worktrees.maxConcurrent``: worktree runs of one workspace at once."""


__all__ = [
    "Isolation",
    "LandingVerdict",
    "WorktreeApplyParams",
    "WorktreeApplyResult",
    "WorktreeCounts",
    "WorktreeDiffResult",
    "WorktreeDiscardResult",
    "WorktreeEdit",
    "WorktreeFile",
    "WorktreeKeepResult",
    "WorktreeListParams",
    "WorktreeListResult",
    "WorktreeRun",
    "WorktreeRunParams",
    "WorktreeState",
]
