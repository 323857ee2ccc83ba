"""One live run's state (``RunController``), the table of live runs, and the steer queue.

A controller is what the supervisor, the event projection and the two brokers share about a
run while it is live; it is dropped when the run ends (everything durable is in the store).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from lovia.messages import Usage
from lovia.reliability import CancelToken
from lovia.steering import Mailbox
from lovia.tools.base import Tool
from lovia_server import protocol as p
from lovia_server.host.child_link import ChildLink, RunOutcome
from lovia_server.host.event_log import EventLog
from lovia_server.host.payloads import usage_payload
from lovia_server.host.ports import EditorPort, ProgressStage, RunSpec, RunTurn
from lovia_server.host.store import RunRecord, checkpoint_id
from lovia_server.protocol import FileDiff, RunStatus

if TYPE_CHECKING:
    from lovia_server.host.approval_broker import PendingApproval

logger = logging.getLogger("lovia_server.host.supervisor")

T = TypeVar("T")

FinalStatus = Literal["completed", "failed", "cancelled", "interrupted"]


def short_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:12]}"


async def quiet(awaitable: Awaitable[T]) -> T | None:
    """The awaitable's value, or None when it fails (best-effort clean-up of durable state)."""
    try:
        return await awaitable
    except Exception:
        logger.debug("supervisor.quiet_failure", exc_info=True)
        return None


def report_progress(editor: EditorPort, stage: ProgressStage, run_id: str, message: str) -> None:
    """Show the run's progress; a failing progress UI never stops the run."""
    try:
        editor.progress(stage, run_id, message)
    except Exception:
        logger.debug("progress.failed", exc_info=True)


@dataclass
class CallInfo:
    """A tool call as the run's stream has shown it so far."""

    name: str
    args: dict[str, Any]
    tool: Tool | None = None  # as the run resolved the call: its presentation, not its name
    announced: bool = False
    declined: bool = False
    diff: list[FileDiff] | None = None
    result_sent: bool = False


@dataclass
class SteerQueue:
    """The run's mailbox, with the wire id of each steer the user queued while it waits.

    The run loop reports each delivery with the message's mailbox token
    (``UserMessageInjected.token``), which names the steer it delivered: two steers with the
    same text stay apart, and a message someone else queued (a subagent's report) gets an id
    of its own.
    """

    mailbox: Mailbox = field(default_factory=Mailbox)
    _ids: dict[int, str] = field(default_factory=dict)  # mailbox token -> message id

    def push(self, message: str) -> str:
        message_id = short_id("u")
        self._ids[self.mailbox.push(message)] = message_id
        return message_id

    def withdraw(self, message_id: str) -> bool:
        """Take a queued steer back; False once the run has taken it in (or never had it)."""
        for token, queued in self._ids.items():
            if queued == message_id:
                withdrawn = self.mailbox.remove(token)
                if withdrawn:
                    del self._ids[token]
                return withdrawn
        return False

    def delivered(self, token: int | None) -> str:
        """The wire id of the message the run just took in."""
        message_id = self._ids.pop(token, None) if token is not None else None
        return message_id or short_id("u")


@dataclass
class ProjectionState:
    """What a run's stream has shown so far: the event projection's working state."""

    calls: dict[str, CallInfo] = field(default_factory=dict)
    message_id: str = ""  # the assistant message being streamed
    message_has_text: bool = False
    usage: Usage = field(default_factory=Usage)
    context_tokens: int | None = None
    window_asked: bool = False  # the model's window was looked up again after a call
    turns: int = 0
    awaiting_model: bool = False  # a turn started and its message is not complete yet
    last_handoff_reason: str | None = None
    checkpointed: bool = False  # this attempt took its turn's restore point

    def new_message(self) -> str:
        self.message_id = short_id("msg")
        self.message_has_text = False
        return self.message_id


@dataclass
class RunController:
    """A live run: what it is, how it is stopped, and what its stream has shown so far."""

    run_id: str
    session_id: str
    spec: RunSpec
    prompt: str
    log: EventLog
    resumed: bool
    max_turns: int
    link: ChildLink | None = None
    steering: SteerQueue = field(default_factory=SteerQueue)
    # what the prompt's context items gave the model (the chips on its user.message)
    context: list[p.ContextSummary] = field(default_factory=list)
    leg: int = 0
    # resumed, but from the prompt: the previous process died before the first checkpoint
    from_prompt: bool = False
    turn_index: int = 0  # the run's place among its session's runs (the user's turns)
    earlier_cost_usd: float = 0.0  # what the session's other runs cost (their known prices)
    started_at: float = field(default_factory=time.time)
    # a worktree run's tools wait for its worktree's checkout (the model need not)
    gate: asyncio.Future[None] | None = None
    # stopping
    task: asyncio.Task[None] | None = None
    cancel_token: CancelToken = field(default_factory=CancelToken)
    user_cancelled: bool = False
    shutting_down: bool = False
    outcome: asyncio.Future[RunOutcome] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    # waiting on the user
    approvals: dict[str, PendingApproval] = field(default_factory=dict)
    questions: set[str] = field(default_factory=set)
    stream: ProjectionState = field(default_factory=ProjectionState)

    @property
    def status(self) -> RunStatus:
        if self.user_cancelled:
            return "cancelling"
        return "awaiting_approval" if self.approvals else "running"

    @property
    def mailbox(self) -> Mailbox:
        return self.steering.mailbox

    @property
    def parent_run_id(self) -> str | None:
        return self.link.parent_run_id if self.link is not None else None

    @property
    def subagent(self) -> p.SubagentRef | None:
        return self.link.ref(self.run_id) if self.link is not None else None

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

    def usage(self, turn: Usage | None = None) -> p.Usage:
        """The run's usage so far as the wire shows it; ``turn`` is the last model call's."""
        return usage_payload(
            self.stream.usage,
            context_tokens=self.stream.context_tokens,
            context_window=self.spec.context_window,
            price=self.spec.price,
            turn=turn,
            earlier_cost_usd=self.earlier_cost_usd,
        )

    def place_in_session(self, runs: list[RunRecord]) -> None:
        """Where the run stands among its session's stored runs: its turn index, and what the
        others cost so far (for ``sessionCostUsd``)."""
        ids = [r.id for r in runs]
        self.turn_index = ids.index(self.run_id) if self.run_id in ids else len(ids)
        self.earlier_cost_usd = sum(
            r.usage.cost_usd
            for r in runs
            if r.id != self.run_id and r.usage is not None and r.usage.cost_usd is not None
        )

    def record(self) -> RunRecord:
        """The run's record as it starts (or resumes)."""
        return RunRecord(
            id=self.run_id,
            session_id=self.session_id,
            status="running",
            error=None,
            prompt=self.prompt,
            model=self.spec.model_label,
            agent=self.spec.agent_label,
            cwd=str(self.spec.cwd),
            started_at=self.started_at,
            finished_at=None,
            usage=None,
            resumable=False,
            parent_run_id=self.parent_run_id,
            task_id=self.link.task_id if self.link is not None else None,
            spawn_key=self.link.spawn_key if self.link is not None else None,
            mode="plan" if self.spec.plan else None,
        )


class RunTable:
    """The live runs of this process, by run id and by session (one live run per session)."""

    def __init__(self) -> None:
        self._by_session: dict[str, RunController] = {}
        self._by_run: dict[str, RunController] = {}

    def add(self, ctl: RunController) -> None:
        self._by_session[ctl.session_id] = ctl
        self._by_run[ctl.run_id] = ctl

    def remove(self, ctl: RunController) -> None:
        if self._by_session.get(ctl.session_id) is ctl:
            del self._by_session[ctl.session_id]
        if self._by_run.get(ctl.run_id) is ctl:
            del self._by_run[ctl.run_id]

    def get(self, run_id: str) -> RunController | None:
        return self._by_run.get(run_id)

    def of_session(self, session_id: str) -> RunController | None:
        return self._by_session.get(session_id)

    def all(self) -> list[RunController]:
        return list(self._by_run.values())

    def children_of(self, run_id: str) -> list[RunController]:
        """The live subagent runs a run spawned."""
        return [c for c in self._by_run.values() if c.parent_run_id == run_id]

    def check_session_free(self, session_id: str) -> None:
        live = self._by_session.get(session_id)
        if live is not None:
            raise p.ProtocolError(
                p.RUN_ALREADY_ACTIVE,
                f"Session {session_id} already has a live run",
                {"activeRunId": live.run_id, "sessionId": session_id},
            )


__all__ = [
    "CallInfo",
    "FinalStatus",
    "ProjectionState",
    "RunController",
    "RunTable",
    "SteerQueue",
    "quiet",
    "report_progress",
    "short_id",
]
