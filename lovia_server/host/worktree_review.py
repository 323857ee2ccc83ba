"""A worktree run's work as the client reviews it (``lovia/worktree/diff``) and lands it
(``lovia/worktree/apply``): the record's changes judged by :mod:`worktree_landing` against the
workspace's policy, its unsaved files and what it holds now.

The caller holds the worktree's lock (:mod:`worktree_lock`) and has checked the record is open;
closing the worktree after a landing is the caller's too.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from lovia.workspace import git_worktrees as g
from lovia.workspace.protected import protects
from lovia_server import protocol as p
from lovia_server.host import worktree_landing as landing
from lovia_server.host.worktree_store import WorktreeRecord

if TYPE_CHECKING:
    from lovia_server.host.worktree_runs import WorktreeRuns


async def changes(
    runs: WorktreeRuns, record: WorktreeRecord
) -> tuple[list[landing.Change], list[str]]:
    """The run's changed files (the worktree as it is now, committed or not) and the paths
    the workspace's policy denies (never shown nor landed)."""
    if record.state != "active" or record.base is None:
        raise p.ProtocolError(
            p.WORKTREE_NOT_FOUND,
            f"{record.run_id} has no worktree yet ({record.state})",
            {"runId": record.run_id, "state": record.state},
        )
    repo, path = Path(record.workspace), Path(record.path)
    tip = await g.snapshot_tree(path)
    return await landing.changes(
        repo,
        path,
        record.base,
        tip,
        runs.denied(repo),
        protected=partial(protects, runs.policy(repo), repo),
    )


async def diff(runs: WorktreeRuns, record: WorktreeRecord) -> p.WorktreeDiffResult:
    repo = Path(record.workspace)
    found, skipped = await changes(runs, record)
    plans = await landing.plan(found, {}, set(runs.unsaved(repo)))
    return p.WorktreeDiffResult(
        run_id=record.run_id,
        branch=record.branch,
        base=record.base or "",
        files=[landing.wire_file(repo, plan) for plan in plans],
        skipped=skipped,
    )


async def apply(
    runs: WorktreeRuns, record: WorktreeRecord, params: p.WorktreeApplyParams
) -> p.WorktreeApplyResult:
    """Land the run's changes (the reviewed text where given) after a restore point of the
    workspace, or report the conflicts (then nothing is written)."""
    repo = Path(record.workspace)
    found, _ = await changes(runs, record)
    if params.paths is not None:
        wanted = set(params.paths)
        found = [c for c in found if c.path in wanted]
    edits: Mapping[str, str] = {e.path: e.new_text for e in params.edits}
    plans = await landing.plan(found, edits, set(runs.unsaved(repo)))
    conflicts = [plan for plan in plans if plan.verdict == "conflict"]
    checkpoint = None
    if not conflicts:
        landing.require_confirmed(record.run_id, plans, params.confirm_protected)
        if runs.restore_point is not None:
            checkpoint = await runs.restore_point(
                repo, record.session_id, f"before applying {record.branch}"
            )
        conflicts = await landing.write(repo, plans, await landing.modes(Path(record.path), plans))
    if conflicts:
        return p.WorktreeApplyResult(
            run_id=record.run_id,
            applied=False,
            files=[],
            conflicts=[landing.wire_file(repo, plan) for plan in conflicts],
        )
    return p.WorktreeApplyResult(
        run_id=record.run_id,
        applied=True,
        files=[plan.change.path for plan in plans if plan.verdict != "unchanged"],
        conflicts=[],
        checkpoint_id=checkpoint,
    )


__all__ = ["apply", "changes", "diff"]
