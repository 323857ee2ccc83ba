"""What ``lovia/worktree/list`` and ``lovia/status.worktrees`` show of the worktree runs: the
records with their latest run's status and usage, or only how many stand where."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lovia_server import protocol as p

if TYPE_CHECKING:
    from lovia_server.host.worktree_runs import WorktreeRuns


async def listing(runs: WorktreeRuns, include_closed: bool) -> p.WorktreeListResult:
    """Newest first; `runStatus` and `usage` are the session's latest run's (a follow-up)."""
    out = []
    for record in await runs.records.all(open_only=not include_closed):
        latest = record.request.get("latestRunId") or record.run_id
        run = await runs.store.get_run(latest)
        out.append(
            p.WorktreeRun(
                run_id=record.run_id,
                session_id=record.session_id,
                state=record.state,
                run_status=run.status if run is not None else None,
                prompt=record.prompt,
                branch=record.branch,
                path=record.path,
                workspace=record.workspace,
                base=record.base,
                created_at=int(record.created_at * 1000),
                usage=run.usage if run is not None else None,
                parent_run_id=record.request.get("parentRunId"),
                latest_run_id=latest,
            )
        )
    return p.WorktreeListResult(worktrees=out)


async def counts(runs: WorktreeRuns) -> p.WorktreeCounts:
    """The open worktree runs by where they stand, for ``lovia/status``."""
    queued = running = review = 0
    for record in await runs.records.all(open_only=True):
        if record.state == "queued":
            queued += 1
        elif runs.supervisor.runs.of_session(record.session_id) is not None:
            running += 1
        else:
            review += 1
    return p.WorktreeCounts(
        queued=queued, running=running, review=review, max_concurrent=runs.max_concurrent()
    )


__all__ = ["counts", "listing"]
