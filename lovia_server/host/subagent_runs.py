"""The Subagents plugin's host seams (``run_child``, ``restore``) on the run supervisor.

A child is a run of its own: its own session (``parent_id`` = the spawning session), ``runId``
and event stream (every event carries ``parentRunId``), approvals and questions that reach the
editor labelled with the child's name, ``lovia/cancel`` and ``lovia/steer`` on its ``runId``.
The parent's stream gets ``subagent.started`` / ``subagent.finished``.

Every spawn has a key, ``{parent checkpoint}:{spawning call id}``, stored on the child's run
record. A resumed parent finds its children by that key: unfinished ones resume from their own
checkpoints, finished ones hand over their stored report, and a child whose report is already
in the parent's transcript is taken back as settled, so each report reaches the parent once.

With :attr:`SubagentHost.isolation` set (the front door's worktree runs), the plugin offers
``isolation: "worktree"``: such a child runs in a worktree of its own
(:mod:`lovia_server.host.worktree_children`), with its run id and session the worktree's.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lovia.agent import Agent
from lovia.exceptions import RunCancelled, UserError
from lovia.messages import Usage
from lovia.plugins.subagents import ChildSpec, RestoredChild, Subagents
from lovia.reliability import CancelToken
from lovia.run_context import RunContext
from lovia.runtime.result import RunResult
from lovia.transcript import InputEntry, ToolResultEntry, TranscriptEntry
from lovia_server import protocol as p
from lovia_server.host.child_link import ChildLink, RunOutcome
from lovia_server.host.ports import RunSpec
from lovia_server.host.run_controller import FinalStatus, quiet
from lovia_server.host.store import RunRecord
from lovia_server.protocol import SubagentFinished, SubagentStarted

if TYPE_CHECKING:
    from lovia_server.host.supervisor import RunController, RunSupervisor
    from lovia_server.host.worktree_children import WorktreeChildren
    from lovia_server.host.worktree_store import WorktreeRecord

logger = logging.getLogger("lovia_server.subagents")

WATCH_INTERVAL = 0.3
"""How often a waiting parent checks whether the plugin asked its child to stop (seconds)."""


class SubagentFailed(Exception):
    """A child run ended without an answer; the parent's report says how."""


class SubagentHost:
    """Routes the children of supervised runs through the supervisor."""

    def __init__(self, supervisor: RunSupervisor) -> None:
        self.supervisor = supervisor
        self.isolation: WorktreeChildren | None = None
        """Where isolated children work; set by a front door that has worktree runs."""

    def bind(self, agent: Agent[Any]) -> Agent[Any]:
        """The agent with its bounded ``Subagents`` plugins routed here (others untouched)."""
        plugins: list[Any] = []
        changed = False
        for plugin in agent.plugins:
            if isinstance(plugin, Subagents) and plugin.bounded and plugin.run_child is None:
                plugin = dataclasses.replace(
                    plugin,
                    run_child=self.run_child,
                    restore=self.restore,
                    approvals_reach_user=True,
                    isolation=plugin.isolation or self.isolation,
                )
                changed = True
            plugins.append(plugin)
        return agent.clone(plugins=plugins) if changed else agent

    # ------------------------------------------------------------------ run_child

    async def run_child(self, spec: ChildSpec) -> RunResult:
        parent, spawn_key = parent_run(self.supervisor, spec)
        link = ChildLink(parent.run_id, parent.session_id, spec.id, spec.agent.name, spawn_key)
        record = await self.supervisor.store.child_by_spawn(spawn_key)
        if record is not None and not record.resumable:
            return _stored_outcome(record, spec)
        # a plan-mode run's child stays in its parent's (plan-mode) workspace session: a
        # worktree of its own would be judged by the host's ACL, not the parent's plan mode
        place = None if parent.spec.plan else await self._place(spec)
        run_spec = await self._run_spec(spec, parent, place)
        sup = self.supervisor
        if record is None:
            launch = await sup.start(
                session_id=place.session_id if place else await sup.claim_session(None),
                run_id=place.run_id if place else None,
                new_session=place is not None,
                prompt=spec.prompt,
                model_input=spec.prompt,
                spec=run_spec,
                max_turns=spec.max_turns,
                link=link,
                mailbox=spec.mailbox,
            )
        else:

            async def same_spec(_record: RunRecord) -> RunSpec:
                return run_spec

            launch = await sup.resume(
                record.id, same_spec, max_turns=spec.max_turns, link=link, mailbox=spec.mailbox
            )
        ctl = sup.runs.get(launch.run_id)
        assert ctl is not None  # registered before start/resume return
        parent.log.emit(
            SubagentStarted(
                child_run_id=ctl.run_id,
                child_session_id=ctl.session_id,
                task_id=spec.id,
                name=spec.agent.name,
                prompt=spec.prompt,
                tool_call_id=spec.call_id,
                resumed=record is not None,
            )
        )
        return _result(await self._wait(ctl, spec.token), spec)

    async def _place(self, spec: ChildSpec) -> WorktreeRecord | None:
        """The worktree an isolated child runs in (its run id and session are the record's)."""
        if spec.place is None or spec.place.key is None or self.isolation is None:
            return None
        return await self.isolation.record(spec.place.key)

    async def _run_spec(
        self, spec: ChildSpec, parent: RunController, place: WorktreeRecord | None
    ) -> RunSpec:
        # A child works in its parent's workspace session (same ACL, overlays, rules); an
        # isolated one in a session of its own at its worktree (the host's ACL, as for any
        # worktree run), whatever workspace the agent came with (a self-clone has the parent's).
        workspace = self.supervisor.workspace
        if place is None or spec.place is None:
            root, cwd = parent.spec.root, parent.spec.cwd
            agent = await workspace.attach(spec.agent, root, parent.session_id)
        else:
            root, cwd = Path(place.path), Path(spec.place.root)
            agent = await workspace.attach(spec.agent.clone(workspace=None), root, place.session_id)
        model = agent.model
        label = model if isinstance(model, str) else getattr(model, "model", None)
        return RunSpec(
            agent=agent,
            agent_label=agent.name,
            model_label=label or parent.spec.model_label,
            root=root,
            cwd=cwd,
            context_window=parent.spec.context_window,
            budget=spec.budget,
            plan=parent.spec.plan,  # a plan-mode run's children never ask either
        )

    async def _wait(self, ctl: RunController, token: CancelToken) -> RunOutcome:
        """The child's outcome; the plugin's cancel token (or task cancel) stops the child."""
        sup = self.supervisor
        try:
            while True:
                try:
                    return await asyncio.wait_for(asyncio.shield(ctl.outcome), WATCH_INTERVAL)
                except TimeoutError:
                    if token.is_cancelled and not ctl.user_cancelled:
                        sup.stop(ctl.run_id, reason=token.reason or "cancelled by the parent agent")
        except asyncio.CancelledError:
            if not ctl.shutting_down:
                sup.stop(ctl.run_id, reason="the parent run ended")
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(ctl.outcome), 10)
            raise

    # ------------------------------------------------------------------ finished

    async def child_finished(
        self,
        ctl: RunController,
        status: FinalStatus,
        usage: p.Usage,
        result: Any,
        run_error: p.RunError | None,
    ) -> None:
        """Keep a finished child's report until its parent has it; tell the parent's stream."""
        assert ctl.link is not None
        summary: str | None = None
        if status == "completed" and result is not None:
            summary = child_report_text(result.output)
            await quiet(self.supervisor.store.set_report(ctl.run_id, summary))
        parent = self.supervisor.runs.get(ctl.link.parent_run_id)
        if parent is None:
            return
        parent.log.emit(
            SubagentFinished(
                child_run_id=ctl.run_id,
                task_id=ctl.link.task_id,
                status=status,
                usage=usage,
                summary=_first_line(summary) if summary else None,
                error=run_error,
            )
        )

    # ------------------------------------------------------------------ restore

    async def restore(self, ctx: RunContext[Any]) -> list[RestoredChild]:
        """The children an interrupted attempt of this run spawned, as the roster takes them."""
        parent = self.supervisor.runs.of_session(ctx.session_id or "")
        if parent is None or not parent.resumed or ctx.run_id is None:
            return []
        prefix = f"{ctx.run_id}:"
        records = [
            r
            for r in await self.supervisor.store.children_of([parent.run_id])
            if r.spawn_key is not None and r.spawn_key.startswith(prefix)
        ]
        if not records:
            return []
        snapshot = await self.supervisor.checkpointer.load(ctx.run_id)
        entries = list(snapshot.entries) if snapshot is not None else []
        answered = {e.call_id for e in entries if isinstance(e, ToolResultEntry)}
        seen = _transcript_text(entries)
        out: list[RestoredChild] = []
        for record in records:
            assert record.spawn_key is not None and record.task_id is not None
            call_id = record.spawn_key[len(prefix) :]
            if call_id != record.task_id and call_id not in answered:
                # The spawn itself was not checkpointed: the parent runs it again, and that
                # call finds this child by its key.
                continue
            out.append(
                RestoredChild(
                    id=record.task_id,
                    agent=record.agent or "",
                    prompt=record.prompt or "",
                    call_id=call_id,
                    delivered=f"[subagent {record.task_id}:" in seen
                    or f"{record.task_id} was cancelled" in seen,
                    isolation=await self.isolation.isolation_of(record.id)
                    if self.isolation is not None
                    else None,
                )
            )
        return out


def parent_run(supervisor: RunSupervisor, spec: ChildSpec) -> tuple[RunController, str]:
    """The live run that spawned ``spec`` and the child's spawn key (stable across a resume
    of the parent: its checkpoint id plus the spawning call)."""
    parent = supervisor.runs.of_session(spec.parent_session_id or "")
    if parent is None:
        raise UserError(
            "A subagent was spawned outside a supervised run",
            hint="Children run as child runs of a live run of the lovia server.",
        )
    return parent, f"{parent.checkpoint_id}:{spec.call_id or spec.id}"


def _transcript_text(entries: list[TranscriptEntry]) -> str:
    parts: list[str] = []
    for entry in entries:
        if isinstance(entry, InputEntry) and isinstance(entry.content, str):
            parts.append(entry.content)
        elif isinstance(entry, ToolResultEntry):
            parts.append(entry.output)
    return "\n".join(parts)


def _result(outcome: RunOutcome, spec: ChildSpec) -> RunResult:
    if outcome.status == "completed" and isinstance(outcome.result, RunResult):
        return outcome.result
    stopped = outcome.status == "interrupted" and spec.token.is_cancelled
    if outcome.status == "cancelled" or stopped:
        raise RunCancelled(spec.token.reason or "the subagent was cancelled")
    error = outcome.run_error
    detail = f"{error.type}: {error.message}" if error is not None else outcome.status
    raise SubagentFailed(f"the subagent run ended {outcome.status} ({detail})")


def _stored_outcome(record: RunRecord, spec: ChildSpec) -> RunResult:
    """A child that ended in an earlier attempt of the parent: its stored outcome."""
    if record.status == "completed":
        return RunResult(
            output=record.report or "",
            entries=[],
            final_agent=spec.agent,
            usage=Usage(),
            turns=0,
        )
    if record.status == "cancelled":
        raise RunCancelled("the subagent was cancelled")
    raise SubagentFailed(f"the subagent run ended {record.status} ({record.error or 'no answer'})")


def child_report_text(output: Any) -> str:
    """A child's output as the text its report carries (and the store keeps)."""
    if output is None:
        return ""
    return output if isinstance(output, str) else repr(output)


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


__all__ = ["SubagentFailed", "SubagentHost", "child_report_text", "parent_run"]
