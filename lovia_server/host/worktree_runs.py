"""Worktree runs: a run in a git worktree of its own, several at once, then reviewed and landed.

The lifecycle of one: recorded (``queued``) -> worktree created on ``lovia/<slug>-<id>`` from
the workspace's HEAD plus, by default, its uncommitted changes, and locked (``active``) -> the
run works there (its workspace, ACL root, restore points and shell cwd are the worktree) ->
the user applies it (through :mod:`worktree_landing`), discards it, or keeps the branch.

Runs of one workspace run concurrently up to ``lovia.worktrees.maxConcurrent``; more wait in
the queue, in order. Everything is in ``state.db`` (:mod:`worktree_store`), so after a crash
:meth:`WorktreeRuns.recover` lists them again, resumes the interrupted ones in their worktrees,
finishes or undoes a half-made worktree, and retires the worktrees whose runs were deleted
(keeping the branch when it holds work: nothing unapplied is ever removed).

A follow-up prompt in a worktree run's session (:meth:`WorktreeRuns.follow_up`) is a new run
in the same worktree, on the same branch, while the worktree is still ``active``; the record
keeps its first ``runId`` (what ``lovia/worktree/*`` take) and notes the latest run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from lovia.workspace import git_worktrees as g
from lovia.workspace.policy import WorkspacePolicy
from lovia.workspace.worktree_isolation import denied_by
from lovia_server import protocol as p
from lovia_server.host import worktree_listing, worktree_review
from lovia_server.host.run_controller import short_id
from lovia_server.host.store import ServerStore
from lovia_server.host.supervisor import RunSupervisor
from lovia_server.host.worktree_lock import WorktreeLocks
from lovia_server.host.worktree_store import WorktreeRecord, WorktreeStore, new_record

logger = logging.getLogger("lovia_server.host.worktree_runs")

Gate = asyncio.Future[None]
"""Done when the worktree is checked out: the run's tools wait for it, its model does not."""
Launch = Callable[[WorktreeRecord, Path, Gate], Awaitable[p.LaunchResult]]
"""Start the recorded run with the worktree as its workspace root (the front door builds the
agent); the second argument is the run's cwd inside the worktree."""
Resume = Callable[[str, Gate | None], Awaitable[p.LaunchResult]]
Continue = Callable[[Path], Awaitable[p.LaunchResult]]
"""Start a follow-up run in the worktree's session; the argument is its cwd in the worktree."""
Policy = Callable[[Path], WorkspacePolicy]
"""A workspace root's policy (``folder_config``'s): what is denied, what is protected."""
RestorePoint = Callable[[Path, str, str], Awaitable[str | None]]
"""(workspace root, session id, label) -> the id of a restore point taken now, if any."""
DropRoot = Callable[[Path], Awaitable[None]]
"""A worktree is gone: what the host kept for it as a root (its restore points) goes too."""


@dataclass(frozen=True)
class WorktreeRequest:
    prompt: str
    model_input: str
    cwd: Path
    agent: str | None
    model: str | None
    include_uncommitted: bool
    session_id: str | None = None
    """The conversation the run joins (an ACP session with ``isolation: worktree``); by
    default a new one."""


class WorktreeRuns:
    def __init__(
        self,
        *,
        state_dir: Path,
        store: ServerStore,
        supervisor: RunSupervisor,
        max_concurrent: Callable[[], int],
        policy: Policy,
        unsaved: Callable[[Path], list[str]],
        restore_point: RestorePoint | None,
        drop_root: DropRoot | None,
        launch: Launch,
        resume: Resume,
    ) -> None:
        self.dir = state_dir / "worktrees"
        self.records = WorktreeStore(store)
        self.store = store
        self.supervisor = supervisor
        self.max_concurrent = max_concurrent
        self.policy = policy
        self.unsaved = unsaved
        self.restore_point = restore_point
        self.drop_root = drop_root
        self.launch = launch
        self.resume_run = resume
        self._slots: dict[str, set[str]] = {}
        self._preparing: dict[str, Gate] = {}
        self._lock = asyncio.Lock()
        self.locks = WorktreeLocks()
        """Each worktree's: what touches its tree holds it (:mod:`worktree_lock`)."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._ending: dict[str, asyncio.Task[None]] = {}
        """Per worktree, the end of its last run being handled (its commit, its slot)."""

    def denied(self, root: Path) -> Callable[[str], bool]:
        """Whether ``root``'s policy denies a path relative to it (never carried nor landed)."""
        return denied_by(self.policy(root), root)

    # ================================================================== starting

    async def start(self, request: WorktreeRequest) -> p.LaunchResult:
        """Record the run, then start it now or queue it; a refusal is a protocol error."""
        repo = await _repo(request.cwd)
        run_id = short_id("r")
        name = f"{g.slug(request.prompt)}-{run_id[-6:]}"
        rel = request.cwd.relative_to(repo) if request.cwd.is_relative_to(repo) else Path()
        record = new_record(
            run_id=run_id,
            session_id=request.session_id or short_id("s"),
            workspace=str(repo),
            path=str(self.dir / name),
            branch=f"lovia/{name}",
            prompt=request.prompt,
            request={
                "modelInput": request.model_input,
                "agent": request.agent,
                "model": request.model,
                "cwd": rel.as_posix(),
                "includeUncommitted": request.include_uncommitted,
            },
        )
        await self.records.put(record)
        async with self._lock:
            if len(self._slots.get(record.workspace, ())) >= self.max_concurrent():
                return p.LaunchResult(session_id=record.session_id, run_id=run_id, status="queued")
            self._slots.setdefault(record.workspace, set()).add(run_id)
        return await self._begin(record)

    async def _begin(self, record: WorktreeRecord) -> p.LaunchResult:
        """Register the worktree and start the run in it (the slot is already taken); the
        checkout goes on while the model thinks (the run's tools wait for it)."""
        path = Path(record.path)
        try:
            record, gate = await self._register(record)
            result = await self.launch(record, path / record.request.get("cwd", "."), gate)
        except BaseException as exc:
            self._release(record)
            await self._forget_preparation(record)
            await _quietly(self._undo_half_made(record))
            await self.records.put(record.but(state="discarded"))
            if isinstance(exc, g.GitProblem):
                raise _unavailable(exc) from None
            raise
        self._watch(record)
        return result

    async def _register(self, record: WorktreeRecord) -> tuple[WorktreeRecord, Gate]:
        """A fresh, locked, still empty worktree on the run's branch; its preparation started."""
        repo, path = Path(record.workspace), Path(record.path)
        await self._undo_half_made(record)
        await g.add(repo, path, record.branch, checkout=False)
        await g.lock(repo, path)
        record = record.but(state="active", base=None)
        await self.records.put(record)
        gate = asyncio.get_running_loop().create_task(self._prepare(record))
        self._preparing[record.run_id] = gate
        return record, gate

    async def _prepare(self, record: WorktreeRecord) -> None:
        """Check the worktree out, carry the workspace's uncommitted changes, record the base.
        Until the base is recorded the worktree holds nothing of the run's."""
        repo, path = Path(record.workspace), Path(record.path)
        await g.check_out(path)
        base = (await g.git(path, "rev-parse", "HEAD")).decode().strip()
        if record.request.get("includeUncommitted", True):
            base = await g.carry_uncommitted(repo, path, self.denied(repo))
        await self.records.put(record.but(base=base))

    async def _forget_preparation(self, record: WorktreeRecord) -> None:
        gate = self._preparing.pop(record.run_id, None)
        if gate is not None and not gate.done():
            gate.cancel()
            await asyncio.wait({gate})

    async def _ready(self, record: WorktreeRecord) -> WorktreeRecord:
        """The record once its worktree is prepared (a preparation failure is an error)."""
        gate = self._preparing.get(record.run_id)
        if gate is not None:
            try:
                await asyncio.shield(gate)
            except g.GitProblem as exc:
                raise _unavailable(exc) from None
        return await self.records.get(record.run_id) or record

    async def _remove(self, record: WorktreeRecord) -> None:
        """Remove the worktree (not its branch) and what the host kept for it: first its
        restore points, once those being taken after its last run are (they read the tree)."""
        path = Path(record.path)
        if self.drop_root is not None:
            await _quietly(self.drop_root(path))
        await g.remove(Path(record.workspace), path)

    async def undo(self, record: WorktreeRecord) -> None:
        """A worktree that never got its run: removed with its branch, the record closed."""
        await _quietly(self._undo_half_made(record))
        await self.records.put(record.but(state="discarded"))

    async def drop(self, record: WorktreeRecord) -> None:
        """Discard a worktree nobody runs in (a child's that changed nothing)."""
        await self._close(record, "discarded")

    async def _close(self, record: WorktreeRecord, state: str) -> None:
        """Remove the worktree and its branch (applied or discarded: nothing left to keep)."""
        await self._remove(record)
        await g.delete_branch(Path(record.workspace), record.branch)
        await self.records.put(record.but(state=state))

    async def _undo_half_made(self, record: WorktreeRecord) -> None:
        """What a crash (or a failure) left of a worktree that never got its run."""
        repo, path = Path(record.workspace), Path(record.path)
        listed = any(e.path == path for e in await _quiet_entries(repo))
        if listed or await asyncio.to_thread(path.exists):
            await g.remove(repo, path)
        if await g.branch_exists(repo, record.branch):
            await g.delete_branch(repo, record.branch)

    def _watch(self, record: WorktreeRecord, run_id: str | None = None) -> None:
        """When the run ends: its work is committed on the branch (under the worktree's lock:
        a landing may have come first), the slot goes to the queue."""

        async def watch() -> None:
            try:
                await self.supervisor.wait_run(run_id or record.run_id)
                async with self.locks.hold(record.run_id):
                    run = await self.store.get_run(run_id or record.run_id)
                    ready = await self._ready(record)  # kept, applied or discarded meanwhile:
                    active = ready.state == "active" and ready.base is not None  # nothing to do
                    if run is not None and run.status != "interrupted" and active:
                        title = _title(run.prompt or record.prompt)
                        await g.commit_all(Path(record.path), f"lovia: {title}")
            except Exception:
                logger.warning("worktree.commit_failed: %s", record.run_id, exc_info=True)
            finally:
                self._release(record)
                if self._ending.get(record.run_id) is asyncio.current_task():
                    del self._ending[record.run_id]
            self._spawn(self._pump(record.workspace))

        task = self._spawn(watch())
        self._ending[record.run_id] = task

    def _release(self, record: WorktreeRecord) -> None:
        self._slots.get(record.workspace, set()).discard(record.run_id)

    async def _pump(self, workspace: str) -> None:
        """Start queued runs of ``workspace`` while slots are free, oldest first."""
        queued = [r for r in await self.records.all(open_only=True) if r.state == "queued"]
        for record in sorted(queued, key=lambda r: r.created_at):
            if record.workspace != workspace:
                continue
            async with self._lock:
                taken = self._slots.setdefault(workspace, set())
                if len(taken) >= self.max_concurrent() or record.run_id in taken:
                    return
                taken.add(record.run_id)
            try:
                await self._begin(record)
            except Exception:
                logger.warning("worktree.start_failed: %s", record.run_id, exc_info=True)

    def _spawn(self, coro: Awaitable[None]) -> asyncio.Task[None]:
        async def run() -> None:
            await coro

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _last_run_handled(self, record: WorktreeRecord) -> None:
        """Before another run starts in the worktree: the last one's end is handled (its work
        committed under its own title, its slot freed), unless it is still running (then the
        new one is refused as busy)."""
        ending = self._ending.get(record.run_id)
        if ending is not None and self.supervisor.runs.of_session(record.session_id) is None:
            await asyncio.wait({ending})

    # ================================================================== follow-ups

    async def of_session(self, session_id: str) -> WorktreeRecord | None:
        """The worktree run whose conversation ``session_id`` is, if it is one."""
        records = await self.records.of_session(session_id)
        return max(records, key=lambda r: r.created_at) if records else None

    async def follow_up(self, record: WorktreeRecord, start: Continue) -> p.LaunchResult:
        """A new run in the worktree's session, in the same worktree: its diff grows. Only
        while the worktree is ``active``; it takes a slot like a new worktree run (refused,
        not queued, when none is free)."""
        await self._last_run_handled(record)
        async with self.locks.hold(record.run_id):
            return await self._follow_up(await self.records.get(record.run_id) or record, start)

    async def _follow_up(self, record: WorktreeRecord, start: Continue) -> p.LaunchResult:
        if record.state != "active":
            raise p.ProtocolError(
                p.WORKTREE_NOT_FOUND,
                f"The worktree run {record.run_id} is {record.state}: its worktree is gone",
                {
                    "runId": record.run_id,
                    "sessionId": record.session_id,
                    "state": record.state,
                    "hint": "Start a new run (in the workspace or a new worktree); a kept "
                    "branch is yours to check out with git.",
                },
            )
        record = await self._ready(record)
        async with self._lock:
            taken = self._slots.setdefault(record.workspace, set())
            if record.run_id not in taken and len(taken) >= self.max_concurrent():
                raise p.ProtocolError(
                    p.RUN_ALREADY_ACTIVE,
                    f"All {len(taken)} worktree slots of this workspace are busy",
                    {
                        "sessionId": record.session_id,
                        "hint": "Send the prompt again when a worktree run finishes, or raise "
                        "lovia.worktrees.maxConcurrent.",
                    },
                )
            taken.add(record.run_id)
        try:
            result = await start(Path(record.path) / record.request.get("cwd", "."))
        except BaseException:
            self._release(record)
            raise
        request = {**record.request, "latestRunId": result.run_id}
        await self.records.put(record.but(request=request))
        self._watch(record, result.run_id)
        return result

    # ================================================================== after a restart

    async def recover(self) -> None:
        """Take up what the previous process left: resume interrupted runs in their worktrees,
        retire worktrees whose runs were deleted, start the queue."""
        workspaces = set()
        for record in await self.records.all(open_only=True):
            workspaces.add(record.workspace)
            try:
                await self._recover_one(record)
            except Exception:
                logger.warning("worktree.recover_failed: %s", record.run_id, exc_info=True)
        for workspace in workspaces:
            await self._pump(workspace)

    async def _recover_one(self, record: WorktreeRecord) -> None:
        child = record.request.get("parentRunId") is not None
        if record.state == "queued":
            await self._undo_half_made(record)
            if child:  # a subagent's worktree is never queued: it was being made
                await self.records.put(record.but(state="discarded"))
            return
        run = await self.store.get_run(record.run_id)
        if run is None:
            await self._retire(record)
            return
        if child:
            return  # its parent's resume takes it back (docs/worktrees.md, subagents)
        latest = await self.store.get_run(record.request.get("latestRunId") or record.run_id)
        if latest is not None and latest.status == "interrupted" and latest.resumable:
            await self.resume(record.run_id, latest.id)
        elif record.base is None:
            # Died while checking out, after the run ended: no tool of it ran (they wait for
            # the checkout), so preparing it again loses nothing.
            _, gate = await self._register(record)
            await asyncio.shield(gate)

    async def resume(self, run_id: str, which: str | None = None) -> p.LaunchResult:
        """Resume a worktree run in its worktree (it takes a slot like a new one); one whose
        checkout a crash interrupted is prepared again first (no tool of it ran). ``which`` is
        the run of its session to resume (a follow-up), by default the first."""
        record = await self.records.get(run_id)
        if record is not None:
            await self._last_run_handled(record)
        async with self.locks.hold(run_id):
            return await self._resume(run_id, which)

    async def _resume(self, run_id: str, which: str | None) -> p.LaunchResult:
        record = await self._open(run_id)
        target = which or run_id
        if self.supervisor.runs.get(target) is not None:
            raise p.ProtocolError(
                p.RUN_ALREADY_ACTIVE,
                f"Run {target} is already running",
                {"runId": target, "activeRunId": target},
            )
        async with self._lock:
            self._slots.setdefault(record.workspace, set()).add(run_id)
        try:
            gate = None
            if record.base is None and run_id not in self._preparing:
                record, gate = await self._register(record)
            result = await self.resume_run(target, gate)
        except BaseException:
            self._release(record)
            raise
        self._watch(record, target)
        return result

    async def _retire(self, record: WorktreeRecord) -> None:
        """The run is gone (its session deleted): keep the branch if it holds work, else drop."""
        async with self.locks.hold(record.run_id):
            record = await self._ready(record)
            if record.state in ("queued", "active"):
                await self._retire_now(record)

    async def _retire_now(self, record: WorktreeRecord) -> None:
        repo, path = Path(record.workspace), Path(record.path)
        tip = record.base
        if tip is not None and await asyncio.to_thread(path.exists):
            tip = await g.commit_all(path, f"lovia: {_title(record.prompt)}")
        await self._remove(record)
        if tip is not None and tip != record.base:
            await self.records.put(record.but(state="kept"))
        else:
            await g.delete_branch(repo, record.branch)
            await self.records.put(record.but(state="discarded"))

    async def forget_session(self, session_id: str) -> None:
        for record in await self.records.of_session(session_id):
            if record.state in ("queued", "active"):
                await self._retire(record)

    # ================================================================== queries

    def root_of(self, path: Path) -> Path | None:
        """The worktree ``path`` is in, if it is in one of ours."""
        if path.is_relative_to(self.dir) and path != self.dir:
            return self.dir / path.relative_to(self.dir).parts[0]
        return None

    async def owns(self, run_id: str) -> bool:
        return await self.records.get(run_id) is not None

    async def listing(self, include_closed: bool) -> p.WorktreeListResult:
        return await worktree_listing.listing(self, include_closed)

    async def counts(self) -> p.WorktreeCounts:
        return await worktree_listing.counts(self)

    async def _open(self, run_id: str, *, idle: bool = False) -> WorktreeRecord:
        record = await self.records.get(run_id)
        if record is None or record.state not in ("queued", "active"):
            raise p.ProtocolError(
                p.WORKTREE_NOT_FOUND,
                f"{run_id} is not an open worktree run",
                {"runId": run_id, "state": record.state if record else None},
            )
        live = self.supervisor.runs.of_session(record.session_id) if idle else None
        if live is not None:
            raise p.ProtocolError(
                p.RUN_ALREADY_ACTIVE,
                f"Run {live.run_id} is still running: cancel it or wait for it to finish",
                {"runId": run_id, "activeRunId": live.run_id},
            )
        return record

    async def cancel_queued(self, run_id: str) -> bool:
        """Drop a run that is still waiting for a slot (True when it was queued)."""
        record = await self.records.get(run_id)
        if (
            record is None
            or record.state != "queued"
            or record.run_id in self._slots.get(record.workspace, set())
        ):
            return False
        await self.records.put(record.but(state="discarded"))
        return True

    # ================================================================== review and land

    async def diff(self, run_id: str) -> p.WorktreeDiffResult:
        async with self.locks.hold(run_id):
            return await worktree_review.diff(self, await self._ready(await self._open(run_id)))

    async def apply(self, params: p.WorktreeApplyParams) -> p.WorktreeApplyResult:
        """Land the run's changes (the reviewed text where given) or report the conflicts;
        then discard the others named (each under its own lock, after this one's)."""
        async with self.locks.hold(params.run_id):
            record = await self._ready(await self._open(params.run_id, idle=True))
            result = await worktree_review.apply(self, record, params)
            if result.applied:
                await self._close(record, "applied")
        if result.applied:
            for other in params.also_discard:
                if other != params.run_id:
                    await self.discard(other)
                    result.discarded.append(other)
        return result

    async def discard(self, run_id: str) -> p.WorktreeDiscardResult:
        async with self.locks.hold(run_id):
            record = await self._open(run_id, idle=True)
            if not await self.cancel_queued(run_id):
                await self._close(record, "discarded")
        return p.WorktreeDiscardResult(run_id=run_id, state="discarded")

    async def keep(self, run_id: str) -> p.WorktreeKeepResult:
        async with self.locks.hold(run_id):
            return await self._keep(await self._open(run_id, idle=True))

    async def _keep(self, record: WorktreeRecord) -> p.WorktreeKeepResult:
        run_id = record.run_id
        if record.state != "active":
            raise p.ProtocolError(
                p.WORKTREE_NOT_FOUND,
                f"{run_id} has no worktree yet (queued)",
                {"runId": run_id, "state": record.state},
            )
        path = Path(record.path)
        if (await self._ready(record)).base is not None:
            await g.commit_all(path, f"lovia: {_title(record.prompt)}")
        await self._remove(record)
        await self.records.put(record.but(state="kept"))
        return p.WorktreeKeepResult(run_id=run_id, branch=record.branch, state="kept")

    async def aclose(self) -> None:
        """Stop watching and preparing: a checkout cut short is redone at the next start."""
        for task in [*self._tasks, *self._preparing.values()]:
            task.cancel()
        pending = [t for t in self._preparing.values() if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=5)


async def _repo(cwd: Path) -> Path:
    try:
        return await g.repo_root(cwd)
    except g.GitProblem as exc:
        raise _unavailable(exc) from None


def _unavailable(exc: g.GitProblem) -> p.ProtocolError:
    return p.ProtocolError(
        p.WORKTREE_UNAVAILABLE,
        exc.message,
        {"field": "isolation", "reason": exc.reason, "hint": exc.hint},
    )


async def _quietly(work: Awaitable[None]) -> None:
    try:
        await work
    except Exception:
        logger.debug("worktree.cleanup_failed", exc_info=True)


async def _quiet_entries(repo: Path) -> list[g.WorktreeEntry]:
    try:
        return await g.entries(repo)
    except g.GitProblem:
        return []


def _title(prompt: str) -> str:
    first = prompt.strip().splitlines()[0] if prompt.strip() else "worktree run"
    return first[:72]


__all__ = ["WorktreeRequest", "WorktreeRuns"]
