"""The run event catalog: everything a stream consumer or hook can observe."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lovia.messages import ToolCall, Usage
from lovia.parts import ContentPart
from lovia.transcript import TranscriptEntry

if TYPE_CHECKING:
    import asyncio

    from lovia.agent import Agent
    from lovia.approvals import ApprovalChannel
    from lovia.runtime.result import RunResult
    from lovia.tools.base import Tool


class Event:
    """Base of every run event."""


class RunEvent(Event):
    pass


class TurnEvent(Event):
    pass


class DeltaEvent(Event):
    pass


class MessageEvent(Event):
    pass


class ToolEvent(Event):
    """A tool call's progress. ``tool`` (where present) is the tool the run resolved the call
    to, so hosts can read its presentation (``lovia.tools.presentation``) instead of knowing
    tools by name; None when the call named no available tool or the event was built by hand."""


class TransitionEvent(Event):
    pass


class ErrorEvent(Event):
    pass


class ContextEvent(Event):
    pass


@dataclass
class RunStarted(RunEvent):
    agent: Agent[Any]


@dataclass
class TurnStarted(TurnEvent):
    agent: Agent[Any]
    turn: int


@dataclass
class TurnEnded(TurnEvent):
    agent: Agent[Any]
    turn: int


@dataclass
class TextDelta(DeltaEvent):
    delta: str


@dataclass
class ReasoningDelta(DeltaEvent):
    delta: str


@dataclass
class OutputDiscarded(DeltaEvent):
    """A retried model call: drop the text and reasoning deltas already shown for this turn."""


@dataclass
class MessageCompleted(MessageEvent):
    entries: list[TranscriptEntry]
    usage: Usage | None = None
    """This model call's usage (``None`` when built outside the loop)."""


@dataclass
class UserMessageInjected(MessageEvent):
    content: str | list[ContentPart]
    turn: int
    token: int | None = field(default=None, kw_only=True)
    """The message's ``Mailbox.push`` token (None when built outside the loop)."""


@dataclass
class ToolCallStarted(ToolEvent):
    call: ToolCall
    tool: Tool | None = field(default=None, repr=False, compare=False, kw_only=True)


@dataclass
class ToolCallCompleted(ToolEvent):
    call: ToolCall
    result: Any
    is_error: bool = False
    output: str = ""
    tool: Tool | None = field(default=None, repr=False, compare=False, kw_only=True)


@dataclass
class ApprovalRequired(ToolEvent):
    call: ToolCall
    _channel: ApprovalChannel | None = field(default=None, repr=False)
    tool: Tool | None = field(default=None, repr=False, compare=False, kw_only=True)

    def approve(self, *, answer: object = None) -> None:
        """Let the call run; ``answer`` (optional) reaches it as ``current_approval``."""
        self._require_channel().approve(self.call.id, answer=answer)

    def reject(self, message: str | None = None, *, answer: object = None) -> None:
        """Deny the call; a ``message`` is appended to what the model is told."""
        self._require_channel().reject(self.call.id, message=message, answer=answer)

    def decision(self) -> asyncio.Future[bool]:
        """The future the loop waits on for this call: a consumer may await it (with its own
        timeout) instead of keeping a future of its own; :meth:`approve` / :meth:`reject`
        settle it."""
        return self._require_channel().register(self.call.id)

    def _require_channel(self) -> ApprovalChannel:
        if self._channel is None:
            raise RuntimeError("This ApprovalRequired event has no approval channel")
        return self._channel


@dataclass
class HandoffOccurred(TransitionEvent):
    from_agent: Agent[Any]
    to_agent: Agent[Any]


@dataclass
class ToolCallFailed(ErrorEvent):
    error: BaseException
    call: ToolCall | None = None


@dataclass
class RunCompleted(RunEvent):
    result: RunResult


@dataclass
class RunFailed(RunEvent):
    error: BaseException


@dataclass
class InterceptorNotice(Event):
    """A line for the user from a run interceptor (a shell hook that failed or timed out);
    ``call``: the tool call it was about, if any. The model never sees it."""

    message: str
    call: ToolCall | None = None


@dataclass
class CompactionNotice:
    reason: str
    reactive: bool
    summary: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    detail: list[str] = field(default_factory=list)


@dataclass
class ContextCompacted(ContextEvent):
    session_id: str | None
    entries_before: list[TranscriptEntry]
    entries_after: list[TranscriptEntry]
    notice: CompactionNotice
    usage: Usage | None = None
    """What the compaction's own model calls (summaries) cost; already in the run's usage."""


__all__ = [
    "ApprovalRequired",
    "CompactionNotice",
    "ContextCompacted",
    "ContextEvent",
    "DeltaEvent",
    "ErrorEvent",
    "Event",
    "HandoffOccurred",
    "InterceptorNotice",
    "MessageCompleted",
    "MessageEvent",
    "OutputDiscarded",
    "ReasoningDelta",
    "RunCompleted",
    "RunEvent",
    "RunFailed",
    "RunStarted",
    "TextDelta",
    "ToolCallCompleted",
    "ToolCallFailed",
    "ToolCallStarted",
    "ToolEvent",
    "TransitionEvent",
    "TurnEnded",
    "TurnEvent",
    "TurnStarted",
    "UserMessageInjected",
]
