"""Subagents in worktrees under the server: a child's worktree is a worktree run's.

The ``Subagents`` plugin's :class:`~lovia.plugins.subagent_isolation.ChildIsolation`, as the
host provides it. An isolated child gets a worktree of its own from its parent's workspace
(``HEAD`` plus the uncommitted changes; a parent that is itself a worktree run branches from
its own worktree), recorded in ``server_worktrees`` under the child's ``runId`` with
``parentRunId`` in its request. So ``lovia/worktree/list`` lists it and
``lovia/worktree/{diff,apply,discard,keep}`` review and land it like any worktree run, and
the usual clean-up rules hold (a retired worktree with work keeps its branch).

When the child ends its work is committed on its branch and the parent's report ends with
the diff's summary. A child that changed nothing has its worktree and branch removed at once.
A resumed parent takes its children back with their worktrees: the spawn key finds the child's
run, and its run id finds its worktree.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from lovia.plugins.subagent_isolation import IsolatedChild
from lovia.workspace import git_worktrees as g
from lovia.workspace.worktree_summary import summarize
from lovia_server.host.run_controller import short_id
from lovia_server.host.subagent_runs import parent_run
from lovia_server.host.worktree_store import WorktreeRecord, new_record

if TYPE_CHECKING:
    from lovia.plugins.subagents import ChildSpec
    from lovia_server.host.supervisor import RunSupervisor
    from lovia_server.host.worktree_runs import WorktreeRuns


class WorktreeChildren:
    """Puts the isolated children of supervised runs in recorded worktrees."""

    def __init__(self, runs: WorktreeRuns, supervisor: RunSupervisor) -> None:
        self.runs = runs
        self.supervisor = supervisor

    @property
    def kind(self) -> str:
        return "worktree"

    async def isolate(self, spec: ChildSpec) -> IsolatedChild:
        parent, spawn_key = parent_run(self.supervisor, spec)
        record = await self._earlier(spawn_key)
        if record is None:
            record = await self._create(spec, parent.spec.cwd, parent.run_id)
        cwd = Path(record.path) / record.request.get("cwd", ".")

        async def finish() -> str:
            return await self._finish(record)

        return IsolatedChild(agent=spec.agent, root=str(cwd), finish=finish, key=record.run_id)

    async def record(self, key: str) -> WorktreeRecord | None:
        """The worktree of an isolated child, by its :attr:`IsolatedChild.key`."""
        return await self.runs.records.get(key)

    async def isolation_of(self, run_id: str) -> str | None:
        """``"worktree"`` when the child run works in one (a resumed parent asks)."""
        record = await self.runs.records.get(run_id)
        return self.kind if record is not None and record.state == "active" else None

    async def _earlier(self, spawn_key: str) -> WorktreeRecord | None:
        """The worktree an earlier attempt made for this spawn (a resumed parent)."""
        child = await self.supervisor.store.child_by_spawn(spawn_key)
        if child is None:
            return None
        record = await self.runs.records.get(child.id)
        return record if record is not None and record.state == "active" else None

    async def _create(self, spec: ChildSpec, cwd: Path, parent_run_id: str) -> WorktreeRecord:
        repo = await g.repo_root(cwd)
        run_id = short_id("r")
        name = f"{g.slug(spec.prompt)}-{run_id[-6:]}"
        rel = cwd.relative_to(repo) if cwd.is_relative_to(repo) else Path()
        record = new_record(
            run_id=run_id,
            session_id=short_id("s"),
            workspace=str(repo),
            path=str(self.runs.dir / name),
            branch=f"lovia/{name}",
            prompt=spec.prompt,
            request={
                "cwd": rel.as_posix(),
                "includeUncommitted": True,
                "parentRunId": parent_run_id,
                "taskId": spec.id,
            },
        )
        await self.runs.records.put(record)
        path = Path(record.path)
        try:
            await g.add(repo, path, record.branch)
            await g.lock(repo, path)
            base = await g.carry_uncommitted(repo, path, self.runs.denied(repo))
        except BaseException:
            await self.runs.undo(record)
            raise
        record = record.but(state="active", base=base)
        await self.runs.records.put(record)
        return record

    async def _finish(self, record: WorktreeRecord) -> str:
        async with self.runs.locks.hold(record.run_id):  # the user may land it meanwhile
            return await self._commit(await self.runs.records.get(record.run_id) or record)

    async def _commit(self, record: WorktreeRecord) -> str:
        """Commit the child's work on its branch; its summary, or its worktree gone if none."""
        if record.state != "active" or record.base is None:
            return f"Its worktree is {record.state}."
        repo, path = Path(record.workspace), Path(record.path)
        tip = await g.commit_all(path, f"lovia: {record.prompt.strip()[:72] or 'subagent'}")
        summary = await summarize(
            path, record.base, tip, branch=record.branch, skip=self.runs.denied(repo)
        )
        if not summary.files:
            await self.runs.drop(record)
            return "It changed no files (its worktree and branch were removed)."
        return (
            f"{summary.render()}\nIt stays in its worktree, not in your workspace: the user "
            f"reviews it and applies or discards it (worktree run {record.run_id})."
        )


__all__ = ["WorktreeChildren"]
