"""RunSupervisor: live runs by session, their event logs, approvals, steering, cancel, resume.

Each run is an asyncio task that drives ``Runner.stream`` and translates lovia events into
protocol events. At most one live run per session. Everything durable (transcripts,
checkpoints, run records, event logs) lives in the state database, so a restarted server can
list, replay and resume what the previous process left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from lovia import Runner, events
from lovia.checkpointer import Checkpointer, CheckpointOptions
from lovia.exceptions import BudgetExceeded, MaxTurnsExceeded, RunCancelled
from lovia.messages import Usage
from lovia.parts import text_of
from lovia.plugins.todo import TodoItem, todos_from_entries
from lovia.reliability import CancelToken
from lovia.runtime.checkpoint import CheckpointWriter
from lovia.session import Session
from lovia.steering import Mailbox
from lovia.tools.base import Tool
from lovia.tools.human import HumanChannel
from lovia.tools.presentation import can_preview
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    drop_dangling_tool_calls,
)
from lovia.workspace.protected import protected_warning
from lovia_server import protocol as p
from lovia_server.child_link import ChildLink, RunOutcome
from lovia_server.event_log import EventLog, Publisher
from lovia_server.events import (
    APPROVAL_OPTIONS,
    PROTECTED_OPTIONS,
    approval_command,
    approval_subject,
    error_payload,
    output_payload,
    parse_arguments,
    path_uri,
    protected_targets,
    todo_items,
    tool_kind,
    tool_locations,
    tool_source,
    tool_title,
    usage_payload,
    workspace_policy,
)
from lovia_server.ports import (
    EditorPort,
    ProgressStage,
    RestorePort,
    RunSpec,
    RunTurn,
    WorkspacePort,
)
from lovia_server.protocol import (
    ApprovalAction,
    ApprovalBy,
    ApprovalOutcome,
    ApprovalRequested,
    ApprovalResolved,
    Compaction,
    Decision,
    DiffContent,
    FileDiff,
    Handoff,
    MessageCompleted,
    OutputDiscarded,
    QuestionAnswered,
    QuestionRequested,
    RunFinished,
    RunStarted,
    RunStatus,
    SubagentFinished,
    TextContent,
    TodoUpdated,
    ToolCallStarted,
    ToolContent,
    ToolResult,
    ToolStatus,
    ToolStream,
    UsageUpdated,
    UserMessage,
    as_run_status,
    as_tool_kind,
)
from lovia_server.reviewed_edits import ReviewedFile
from lovia_server.store import RunRecord, ServerStore, checkpoint_id, run_of_checkpoint
from lovia_server.subagent_host import SubagentHost

logger = logging.getLogger("lovia_server.supervisor")

T = TypeVar("T")

FinalStatus = Literal["completed", "failed", "cancelled", "interrupted"]


@dataclass(frozen=True)
class ApprovalAnswer:
    """An approval's answer, one shape from ``lovia/approve`` (or the editor, or a cancel) to the
    run: the wire's ``Decision``, the message a rejection tells the model, and who answered."""

    decision: Decision
    message: str | None = None
    by: ApprovalBy = "user"
    cancelled: bool = False
    # What the user approved instead of the proposal (``lovia/approve`` edits), per file.
    edits: tuple[ReviewedFile, ...] | None = None

    @property
    def outcome(self) -> ApprovalOutcome:
        if self.cancelled:
            return "cancelled"
        return "allowed" if self.decision.allows else "rejected"

    def apply(self, ev: events.ApprovalRequired) -> None:
        """Let the waiting tool call run, or decline it with the message."""
        if self.outcome == "allowed":
            ev.approve()
        else:
            ev.reject(self.message)


CANCELLED_ANSWER = ApprovalAnswer(Decision.REJECT_ONCE, cancelled=True)


@dataclass
class PendingApproval:
    approval_id: str
    tool_call_id: str
    subject: str
    future: asyncio.Future[ApprovalAnswer]
    payload: ApprovalRequested


@dataclass
class CallInfo:
    name: str
    args: dict[str, Any]
    tool: Tool | None = None  # as the run resolved the call: its presentation, not its name
    announced: bool = False
    declined: bool = False
    diff: list[FileDiff] | None = None
    result_sent: bool = False


@dataclass
class RunController:
    run_id: str
    session_id: str
    spec: RunSpec
    prompt: str
    log: EventLog
    resumed: bool
    max_turns: int
    cancel_token: CancelToken = field(default_factory=CancelToken)
    mailbox: Mailbox = field(default_factory=Mailbox)
    status: RunStatus = "running"
    task: asyncio.Task[None] | None = None
    approvals: dict[str, PendingApproval] = field(default_factory=dict)
    questions: dict[str, str] = field(default_factory=dict)
    steers: deque[tuple[str, int, str]] = field(default_factory=deque)
    calls: dict[str, CallInfo] = field(default_factory=dict)
    message_id: str = ""
    message_has_text: bool = False
    usage: Usage = field(default_factory=Usage)
    context_tokens: int | None = None
    turns: int = 0
    user_cancelled: bool = False
    hard_cancelled: bool = False
    shutting_down: bool = False
    awaiting_model: bool = False  # a turn started and its message is not complete yet
    started_at: float = field(default_factory=time.time)
    last_handoff_reason: str | None = None
    leg: int = 0
    # resumed, but from the prompt: the previous process died before the first checkpoint
    from_prompt: bool = False
    turn_index: int = 0  # the run's place among its session's runs (the user's turns)
    checkpointed: bool = False  # this attempt took its turn's restore point
    link: ChildLink | None = None
    outcome: asyncio.Future[RunOutcome] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    @property
    def parent_run_id(self) -> str | None:
        return self.link.parent_run_id if self.link is not None else None

    @property
    def subagent(self) -> p.SubagentRef | None:
        return self.link.ref(self.run_id) if self.link is not None else None

    # what the prompt's context items gave the model (the chips on its user.message)
    context: list[p.ContextSummary] = field(default_factory=list)

    @property
    def checkpoint_id(self) -> str:
        return checkpoint_id(self.run_id, self.leg)

    @property
    def turn(self) -> RunTurn:
        return RunTurn(
            session_id=self.session_id,
            run_id=self.run_id,
            turn_index=self.turn_index,
            prompt=self.prompt,
            root=self.spec.root,
        )

    def new_message(self) -> str:
        self.message_id = f"msg_{uuid.uuid4().hex[:12]}"
        self.message_has_text = False
        return self.message_id


def _short_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


class RunSupervisor:
    """Owns live runs; the language server calls one method per request."""

    def __init__(
        self,
        *,
        store: ServerStore,
        session_store: Session,
        checkpointer: Checkpointer,
        publisher: Publisher,
        editor: EditorPort,
        workspace: WorkspacePort,
        questions: HumanChannel,
        approval_timeout: Callable[[], float | None] = lambda: None,
        restore: RestorePort | None = None,
    ) -> None:
        self.store = store
        self.sessions = session_store
        self.checkpointer = checkpointer
        self.publisher = publisher
        self.editor = editor
        self.workspace = workspace
        self.questions = questions
        self.approval_timeout = approval_timeout
        self.restore = restore
        self.subagents = SubagentHost(self)
        self.live: dict[str, RunController] = {}
        self.by_run: dict[str, RunController] = {}
        self.session_rules: dict[str, dict[str, Literal["allow", "reject"]]] = {}
        # Tools seen in this process by agent label: how stored transcripts are presented.
        self.tools_seen: dict[str, dict[str, Tool]] = {}
        self._question_runs: dict[str, str] = {}

    # ================================================================== start-up

    async def recover(self) -> list[str]:
        """Mark runs a previous process left running as interrupted; close their event logs."""
        recovered = []
        for record in await self.store.runs_with_status("running"):
            snapshot = await self.checkpointer.load(record.checkpoint_id)
            if await self._leg_in_session(record):
                # The process died after the run's last leg reached the session: it finished.
                await self._recover_finished(record, snapshot)
                continue
            # A checkpoint marked completed whose entries never reached the session is
            # resumable too: resuming it appends them (the session ignores a repeated segment).
            resumable = snapshot is not None or await self._restartable(record)
            log = EventLog(
                record.id,
                record.session_id,
                self.publisher,
                last_seq=await self.store.last_seq(record.id),
                coalesce=False,
            )
            open_calls, open_approvals = await self._open_items(record.id)
            for approval_id in open_approvals:
                log.emit(
                    ApprovalResolved(approval_id=approval_id, outcome="cancelled", by="policy")
                )
            for call_id in open_calls:
                log.emit(ToolResult.cancelled(call_id, "The server stopped."))
            error = p.RunError(
                type="ServerRestarted", message="The server stopped during this run."
            )
            usage = record.usage or usage_payload(
                snapshot.usage if snapshot else Usage(),
                context_tokens=None,
                context_window=None,
            )
            log.emit(
                RunFinished(status="interrupted", error=error, usage=usage, resumable=resumable)
            )
            await log.close()
            await self.store.finish_run(
                record.id,
                status="interrupted",
                error=error.message,
                usage=record.usage,
                resumable=resumable,
            )
            recovered.append(record.id)
        return recovered

    async def _leg_in_session(self, record: RunRecord) -> bool:
        segments = await self.sessions.segments(record.session_id)
        return any(seg.run_id == record.checkpoint_id for seg in segments)

    async def _recover_finished(self, record: RunRecord, snapshot: Any) -> None:
        """Close the log of a run that ended just before its process died, as completed."""
        log = EventLog(
            record.id,
            record.session_id,
            self.publisher,
            last_seq=await self.store.last_seq(record.id),
            coalesce=False,
        )
        usage = record.usage or usage_payload(
            snapshot.usage if snapshot else Usage(), context_tokens=None, context_window=None
        )
        output = output_payload(snapshot.output) if snapshot is not None else None
        log.emit(RunFinished(status="completed", usage=usage, resumable=False, output=output))
        await log.close()
        await _quiet(self.checkpointer.delete(record.checkpoint_id))
        await self.store.finish_run(
            record.id, status="completed", error=None, usage=usage, resumable=False
        )

    async def _open_items(self, run_id: str) -> tuple[list[str], list[str]]:
        """Tool calls without a result and approvals without a resolution in the last attempt."""
        calls: dict[str, None] = {}
        approvals: dict[str, None] = {}
        for event in await self.store.events_after(run_id, 0):
            kind = event.get("kind")
            if kind == "run.started":
                calls.clear()
                approvals.clear()
            elif kind == "tool.call":
                calls[event["toolCallId"]] = None
            elif kind == "tool.result":
                calls.pop(event["toolCallId"], None)
            elif kind == "approval.requested":
                approvals[event["approvalId"]] = None
            elif kind == "approval.resolved":
                approvals.pop(event["approvalId"], None)
        return list(calls), list(approvals)

    # ================================================================== requests

    def controller(self, run_id: str) -> RunController:
        ctl = self.by_run.get(run_id)
        if ctl is None:
            raise p.ProtocolError(
                p.RUN_NOT_ACTIVE, f"Run {run_id} is not running", {"runId": run_id}
            )
        return ctl

    async def ensure_known_run(self, run_id: str) -> RunRecord:
        record = await self.store.get_run(run_id)
        if record is None:
            raise p.ProtocolError(p.RUN_NOT_FOUND, f"Unknown run {run_id}", {"runId": run_id})
        return record

    async def active_controller(self, run_id: str) -> RunController:
        if run_id in self.by_run:
            return self.by_run[run_id]
        await self.ensure_known_run(run_id)
        raise p.ProtocolError(p.RUN_NOT_ACTIVE, f"Run {run_id} has finished", {"runId": run_id})

    def _check_session_free(self, session_id: str) -> None:
        live = self.live.get(session_id)
        if live is not None:
            raise p.ProtocolError(
                p.RUN_ALREADY_ACTIVE,
                f"Session {session_id} already has a live run",
                {"activeRunId": live.run_id, "sessionId": session_id},
            )

    async def claim_session(self, session_id: str | None) -> str:
        """A new session id, or the given one if it exists and has no live run."""
        if session_id is None:
            return _short_id("s")
        if await self.store.get_session(session_id) is None and session_id not in self.live:
            raise p.ProtocolError(
                p.RUN_NOT_FOUND, f"Unknown session {session_id}", {"sessionId": session_id}
            )
        self._check_session_free(session_id)
        return session_id

    async def start(
        self,
        *,
        session_id: str,
        prompt: str,
        model_input: Any,
        spec: RunSpec,
        max_turns: int,
        link: ChildLink | None = None,
        mailbox: Mailbox | None = None,
        context: list[p.ContextSummary] | None = None,
        new_session: bool = False,
    ) -> p.LaunchResult:
        """Start a run; ``new_session`` when ``claim_session`` just minted the id (it has no
        earlier runs to look at)."""
        self._check_session_free(session_id)
        run_id = _short_id("r")
        log = EventLog(
            run_id,
            session_id,
            self.publisher,
            parent_run_id=link.parent_run_id if link is not None else None,
        )
        ctl = RunController(
            run_id=run_id,
            session_id=session_id,
            spec=spec,
            prompt=prompt,
            log=log,
            resumed=False,
            max_turns=max_turns,
            link=link,
            mailbox=mailbox if mailbox is not None else Mailbox(),
            context=context or [],
        )

        async def persist() -> None:
            if not new_session:  # a session claim_session just minted has no runs to close
                await self._supersede_interrupted(session_id)
            ctl.turn_index = (
                0 if new_session else len(await self.store.runs_for_session(session_id))
            )
            title = prompt.strip().splitlines()[0] if prompt.strip() else "Untitled"
            if link is not None:
                title = f"[{link.task_id}] {title}"
            await self.store.upsert_session(
                session_id,
                title=title,
                agent=spec.agent_label,
                cwd=str(spec.cwd),
                parent_id=link.parent_session_id if link is not None else None,
            )
            await self.store.insert_run(self._record(ctl))

        return await self._launch(ctl, model_input, persist)

    async def resume(
        self,
        run_id: str,
        spec_for: Callable[[RunRecord], Awaitable[RunSpec]],
        *,
        max_turns: int,
        link: ChildLink | None = None,
        mailbox: Mailbox | None = None,
    ) -> p.LaunchResult:
        record = await self.ensure_known_run(run_id)
        if record.parent_run_id is not None and link is None:
            raise p.ProtocolError(
                p.NOT_RESUMABLE,
                f"Run {run_id} is a subagent: resume its parent run {record.parent_run_id}",
                {"runId": run_id, "status": record.status, "parentRunId": record.parent_run_id},
            )
        self._check_session_free(record.session_id)
        snapshot = await self.checkpointer.load(record.checkpoint_id)
        # A process that died before the run's first checkpoint leaves only the run record:
        # the run starts again from its prompt (nothing of it reached the session).
        from_prompt = snapshot is None and record.resumable and await self._restartable(record)
        if not from_prompt and (not record.resumable or snapshot is None):
            raise p.ProtocolError(
                p.NOT_RESUMABLE,
                f"Run {run_id} cannot be resumed (status {record.status})",
                {"runId": run_id, "status": record.status},
            )
        spec = await spec_for(record)
        log = EventLog(
            run_id,
            record.session_id,
            self.publisher,
            last_seq=await self.store.last_seq(run_id),
            parent_run_id=record.parent_run_id,
        )
        ctl = RunController(
            run_id=run_id,
            session_id=record.session_id,
            spec=spec,
            prompt=record.prompt or "",
            log=log,
            resumed=True,
            max_turns=(snapshot.turns if snapshot else 0) + max_turns,
            leg=record.leg,
            from_prompt=from_prompt,
            link=link,
            mailbox=mailbox if mailbox is not None else Mailbox(),
        )
        if snapshot is not None:
            ctl.usage = snapshot.usage.clone()

        async def persist() -> None:
            runs = [r.id for r in await self.store.runs_for_session(record.session_id)]
            ctl.turn_index = runs.index(run_id) if run_id in runs else len(runs)
            await self.store.insert_run(self._record(ctl))
            await self.store.touch_session(record.session_id)

        return await self._launch(ctl, record.prompt if from_prompt else "", persist)

    async def _restartable(self, record: RunRecord) -> bool:
        """A first leg with a prompt whose checkpoint never got written and whose entries are
        not in the session: nothing of it was kept, so it can start again from the prompt."""
        if record.leg != 0 or not record.prompt:
            return False
        return not await self._leg_in_session(record)

    async def _launch(
        self, ctl: RunController, model_input: Any, persist: Callable[[], Awaitable[None]]
    ) -> p.LaunchResult:
        """Register before any await (a concurrent start then sees the session as busy),
        persist the records, then start the run task."""
        ctl.spec.agent = self.subagents.bind(ctl.spec.agent)
        self._register(ctl)
        try:
            await persist()
        except BaseException:
            self._unregister(ctl)
            raise
        ctl.task = asyncio.get_running_loop().create_task(self._drive(ctl, model_input))
        return p.LaunchResult(session_id=ctl.session_id, run_id=ctl.run_id, status="running")

    def steer(self, ctl: RunController, message: str) -> p.SteerResult:
        message_id = _short_id("u")
        token = ctl.mailbox.push(message)
        ctl.steers.append((message_id, token, message))
        return p.SteerResult(run_id=ctl.run_id, message_id=message_id, accepted=True)

    def unsteer(self, ctl: RunController, message_id: str) -> p.UnsteerResult:
        for item in ctl.steers:
            if item[0] == message_id:
                withdrawn = ctl.mailbox.remove(item[1])
                if withdrawn:
                    ctl.steers.remove(item)
                return p.UnsteerResult(withdrawn=withdrawn)
        return p.UnsteerResult(withdrawn=False)

    def approve(
        self,
        ctl: RunController,
        approval_id: str,
        decision: Decision,
        message: str | None,
        edits: list[p.EditedFile] | None = None,
    ) -> p.ApproveResult:
        pending = ctl.approvals.get(approval_id)
        if pending is None or pending.future.done():
            raise p.ProtocolError(
                p.APPROVAL_NOT_FOUND,
                f"No pending approval {approval_id}",
                {"approvalId": approval_id, "outcome": "resolved" if pending else "unknown"},
            )
        reviewed = self._reviewed_files(ctl, pending, decision, edits) if edits else None
        pending.future.set_result(ApprovalAnswer(decision, message, "user", edits=reviewed))
        return p.ApproveResult(
            approval_id=approval_id, outcome="allowed" if decision.allows else "rejected"
        )

    def _reviewed_files(
        self,
        ctl: RunController,
        pending: PendingApproval,
        decision: Decision,
        edits: list[p.EditedFile],
    ) -> tuple[ReviewedFile, ...] | None:
        """The approval's files with the user's text where given (None: nothing differs)."""
        diffs = pending.payload.diff or []
        if not decision.allows:
            raise p.invalid_params("edits go with an allow decision", "edits")
        if not diffs or not self.workspace.can_review(ctl.spec):
            raise p.invalid_params("This approval has no edit preview that can be changed", "edits")
        by_path = {d.path: d for d in diffs}
        approved: dict[str, str] = {}
        for index, edit in enumerate(edits):
            if edit.path not in by_path:
                raise p.invalid_params(
                    f"{edit.path} is not a file of this approval", f"edits.{index}.path"
                )
            approved[edit.path] = edit.new_text
        files = tuple(
            ReviewedFile(d.path, d.old_text, d.new_text, approved.get(d.path, d.new_text))
            for d in diffs
        )
        return files if any(f.applied != f.proposed for f in files) else None

    def cancel(self, ctl: RunController, *, reason: str = "user requested stop") -> p.CancelResult:
        if not ctl.user_cancelled:
            ctl.user_cancelled = True
            ctl.status = "cancelling"
            ctl.cancel_token.cancel(reason)
            self._resolve_all_approvals(ctl)
            self._cancel_questions(ctl)
            if ctl.task is not None:
                asyncio.get_running_loop().create_task(self._hard_cancel_after(ctl, 3.0))
            for child in self.children_of(ctl.run_id):
                self.cancel(child, reason="the parent run was cancelled")
        return p.CancelResult(run_id=ctl.run_id, status="cancelling")

    def emit_to_session(self, session_id: str, payload: p.EventPayload) -> None:
        """An event for the live run of a session (a pooled MCP server's state change)."""
        ctl = self.live.get(session_id)
        if ctl is not None:
            ctl.log.emit(payload)

    def children_of(self, run_id: str) -> list[RunController]:
        """The live subagent runs a run spawned."""
        return [c for c in self.by_run.values() if c.parent_run_id == run_id]

    async def _hard_cancel_after(self, ctl: RunController, grace: float) -> None:
        """Cooperative cancel first; a tool still running after ``grace`` is interrupted."""
        task = ctl.task
        if task is None:
            return
        done, _ = await asyncio.wait({task}, timeout=grace)
        if not done:
            ctl.hard_cancelled = True
            task.cancel()

    async def shutdown(self, grace: float = 5.0) -> None:
        """Interrupt every live run, resumable. A run waiting on its model is stopped at once:
        the turn has stored nothing yet and a model may think for a minute before its first
        token (an editor gives ``shutdown`` 2 s). Other runs stop at their next step; a tool
        still running after ``grace`` is interrupted."""
        for ctl in list(self.by_run.values()):
            ctl.shutting_down = True
            ctl.cancel_token.cancel("server shutdown")
            self._resolve_all_approvals(ctl)
            if ctl.awaiting_model and ctl.task is not None:
                ctl.hard_cancelled = True
                ctl.task.cancel()
        tasks = [c.task for c in self.by_run.values() if c.task is not None]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=grace)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=grace)
        await self.publisher.drain()

    # ================================================================== driving a run

    def _register(self, ctl: RunController) -> None:
        self.live[ctl.session_id] = ctl
        self.by_run[ctl.run_id] = ctl

    def _unregister(self, ctl: RunController) -> None:
        if self.live.get(ctl.session_id) is ctl:
            del self.live[ctl.session_id]
        if self.by_run.get(ctl.run_id) is ctl:
            del self.by_run[ctl.run_id]

    def _record(self, ctl: RunController) -> RunRecord:
        return RunRecord(
            id=ctl.run_id,
            session_id=ctl.session_id,
            status="running",
            error=None,
            prompt=ctl.prompt,
            model=ctl.spec.model_label,
            agent=ctl.spec.agent_label,
            cwd=str(ctl.spec.cwd),
            started_at=ctl.started_at,
            finished_at=None,
            usage=None,
            resumable=False,
            parent_run_id=ctl.parent_run_id,
            task_id=ctl.link.task_id if ctl.link is not None else None,
            spawn_key=ctl.link.spawn_key if ctl.link is not None else None,
        )

    async def _drive(self, ctl: RunController, model_input: Any) -> None:
        result: Any = None
        error: BaseException | None = None
        try:
            ctl.log.emit(
                RunStarted(
                    prompt=ctl.prompt,
                    cwd=str(ctl.spec.cwd),
                    model=ctl.spec.model_label,
                    agent=ctl.spec.agent_label,
                    resumed=ctl.resumed,
                    subagent=ctl.subagent,
                )
            )
            if not ctl.resumed:
                ctl.log.emit(
                    UserMessage(
                        message_id=_short_id("u"),
                        text=ctl.prompt,
                        source="prompt",
                        context=ctl.context or None,
                    )
                )
            self._progress("begin", ctl, ctl.prompt)
            if self.restore is not None:
                self.restore.run_started(ctl.turn)
            ctl.new_message()
            resume = ctl.resumed and not ctl.from_prompt
            while True:
                # The checkpoint is deleted after the session append (below), never before:
                # deleting it first would leave a window where a crash loses the leg.
                checkpoint = CheckpointOptions(
                    checkpointer=self.checkpointer,
                    run_id=ctl.checkpoint_id,
                    if_run_exists="resume_only" if resume else "restart",
                )
                handle = Runner.stream(
                    ctl.spec.agent,
                    model_input,
                    session=self.sessions,
                    session_id=ctl.session_id,
                    checkpoint=checkpoint,
                    mailbox=ctl.mailbox,
                    cancel_token=ctl.cancel_token,
                    max_turns=ctl.max_turns,
                    budget=ctl.spec.budget,
                )
                async for event in handle:
                    await self._on_event(ctl, event)
                try:
                    result = await handle.result()
                except Exception as exc:
                    error = exc
                    break
                await _quiet(self.checkpointer.delete(ctl.checkpoint_id))
                if not ctl.mailbox or ctl.cancel_token.is_cancelled:
                    break
                # Steering messages that arrived after the final answer are not dropped: the
                # run continues in a new leg that starts by delivering them.
                ctl.leg += 1
                await self.store.set_leg(ctl.run_id, ctl.leg)
                model_input, resume = [], False
        except asyncio.CancelledError as exc:
            error = exc
        except Exception as exc:
            logger.exception("run.crashed: %s", ctl.run_id)
            error = exc
        finally:
            await asyncio.shield(self._finish(ctl, result, error))

    async def _final_status(
        self, ctl: RunController, error: BaseException | None
    ) -> tuple[FinalStatus, bool]:
        """The run's final status and whether it can be resumed from its checkpoint."""
        status: FinalStatus
        resumable = False
        if error is None:
            status = "completed"
        elif ctl.shutting_down:
            # The server stopped before the run did, even one still being cancelled (a second
            # Ctrl-C in ``lovia chat``): it was not finished, so it stays resumable.
            status = "interrupted"
            resumable = True
        elif ctl.user_cancelled:
            status = "cancelled"
        elif isinstance(error, (MaxTurnsExceeded, BudgetExceeded)):
            status = "failed"
        elif isinstance(error, asyncio.CancelledError | RunCancelled):
            status = "interrupted"
            resumable = True
        else:
            status = (
                "interrupted" if CheckpointWriter.classify(error) == "interrupted" else "failed"
            )
            resumable = status == "interrupted"
        if resumable:
            snapshot = await _quiet(self.checkpointer.load(ctl.checkpoint_id))
            resumable = snapshot is not None and snapshot.status != "completed"
            if not resumable and error is not None:
                status = "failed"
        return status, resumable

    async def _finish(self, ctl: RunController, result: Any, error: BaseException | None) -> None:
        status, resumable = await self._final_status(ctl, error)
        if status in ("cancelled", "failed"):
            await self._keep_completed_turns(ctl.session_id, ctl.checkpoint_id)
        self._resolve_all_approvals(ctl)
        self._cancel_questions(ctl)
        for call_id, info in ctl.calls.items():
            if info.announced and not info.result_sent:
                info.result_sent = True
                ctl.log.emit(ToolResult.cancelled(call_id, "Cancelled."))
        usage = usage_payload(
            ctl.usage,
            context_tokens=ctl.context_tokens,
            context_window=ctl.spec.context_window,
            price=ctl.spec.price,
        )
        if self.restore is not None:
            self.restore.run_ended(ctl.turn)
        run_error: p.RunError | None = None
        if error is not None and status != "cancelled":
            run_error = (
                p.RunError(type="Cancelled", message="The run was interrupted.")
                if isinstance(error, asyncio.CancelledError)
                else error_payload(error)
            )
        ctl.log.emit(
            RunFinished(
                status=status,
                usage=usage,
                resumable=resumable,
                output=output_payload(result.output) if result is not None else None,
                error=run_error,
            )
        )
        self._progress("end", ctl, status)
        self._unregister(ctl)
        await ctl.log.close()
        error_text = None
        if status == "cancelled":
            error_text = "cancelled"
        elif error is not None:
            error_text = (run_error.message if run_error else None) or type(error).__name__
        with contextlib.suppress(Exception):
            await self.store.finish_run(
                ctl.run_id,
                status=status,
                error=error_text,
                usage=usage,
                resumable=resumable,
            )
            await self.store.touch_session(ctl.session_id)
        if ctl.link is not None:
            await self._child_finished(ctl, status, usage, result, run_error)
        if not ctl.outcome.done():
            ctl.outcome.set_result(RunOutcome(status, result, error, run_error))

    async def _child_finished(
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
            await _quiet(self.store.set_report(ctl.run_id, summary))
        parent = self.by_run.get(ctl.link.parent_run_id)
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

    async def _keep_completed_turns(self, session_id: str, checkpoint: str) -> None:
        """Move a stopped leg's completed turns from its checkpoint into the session."""
        snapshot = await _quiet(self.checkpointer.load(checkpoint))
        if snapshot is None:
            return
        entries = drop_dangling_tool_calls(snapshot.entries)
        if entries:
            await _quiet(self.sessions.append(session_id, entries, run_id=checkpoint))
        await _quiet(self.checkpointer.delete(checkpoint))

    async def _supersede_interrupted(self, session_id: str) -> None:
        """A new prompt closes the session's interrupted runs: their completed turns stay in the
        conversation (before the new run), and they are no longer resumable."""
        for record in await self.store.runs_for_session(session_id):
            if record.resumable:
                await self._keep_completed_turns(session_id, record.checkpoint_id)
                await self.store.finish_run(
                    record.id,
                    status=record.status,
                    error=record.error,
                    usage=record.usage,
                    resumable=False,
                )
                for child in await self.store.children_of([record.id]):
                    if child.resumable:
                        await self._supersede_interrupted(child.session_id)

    # ================================================================== event mapping

    async def _on_event(self, ctl: RunController, ev: events.Event) -> None:
        log = ctl.log
        if isinstance(ev, events.TextDelta):
            ctl.message_has_text = True
            log.delta("message.delta", ctl.message_id, ev.delta)
            if log.needs_turn():
                await asyncio.sleep(0)
        elif isinstance(ev, events.ReasoningDelta):
            log.delta("reasoning.delta", ctl.message_id, ev.delta)
            if log.needs_turn():
                await asyncio.sleep(0)
        elif isinstance(ev, events.TurnStarted):
            ctl.turns = ev.turn
            ctl.awaiting_model = True
        elif isinstance(ev, events.OutputDiscarded):
            log.emit(OutputDiscarded(message_id=ctl.message_id))
        elif isinstance(ev, events.MessageCompleted):
            ctl.awaiting_model = False
            self._message_completed(ctl, ev)
            await self._checkpoint_before_batch(ctl, ev)
        elif isinstance(ev, events.UserMessageInjected):
            self._steer_delivered(ctl, ev)
        elif isinstance(ev, events.ToolCallStarted):
            known = ctl.calls.get(ev.call.id)
            await self._checkpoint(ctl, [ev.tool or (known.tool if known else None)])
            info = self._announce(ctl, ev.call.id, ev.call.name, ev.call.arguments, ev.tool)
            self._progress("report", ctl, tool_title(info.tool, info.name, info.args))
            if info.diff is None and can_preview(info.tool):
                info.diff = await self._preview(ctl, info)
        elif isinstance(ev, events.ApprovalRequired):
            await self._approval(ctl, ev)
        elif isinstance(ev, events.ToolCallCompleted):
            await self._tool_completed(ctl, ev)
        elif isinstance(ev, events.HandoffOccurred):
            log.emit(
                Handoff(
                    from_agent=ev.from_agent.name,
                    to_agent=ev.to_agent.name,
                    reason=ctl.last_handoff_reason,
                )
            )
        elif isinstance(ev, events.ContextCompacted):
            notice = ev.notice
            log.emit(
                Compaction(
                    tokens_before=notice.tokens_before,
                    tokens_after=notice.tokens_after,
                    stages=[s for s in notice.reason.replace("reactive_", "").split("+") if s],
                    reactive=notice.reactive,
                    detail=list(notice.detail),
                )
            )

    def _message_completed(self, ctl: RunController, ev: events.MessageCompleted) -> None:
        text = "".join(e.content for e in ev.entries if isinstance(e, AssistantTextEntry))
        if text or ctl.message_has_text:
            ctl.log.emit(MessageCompleted(message_id=ctl.message_id, text=text))
        if ev.usage is not None:
            ctl.usage.add(ev.usage)
            if ev.usage.input_tokens > 0:
                ctl.context_tokens = ev.usage.input_tokens
            ctl.log.emit(
                UsageUpdated.of(
                    usage_payload(
                        ctl.usage,
                        context_tokens=ctl.context_tokens,
                        context_window=ctl.spec.context_window,
                        price=ctl.spec.price,
                    )
                )
            )
        ctl.new_message()

    async def _checkpoint(self, ctl: RunController, tools: list[Tool | None]) -> None:
        """The turn's restore point, before the first of its calls that may change files.
        A subagent's run takes none: its parent's turn took one before spawning it."""
        if self.restore is None or ctl.checkpointed or ctl.link is not None:
            return
        try:
            created = await self.restore.before_write(ctl.turn, tools)
        except Exception:
            logger.warning("restore_point.failed: %s", ctl.run_id, exc_info=True)
            return
        if created is not None:
            ctl.checkpointed = True
            ctl.log.emit(created)

    async def _checkpoint_before_batch(
        self, ctl: RunController, ev: events.MessageCompleted
    ) -> None:
        """Calls of one message may run concurrently, each starting before its ``tool.call``
        reaches us: take the point now when a parallel (or not yet seen) tool may write."""
        names = [e.name for e in ev.entries if isinstance(e, ToolCallEntry)]
        if len(names) < 2 or ctl.checkpointed or self.restore is None or ctl.link is not None:
            return  # a lone call runs by itself, after its announcement
        known = {**_declared_tools(ctl.spec.agent), **self.tools_seen.get(ctl.spec.agent_label, {})}
        tools = [known.get(name) for name in names]
        concurrent = [t for t in tools if t is None or t.parallel]
        if concurrent:
            await self._checkpoint(ctl, concurrent)

    def _steer_delivered(self, ctl: RunController, ev: events.UserMessageInjected) -> None:
        text = ev.content if isinstance(ev.content, str) else str(ev.content)
        message_id = _short_id("u")
        while ctl.steers:
            mid, _token, queued = ctl.steers.popleft()
            if queued == text:
                message_id = mid
                break
        ctl.log.emit(UserMessage(message_id=message_id, text=text, source="steer"))

    def _announce(
        self, ctl: RunController, call_id: str, name: str, arguments: str, tool: Tool | None
    ) -> CallInfo:
        info = ctl.calls.get(call_id)
        if info is None:
            info = ctl.calls[call_id] = CallInfo(name, parse_arguments(arguments))
        if info.tool is None and tool is not None:
            info.tool = tool
            self.tools_seen.setdefault(ctl.spec.agent_label, {})[name] = tool
        if not info.announced:
            info.announced = True
            ctl.log.emit(
                ToolCallStarted(
                    tool_call_id=call_id,
                    name=name,
                    tool_kind=as_tool_kind(tool_kind(info.tool)),
                    title=tool_title(info.tool, name, info.args),
                    input=info.args,
                    locations=[
                        p.Location.model_validate(loc)
                        for loc in tool_locations(info.tool, info.args, ctl.spec.root)
                    ],
                    server=tool_source(info.tool),
                )
            )
        return info

    async def _preview(self, ctl: RunController, info: CallInfo) -> list[FileDiff]:
        try:
            return await self.workspace.preview(ctl.spec, info.tool, info.args)
        except Exception:
            logger.debug("preview.failed", exc_info=True)
            return []

    async def _tool_completed(self, ctl: RunController, ev: events.ToolCallCompleted) -> None:
        info = self._announce(ctl, ev.call.id, ev.call.name, ev.call.arguments, ev.tool)
        if info.result_sent:
            return
        info.result_sent = True
        # A result object that reports an error itself (an MCP tool's isError) shows as failed.
        is_error = ev.is_error or getattr(ev.result, "is_error", False) is True
        status: ToolStatus
        if info.declined or (ev.is_error and self.workspace.declined(ev.call.id)):
            status = "declined"
        elif is_error:
            status = "failed"
        else:
            status = "completed"
        content: list[ToolContent] = [TextContent(text=ev.output)]
        diffs = info.diff if status == "completed" and info.diff else []
        for diff in diffs:
            new_text = await _quiet(self.workspace.read_back(ctl.spec, diff.path))
            if new_text is not None:
                diff = diff.model_copy(update={"new_text": new_text})
            content.append(DiffContent.of(diff))
        ctl.log.emit(
            ToolResult(tool_call_id=ev.call.id, status=status, content=content, is_error=is_error)
        )
        if info.tool is not None and info.tool.is_handoff and not ev.is_error:
            reason = info.args.get("reason")
            ctl.last_handoff_reason = reason if isinstance(reason, str) else None
        if not ev.is_error and _is_todo_update(info.tool, ev.result):
            ctl.log.emit(TodoUpdated(items=todo_items(ev.result)))
            done = sum(1 for i in ev.result if getattr(i, "status", "") == "completed")
            self._progress("report", ctl, f"{done}/{len(ev.result)} todos done")

    # ================================================================== approvals

    async def _approval(self, ctl: RunController, ev: events.ApprovalRequired) -> None:
        call = ev.call
        info = self._announce(ctl, call.id, call.name, call.arguments, ev.tool)
        subject = approval_subject(info.tool, call.name, info.args, ctl.spec.root)
        approval_id = _short_id("ap")
        payload = await self._approval_payload(ctl, info, approval_id, call.id)
        ctl.log.emit(payload)
        # a change to protected paths is never settled by an earlier "always"
        protected = payload.warning is not None
        rule = None if protected else self.session_rules.get(ctl.session_id, {}).get(subject)
        answer: ApprovalAnswer
        outcome: ApprovalOutcome
        if rule is not None:
            decision = Decision.ALLOW_ONCE if rule == "allow" else Decision.REJECT_ONCE
            answer = ApprovalAnswer(decision, by="policy")
            outcome = answer.outcome
        else:
            loop = asyncio.get_running_loop()
            future: asyncio.Future[ApprovalAnswer] = loop.create_future()
            ctl.approvals[approval_id] = PendingApproval(
                approval_id, call.id, subject, future, payload
            )
            ctl.status = "awaiting_approval"
            self._progress("report", ctl, f"Waiting for approval: {payload.title}")
            asker: asyncio.Task[None] | None = None
            if self.editor.asks_approvals:
                asker = loop.create_task(self._ask_editor(payload, future))
            timeout = self.approval_timeout()
            try:
                answer = await asyncio.wait_for(asyncio.shield(future), timeout)
                outcome = answer.outcome
            except TimeoutError:
                answer = ApprovalAnswer(
                    Decision.REJECT_ONCE, "The approval timed out.", by="policy"
                )
                outcome = "timed_out"
            finally:
                ctl.approvals.pop(approval_id, None)
                if asker is not None:
                    asker.cancel()
                if ctl.status == "awaiting_approval":
                    ctl.status = "running"
            if answer.decision.always and not answer.cancelled and not protected:
                rules = self.session_rules.setdefault(ctl.session_id, {})
                rules[subject] = "allow" if answer.decision.allows else "reject"
        if outcome == "allowed":
            await self._checkpoint(ctl, [info.tool])
        self._take_review(ctl, info, call.id, answer if outcome == "allowed" else None)
        answer.apply(ev)
        if outcome != "allowed":
            info.declined = True
        ctl.log.emit(
            ApprovalResolved(
                approval_id=approval_id,
                outcome=outcome,
                by=answer.by,
                decision=answer.decision if outcome in ("allowed", "rejected") else None,
                edited=True if outcome == "allowed" and answer.edits else None,
            )
        )

    def _take_review(
        self, ctl: RunController, info: CallInfo, call_id: str, answer: ApprovalAnswer | None
    ) -> None:
        """An approved edited version replaces the proposal: the call writes it, and its result
        diff shows it."""
        if answer is None or not answer.edits:
            return
        self.workspace.review(call_id, list(answer.edits))
        applied = {f.path: f.applied for f in answer.edits}
        info.diff = [
            d.model_copy(update={"new_text": applied.get(d.path, d.new_text)})
            for d in info.diff or []
        ]

    async def _ask_editor(
        self, payload: ApprovalRequested, future: asyncio.Future[ApprovalAnswer]
    ) -> None:
        try:
            decision = await self.editor.ask_approval(payload)
        except Exception:
            logger.warning("approval.ask_failed", exc_info=True)
            return
        if not future.done():
            future.set_result(ApprovalAnswer(decision or Decision.REJECT_ONCE, by="editor"))

    async def _approval_payload(
        self, ctl: RunController, info: CallInfo, approval_id: str, call_id: str
    ) -> ApprovalRequested:
        name, args, kind = info.name, info.args, tool_kind(info.tool)
        title = tool_title(info.tool, name, args)
        locations = tool_locations(info.tool, args, ctl.spec.root)
        paths = [loc["path"] for loc in locations]
        diff: list[FileDiff] | None = None
        command = approval_command(info.tool, args)
        if kind == "edit":
            if info.diff is None:
                info.diff = await self._preview(ctl, info)
            # Without a preview an edit is assumed to change an existing file.
            exists = any(d.old_text is not None for d in info.diff) or not info.diff
            action: ApprovalAction = "file.write" if exists else "file.create"
            target = paths[0] if paths else "a file"
            detail = f"The agent wants to {'edit' if exists else 'create'} {target}."
            if info.diff:
                diff = info.diff
            # "Always" is remembered per file (approval_subject), so only offered with one.
            options = APPROVAL_OPTIONS["file" if paths else "other"]
            command = None
        elif kind == "delete" and paths:
            action = "file.delete"
            detail = f"The agent wants to delete {paths[0]}."
            options = APPROVAL_OPTIONS["file"]
            command = None
        elif command is not None:
            action = "shell"
            cwd = args.get("cwd") or "."
            detail = f"Run in {cwd}: {command}"
            note = _confinement_note(ctl.spec.agent.workspace, command)
            if note:
                detail += f"\n{note}"
            options = APPROVAL_OPTIONS["command"]
        elif kind in ("read", "search") and paths:
            root = ctl.spec.root
            outside = not any(Path(path).is_relative_to(root) for path in paths)
            action = "read.outside" if outside else "other"
            detail = f"The agent wants to read {paths[0]}."
            options = APPROVAL_OPTIONS["other"]
        else:
            action = "other"
            detail = f"The agent wants to call {name}."
            options = APPROVAL_OPTIONS["other"]
        policy = await workspace_policy(ctl.spec.agent.workspace)
        guarded = protected_targets(policy, info.tool, args, ctl.spec.root)
        return ApprovalRequested(
            approval_id=approval_id,
            tool_call_id=call_id,
            action=action,
            title=title,
            detail=detail,
            paths=paths,
            command=command,
            diff=diff,
            options=PROTECTED_OPTIONS if guarded else options,
            subagent=ctl.subagent,
            warning=protected_warning(guarded) if guarded else None,
        )

    def _resolve_all_approvals(self, ctl: RunController) -> None:
        """Cancel every pending approval (a cancelled run, a stopping server)."""
        for pending in list(ctl.approvals.values()):
            if not pending.future.done():
                pending.future.set_result(CANCELLED_ANSWER)

    # ================================================================== questions

    def question_asked(self, run_id: str | None, question: Any) -> None:
        # the asking tool sees the leg's checkpoint key (``r_x~1`` after a steered answer)
        ctl = self.by_run.get(run_of_checkpoint(run_id or ""))
        if ctl is None:
            return
        ctl.questions[question.id] = question.question
        self._question_runs[question.id] = ctl.run_id
        ctl.log.emit(
            QuestionRequested(
                question_id=question.id,
                text=question.question,
                choices=[o.label for o in question.options] if question.options else None,
                multi_select=bool(question.multi_select) if question.options else None,
                subagent=ctl.subagent,
            )
        )
        self._progress("report", ctl, "Waiting for your answer")

    def answer(self, ctl: RunController, question_id: str, answer: str) -> p.AnswerResult:
        if question_id not in ctl.questions:
            raise p.ProtocolError(
                p.APPROVAL_NOT_FOUND,
                f"No pending question {question_id}",
                {"questionId": question_id},
            )
        self.questions.answer(question_id, answer)
        self.question_answered(ctl, question_id, answer)
        return p.AnswerResult(question_id=question_id)

    def question_answered(self, ctl: RunController, question_id: str, answer: str) -> None:
        ctl.questions.pop(question_id, None)
        self._question_runs.pop(question_id, None)
        ctl.log.emit(QuestionAnswered(question_id=question_id, answer=answer))

    def _cancel_questions(self, ctl: RunController) -> None:
        for question_id in list(ctl.questions):
            ctl.questions.pop(question_id, None)
            self._question_runs.pop(question_id, None)
            self.questions.cancel(question_id, "The run was cancelled.")

    async def serve_questions(self) -> None:
        """Show each ``ask_human`` question of a live run until the channel closes."""
        try:
            async for question in self.questions.questions():
                self.question_asked(question.run_id, question)
        except asyncio.CancelledError:
            pass
        except Exception:
            logger.exception("questions.consumer_failed")

    # ================================================================== shell output

    def tool_output(self, session_id: str, call_id: str | None, stream: str, text: str) -> None:
        ctl = self.live.get(session_id)
        if ctl is None or not call_id:
            return
        # Subagents share their parent's workspace session: the call says whose output it is.
        owner = ctl if call_id in ctl.calls else self._call_owner(ctl, call_id)
        owner.log.delta("tool.update", call_id, text, _stream(stream))

    def _call_owner(self, ctl: RunController, call_id: str) -> RunController:
        pending = self.children_of(ctl.run_id)
        while pending:
            child = pending.pop()
            if call_id in child.calls:
                return child
            pending.extend(self.children_of(child.run_id))
        return ctl

    # ================================================================== progress

    def _progress(self, stage: ProgressStage, ctl: RunController, message: str) -> None:
        try:
            self.editor.progress(stage, ctl.run_id, message)
        except Exception:
            logger.debug("progress.failed", exc_info=True)

    # ================================================================== queries

    async def replay(self, run_id: str, after_seq: int) -> p.ReplayResult:
        record = await self.ensure_known_run(run_id)
        ctl = self.by_run.get(run_id)
        if ctl is not None:
            ctl.log.flush_deltas()
            await self.publisher.drain()
        stored = await self.store.events_after(run_id, after_seq)
        last = stored[-1]["seq"] if stored else max(after_seq, await self.store.last_seq(run_id))
        status = ctl.status if ctl is not None else as_run_status(record.status)
        return p.ReplayResult(events=stored, last_seq=last, status=status)

    async def list_sessions(
        self, *, limit: int, offset: int, query: str | None
    ) -> p.SessionsResult:
        rows = await self.store.list_sessions(limit=limit, offset=offset, query=query)
        out = []
        for row in rows:
            live = self.live.get(row["id"])
            last_status = row["last_run_status"]
            runs = [r.id for r in await self.store.runs_for_session(row["id"])]
            out.append(
                p.SessionSummary(
                    session_id=row["id"],
                    title=row["title"],
                    updated_at=int(row["updated_at"] * 1000),
                    last_run_id=live.run_id if live else row["last_run_id"],
                    last_run_status=live.status
                    if live
                    else (as_run_status(last_status) if last_status is not None else None),
                    resumable=bool(row["last_resumable"]) and live is None,
                    children=await self._children_view(runs),
                )
            )
        return p.SessionsResult(sessions=out)

    async def _children_view(self, run_ids: list[str]) -> list[p.ChildRun]:
        """The subagents of these runs, and theirs, with live statuses."""
        out: list[p.ChildRun] = []
        frontier = run_ids
        while frontier:
            records = await self.store.children_of(frontier)
            for record in records:
                live = self.by_run.get(record.id)
                out.append(
                    p.ChildRun(
                        run_id=record.id,
                        session_id=record.session_id,
                        parent_run_id=record.parent_run_id or "",
                        task_id=record.task_id or "",
                        name=record.agent or "",
                        status=live.status if live else as_run_status(record.status),
                        resumable=record.resumable and live is None,
                    )
                )
            frontier = [r.id for r in records]
        return out

    async def session_view(self, session_id: str) -> p.SessionResult:
        row = await self.store.get_session(session_id)
        if row is None:
            raise p.ProtocolError(
                p.RUN_NOT_FOUND, f"Unknown session {session_id}", {"sessionId": session_id}
            )
        entries = list(await self.sessions.load(session_id))
        runs = await self.store.runs_for_session(session_id)
        for record in runs:
            live = self.by_run.get(record.id)
            if record.resumable or live is not None:
                key = live.checkpoint_id if live is not None else record.checkpoint_id
                snapshot = await self.checkpointer.load(key)
                if snapshot is not None:
                    entries.extend(snapshot.entries)
        return p.SessionResult(
            session_id=session_id,
            title=row["title"],
            entries=project_entries(entries, self.tools_seen.get(row["agent"] or "", {})),
            todos=todo_items(todos_from_entries(entries)),
            runs=[r.to_wire() for r in runs],
            children=await self._children_view([r.id for r in runs]),
            parent_session_id=row.get("parent_id"),
        )

    async def delete_session(self, session_id: str) -> p.DeleteSessionResult:
        self._check_session_free(session_id)
        if await self.store.get_session(session_id) is None:
            return p.DeleteSessionResult(deleted=False)
        runs = [r.id for r in await self.store.runs_for_session(session_id)]
        children = await self._children_view(runs)
        for child in children:
            self._check_session_free(child.session_id)
        for sid in [session_id, *dict.fromkeys(c.session_id for c in children)]:
            for run_id, leg in await self.store.delete_session(sid):
                await _quiet(self.checkpointer.delete(checkpoint_id(run_id, leg)))
            await self.sessions.clear(sid)
            self.session_rules.pop(sid, None)
        return p.DeleteSessionResult(deleted=True)

    async def cut_conversation(
        self, session_id: str, turn_index: int
    ) -> tuple[list[str], str | None]:
        """Cut the session back to before its ``turn_index``-th run (like an edit-and-resend):
        those runs, their events and checkpoints go, and the transcript is rewound. Returns
        the removed run ids and the first removed run's prompt."""
        self._check_session_free(session_id)
        runs = await self.store.runs_for_session(session_id)
        cut = runs[turn_index:]
        if not cut:
            return [], None
        keys = {checkpoint_id(r.id, leg) for r in cut for leg in range(r.leg + 1)}
        keep = 0
        for segment in await self.sessions.segments(session_id):
            if segment.run_id in keys:
                break
            keep += len(segment.entries)
        rewind = getattr(self.sessions, "rewind", None)
        if rewind is None:
            raise p.ProtocolError(
                p.INVALID_PARAMS,
                "This session store cannot cut a conversation",
                {"field": "conversation"},
            )
        await rewind(session_id, keep_entries=keep)
        for key in keys:
            await _quiet(self.checkpointer.delete(key))
        await self.store.delete_runs([r.id for r in cut])
        await self.store.touch_session(session_id)
        return [r.id for r in cut], cut[0].prompt

    def live_runs(self) -> list[p.LiveRun]:
        return [
            p.LiveRun(
                run_id=c.run_id,
                session_id=c.session_id,
                status=c.status,
                turns=c.turns,
                agent=c.spec.agent_label,
                model=c.spec.model_label,
                started_at=int(c.started_at * 1000),
                parent_run_id=c.parent_run_id,
                task_id=c.link.task_id if c.link is not None else None,
            )
            for c in self.by_run.values()
        ]

    def rules_view(self) -> list[p.SessionRule]:
        return [
            p.SessionRule(session_id=sid, subject=subject, decision=decision)
            for sid, rules in self.session_rules.items()
            for subject, decision in rules.items()
        ]


def _is_todo_update(tool: Tool | None, result: Any) -> bool:
    """A ``think`` call that returned the Todo plugin's items (its ``todo_write``)."""
    return (
        tool_kind(tool) == "think"
        and isinstance(result, list)
        and all(isinstance(item, TodoItem) for item in result)
    )


@dataclass
class _AssistantDraft:
    """One assistant message while its entries are collected."""

    content: str = ""
    reasoning: str = ""
    tool_calls: list[p.TranscriptToolCall] = field(default_factory=list)


def project_entries(
    entries: list[TranscriptEntry], tools: Mapping[str, Tool] | None = None
) -> list[p.TranscriptMessage]:
    """Transcript entries as render-ready messages (system entries are never shown); tool calls
    are titled by ``tools`` (name -> Tool), defaults for names it lacks."""
    tools = tools or {}
    out: list[p.TranscriptMessage] = []
    pending: _AssistantDraft | None = None
    errors = {e.call_id for e in entries if isinstance(e, ToolResultEntry) and e.is_error}

    def flush() -> None:
        nonlocal pending
        if pending is not None:
            out.append(
                p.AssistantEntry(
                    content=pending.content,
                    reasoning=pending.reasoning,
                    tool_calls=pending.tool_calls,
                )
            )
            pending = None

    for entry in entries:
        if isinstance(entry, InputEntry):
            flush()
            if entry.role == "system":
                continue
            content = entry.content if isinstance(entry.content, str) else text_of(entry.content)
            out.append(p.UserEntry(content=content))
        elif isinstance(entry, ReasoningEntry | AssistantTextEntry | ToolCallEntry):
            if pending is None:
                pending = _AssistantDraft()
            if isinstance(entry, ReasoningEntry):
                pending.reasoning += entry.content
            elif isinstance(entry, AssistantTextEntry):
                pending.content += entry.content
            else:
                args = parse_arguments(entry.arguments)
                tool = tools.get(entry.name)
                pending.tool_calls.append(
                    p.TranscriptToolCall(
                        id=entry.call_id,
                        name=entry.name,
                        input=args,
                        title=tool_title(tool, entry.name, args),
                        tool_kind=as_tool_kind(tool_kind(tool)),
                    )
                )
        elif isinstance(entry, ToolResultEntry):
            flush()
            out.append(
                p.ToolEntry(
                    tool_call_id=entry.call_id,
                    content=entry.output,
                    is_error=entry.call_id in errors,
                )
            )
    flush()
    return out


def _declared_tools(agent: Any) -> dict[str, Tool]:
    """The tools an agent declares up front (its own and its workspace's; plugins add theirs
    only when a run sets them up)."""
    tools: dict[str, Tool] = {t.name: t for t in getattr(agent, "tools", ())}
    workspace_tools = getattr(getattr(agent, "workspace", None), "tools", None)
    if callable(workspace_tools):
        try:
            tools.update({t.name: t for t in workspace_tools()})
        except Exception:
            logger.debug("workspace.tools_failed", exc_info=True)
    return tools


def child_report_text(output: Any) -> str:
    """A child's output as the text its report carries (and the store keeps)."""
    if output is None:
        return ""
    return output if isinstance(output, str) else repr(output)


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _stream(name: str) -> ToolStream:
    """The workspace's output stream name (anything but ``stderr`` is stdout)."""
    return "stderr" if name == "stderr" else "stdout"


async def _quiet(awaitable: Awaitable[T]) -> T | None:
    try:
        return await awaitable
    except Exception:
        logger.debug("supervisor.quiet_failure", exc_info=True)
        return None


def _confinement_note(workspace: Any, command: str) -> str | None:
    """What the workspace's executor says approving ``command`` means (the sandbox: whether
    it gets the network), for the approval card."""
    config = getattr(workspace, "workspace", workspace)  # a session binding wraps its config
    note = getattr(getattr(config, "executor", None), "approval_note", None)
    if not callable(note):
        return None
    try:
        text = note(command)
    except Exception:
        return None
    return text if isinstance(text, str) and text else None


__all__ = ["RunController", "RunSpec", "RunSupervisor", "path_uri", "project_entries"]
