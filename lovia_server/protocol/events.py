"""Payloads of the ``lovia/event`` notification, one model per event kind.

The wire object is flat: the envelope (``sessionId, runId, seq, ts, parentRunId?, kind``) followed
by the payload's fields. The supervisor builds a payload model; the event log adds the envelope
and serialises it once. ``LoviaEvent`` is the whole notification as one union on ``kind`` (used for
the JSON Schema and to validate what a client receives).

Long because it is the protocol's one list of event kinds, kept together for the same reason as
the methods: everything generated from the protocol reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from functools import cache
from typing import Annotated, Any, ClassVar, Literal, TypeAlias, get_args

from pydantic import Field, TypeAdapter
from typing_extensions import TypeAliasType

from lovia_server.protocol.wire import WireModel, omitted

# Named unions: each becomes its own type in the schema (and in the generated TypeScript).
ToolKind = TypeAliasType(
    "ToolKind",
    Literal["read", "edit", "delete", "move", "search", "execute", "fetch", "think", "other"],
)
ToolStatus = TypeAliasType("ToolStatus", Literal["completed", "failed", "declined", "cancelled"])
ToolStream = TypeAliasType("ToolStream", Literal["stdout", "stderr"])
ApprovalAction = TypeAliasType(
    "ApprovalAction",
    Literal["file.write", "file.create", "file.delete", "shell", "read.outside", "other"],
)
ApprovalOutcome = TypeAliasType(
    "ApprovalOutcome", Literal["allowed", "rejected", "cancelled", "timed_out"]
)
ApprovalBy = TypeAliasType("ApprovalBy", Literal["user", "policy", "editor"])
FinalStatus = TypeAliasType(
    "FinalStatus", Literal["completed", "failed", "cancelled", "interrupted"]
)
MessageSource = TypeAliasType("MessageSource", Literal["prompt", "steer"])
CheckpointKind = TypeAliasType("CheckpointKind", Literal["turn", "restore", "manual"])
TOOL_KINDS: list[str] = list(get_args(ToolKind.__value__))


def as_tool_kind(value: str) -> ToolKind:
    """A tool kind from a plain string (anything unknown is ``other``)."""
    for kind in TOOL_KINDS:
        if kind == value:
            return kind  # type: ignore[return-value]
    return "other"


class ApprovalChoice(StrEnum):
    """A user's answer to an approval, the same from ``lovia/approve`` to the run."""

    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    REJECT_ONCE = "reject_once"
    REJECT_ALWAYS = "reject_always"

    @property
    def allows(self) -> bool:
        return self in (ApprovalChoice.ALLOW_ONCE, ApprovalChoice.ALLOW_ALWAYS)

    @property
    def always(self) -> bool:
        """Remembered for the rest of the session (the file, the command, or the tool)."""
        return self in (ApprovalChoice.ALLOW_ALWAYS, ApprovalChoice.REJECT_ALWAYS)


APPROVAL_CHOICES: list[str] = [d.value for d in ApprovalChoice]

# ----------------------------------------------------------------------------- shared parts


class Location(WireModel):
    """A file a tool call touches, for click-through."""

    path: str
    uri: str
    line: int | None = omitted()


class FileDiff(WireModel):
    """A file's text before and after an edit (``oldText`` is null for a new file).

    Named as it is: the wire form of ``lovia.tools.presentation.FileDiff``."""

    path: str
    uri: str
    old_text: str | None
    new_text: str


class TextContent(WireModel):
    type: Literal["text"] = "text"
    text: str


class DiffContent(WireModel):
    type: Literal["diff"] = "diff"
    path: str
    uri: str
    old_text: str | None
    new_text: str

    @classmethod
    def of(cls, diff: FileDiff) -> DiffContent:
        return cls(path=diff.path, uri=diff.uri, old_text=diff.old_text, new_text=diff.new_text)


ToolContent: TypeAlias = Annotated[TextContent | DiffContent, Field(discriminator="type")]


class ToolOutput(WireModel):
    text: str
    stream: ToolStream


class ApprovalOption(WireModel):
    decision: ApprovalChoice
    label: str


class TodoItem(WireModel):
    """Named as it is: the wire form of ``lovia.plugins.todo.TodoItem``."""

    content: str
    status: str
    active_form: str | None = omitted()


class TurnUsage(WireModel):
    """One model call's tokens: ``inputTokens`` is its whole prompt, of which
    ``cacheReadTokens`` were served from the provider's prompt cache and ``cacheWriteTokens``
    written to it."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class Usage(WireModel):
    """Token counts of a run so far (``inputTokens`` includes the cached reads and writes);
    ``contextTokens`` is the last turn's prompt size, ``turn`` that call's own counts;
    ``costUsd`` what the run cost and ``sessionCostUsd`` the conversation so far, when the
    model's price is known (``lovia.modelPrices``).

    Named as it is: the wire form of ``lovia.messages.Usage``."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    context_tokens: int | None = None
    context_window: int | None = None
    cost_usd: float | None = omitted()
    session_cost_usd: float | None = omitted()
    turn: TurnUsage | None = omitted()


class SubagentRef(WireModel):
    """Whose event this is when a subagent (a child run) raised it: shown on approval cards."""

    run_id: str
    task_id: str
    name: str


class RunError(WireModel):
    type: str
    message: str
    hint: str | None = omitted()


# ----------------------------------------------------------------------------- payloads


class EventPayload(WireModel):
    """The fields of one event kind; ``KIND`` is its ``kind``.

    ``ESSENTIAL`` kinds are always sent, ahead of other queued events, however far behind the
    client is: the ones it must act on or that open and close a run (a client that missed the
    rest sees the ``seq`` gap and replays).
    """

    KIND: ClassVar[str]
    ESSENTIAL: ClassVar[bool] = False


class RunStarted(EventPayload):
    """A run attempt began (``resumed`` when ``lovia/resume`` continues one).

    Named as it is: the wire form of ``lovia.events.RunStarted``."""

    KIND: ClassVar[str] = "run.started"
    ESSENTIAL: ClassVar[bool] = True
    prompt: str
    cwd: str
    model: str | None
    agent: str
    resumed: bool
    subagent: SubagentRef | None = omitted()
    """Set on a child run: its task id and name (``parentRunId`` is in the envelope)."""


class ContextSummary(WireModel):
    """What the model got for one of the prompt's context items (the chips on the message):
    ``truncated`` when it was cut to the size limits, ``note`` says how (or why it is empty)."""

    kind: Literal["file", "folder", "symbol", "selection", "problems"]
    label: str
    uri: str
    line: int | None = omitted()
    end_line: int | None = omitted()
    chars: int
    truncated: bool
    note: str | None = omitted()


class UserMessage(EventPayload):
    """The prompt, or a steering message at the moment it is delivered; ``context`` lists
    what was attached to a prompt."""

    KIND: ClassVar[str] = "user.message"
    message_id: str
    text: str
    source: MessageSource
    context: list[ContextSummary] | None = omitted()


class MessageDelta(EventPayload):
    """Text to append to an assistant message. Sent as soon as it arrives while nothing is
    pending; adjacent deltas are merged only while the previous write is pending (being stored,
    or not yet taken by the client) and leave together when it completes."""

    KIND: ClassVar[str] = "message.delta"
    message_id: str
    text: str


class ReasoningDelta(EventPayload):
    """Reasoning text to append, coalesced like ``message.delta``.

    Named as it is: the wire form of ``lovia.events.ReasoningDelta``."""

    KIND: ClassVar[str] = "reasoning.delta"
    message_id: str
    text: str


class MessageCompleted(EventPayload):
    """The authoritative full text of an assistant message.

    Named as it is: the wire form of ``lovia.events.MessageCompleted``."""

    KIND: ClassVar[str] = "message.completed"
    message_id: str
    text: str


class OutputDiscarded(EventPayload):
    """A retried turn: drop what was rendered for this message.

    Named as it is: the wire form of ``lovia.events.OutputDiscarded``."""

    KIND: ClassVar[str] = "output.discarded"
    message_id: str


class ModelRetrying(EventPayload):
    """The model call failed and is tried again at ``retry_at``: said before the wait, so the
    user is not left looking at silence (the retried turn's text then follows as usual)."""

    KIND: ClassVar[str] = "model.retrying"
    message_id: str
    attempt: int  # the call that failed, from 1
    max_attempts: int
    delay_ms: int
    retry_at: int  # epoch milliseconds of the next attempt
    reason: str  # the error, one line
    status_code: int | None = omitted()
    hint: str | None = omitted()


class ToolCallStarted(EventPayload):
    """A tool call, announced once before it runs or asks for approval.

    Named as it is: the wire form of ``lovia.events.ToolCallStarted``."""

    KIND: ClassVar[str] = "tool.call"
    tool_call_id: str
    name: str
    tool_kind: ToolKind
    title: str
    input: dict[str, Any]
    locations: list[Location]
    server: str | None = omitted()
    """The MCP server that serves the tool, for an MCP tool."""


class ToolUpdate(EventPayload):
    """Streamed output of a running tool (shell), coalesced like ``message.delta``."""

    KIND: ClassVar[str] = "tool.update"
    tool_call_id: str
    output: ToolOutput


class ToolResult(EventPayload):
    """How a tool call ended: exactly one per ``tool.call``."""

    KIND: ClassVar[str] = "tool.result"
    tool_call_id: str
    status: ToolStatus
    content: list[ToolContent]
    is_error: bool

    @classmethod
    def cancelled(cls, tool_call_id: str, text: str) -> ToolResult:
        """The result of a call that never finished (cancelled run, stopped server)."""
        return cls(
            tool_call_id=tool_call_id,
            status="cancelled",
            content=[TextContent(text=text)],
            is_error=True,
        )


class ApprovalRequested(EventPayload):
    """A tool call waits for the user; ``diff`` previews a write before it happens."""

    KIND: ClassVar[str] = "approval.requested"
    ESSENTIAL: ClassVar[bool] = True
    approval_id: str
    tool_call_id: str
    title: str
    paths: list[str]
    action: ApprovalAction
    command: str | None = omitted()
    detail: str
    diff: list[FileDiff] | None = omitted()
    options: list[ApprovalOption]
    subagent: SubagentRef | None = omitted()
    """The child run asking, when a subagent needs the approval."""
    warning: str | None = omitted()
    """Set when the call changes protected paths (editor, git or agent configuration): a plain
    sentence to show prominently. Such approvals offer no "always" options."""


class ApprovalResolved(EventPayload):
    """An approval was answered (``decision`` when allowed or rejected)."""

    KIND: ClassVar[str] = "approval.resolved"
    ESSENTIAL: ClassVar[bool] = True
    approval_id: str
    outcome: ApprovalOutcome
    by: ApprovalBy
    decision: ApprovalChoice | None = omitted()
    # True when the user approved an edited version of the proposal (``lovia/approve`` edits).
    edited: bool | None = omitted()


class QuestionRequested(EventPayload):
    """The agent asks the user (``ask_human``)."""

    KIND: ClassVar[str] = "question.requested"
    ESSENTIAL: ClassVar[bool] = True
    question_id: str
    text: str
    choices: list[str] | None = omitted()
    multi_select: bool | None = omitted()
    subagent: SubagentRef | None = omitted()


class QuestionAnswered(EventPayload):
    """The user's answer to a question."""

    KIND: ClassVar[str] = "question.answered"
    ESSENTIAL: ClassVar[bool] = True
    question_id: str
    answer: str


class TodoUpdated(EventPayload):
    """The full todo list, every time it changes."""

    KIND: ClassVar[str] = "todo.updated"
    items: list[TodoItem]


class Handoff(EventPayload):
    """The run moved to another agent.

    Named as it is: the wire form of a ``lovia.handoff.Handoff`` taken."""

    KIND: ClassVar[str] = "handoff"
    from_agent: str
    to_agent: str
    reason: str | None


class Compaction(EventPayload):
    """The context was compacted (``reactive`` after the model rejected its size).

    Named as it is: what ``lovia.context.compaction.Compaction`` did, on the wire."""

    KIND: ClassVar[str] = "compaction"
    tokens_before: int | None
    tokens_after: int | None
    stages: list[str]
    reactive: bool
    detail: list[str]


class UsageUpdated(EventPayload, Usage):
    """Token usage after a model turn."""

    KIND: ClassVar[str] = "usage.updated"

    @classmethod
    def of(cls, usage: Usage) -> UsageUpdated:
        return cls.model_validate(usage.model_dump())


class CheckpointCreated(EventPayload):
    """A restore point of the files, taken before this turn's first change (`lovia/restore`
    rolls the workspace folder back to it)."""

    KIND: ClassVar[str] = "checkpoint.created"
    checkpoint_id: str
    turn_index: int
    label: str
    created_at: int
    root: str
    root_uri: str


class SubagentStarted(EventPayload):
    """In the parent's stream: a child run began (``resumed`` when a resumed parent took it
    back); its own events carry ``parentRunId``. ``toolCallId`` is the spawning call."""

    KIND: ClassVar[str] = "subagent.started"
    ESSENTIAL: ClassVar[bool] = True
    child_run_id: str
    child_session_id: str
    task_id: str
    name: str
    prompt: str
    tool_call_id: str | None
    resumed: bool


class SubagentFinished(EventPayload):
    """In the parent's stream: a child run ended (``summary`` is the start of its answer)."""

    KIND: ClassVar[str] = "subagent.finished"
    ESSENTIAL: ClassVar[bool] = True
    child_run_id: str
    task_id: str
    status: FinalStatus
    usage: Usage
    summary: str | None = omitted()
    error: RunError | None = omitted()


class MCPStatus(EventPayload):
    """An MCP server this run uses changed state, or is unavailable when the run starts (the
    run goes on without its tools; the model is told which)."""

    KIND: ClassVar[str] = "mcp.status"
    server: str
    state: str
    tools: list[str]
    error: str | None = omitted()


class RunFinished(EventPayload):
    """The end of a run attempt: exactly one, always the last ``seq``."""

    KIND: ClassVar[str] = "run.finished"
    ESSENTIAL: ClassVar[bool] = True
    status: FinalStatus
    usage: Usage
    resumable: bool
    output: Any = omitted()
    error: RunError | None = omitted()


PAYLOADS: dict[str, type[EventPayload]] = {
    cls.KIND: cls
    for cls in (
        RunStarted,
        UserMessage,
        MessageDelta,
        ReasoningDelta,
        MessageCompleted,
        OutputDiscarded,
        ModelRetrying,
        ToolCallStarted,
        ToolUpdate,
        ToolResult,
        ApprovalRequested,
        ApprovalResolved,
        QuestionRequested,
        QuestionAnswered,
        TodoUpdated,
        Handoff,
        Compaction,
        UsageUpdated,
        CheckpointCreated,
        SubagentStarted,
        SubagentFinished,
        MCPStatus,
        RunFinished,
    )
}
EVENT_KINDS: list[str] = list(PAYLOADS)
DELTA_KINDS = frozenset({MessageDelta.KIND, ReasoningDelta.KIND, ToolUpdate.KIND})
ESSENTIAL_KINDS = frozenset(kind for kind, cls in PAYLOADS.items() if cls.ESSENTIAL)

# ----------------------------------------------------------------------------- the notification


class EventEnvelope(WireModel):
    """What every event carries before its payload."""

    session_id: str
    run_id: str
    seq: int = Field(ge=1)
    ts: int
    parent_run_id: str | None = omitted()


class _Kinded(EventEnvelope):
    """The envelope and the kind: each event class narrows ``kind`` to its literal, which
    stays in this place on the wire (after the envelope, before the payload)."""

    kind: str


class RunStartedEvent(RunStarted, _Kinded):
    kind: Literal["run.started"]


class UserMessageEvent(UserMessage, _Kinded):
    kind: Literal["user.message"]


class MessageDeltaEvent(MessageDelta, _Kinded):
    kind: Literal["message.delta"]


class ReasoningDeltaEvent(ReasoningDelta, _Kinded):
    kind: Literal["reasoning.delta"]


class MessageCompletedEvent(MessageCompleted, _Kinded):
    kind: Literal["message.completed"]


class OutputDiscardedEvent(OutputDiscarded, _Kinded):
    kind: Literal["output.discarded"]


class ModelRetryingEvent(ModelRetrying, _Kinded):
    kind: Literal["model.retrying"]


class ToolCallEvent(ToolCallStarted, _Kinded):
    kind: Literal["tool.call"]


class ToolUpdateEvent(ToolUpdate, _Kinded):
    kind: Literal["tool.update"]


class ToolResultEvent(ToolResult, _Kinded):
    kind: Literal["tool.result"]


class ApprovalRequestedEvent(ApprovalRequested, _Kinded):
    kind: Literal["approval.requested"]


class ApprovalResolvedEvent(ApprovalResolved, _Kinded):
    kind: Literal["approval.resolved"]


class QuestionRequestedEvent(QuestionRequested, _Kinded):
    kind: Literal["question.requested"]


class QuestionAnsweredEvent(QuestionAnswered, _Kinded):
    kind: Literal["question.answered"]


class TodoUpdatedEvent(TodoUpdated, _Kinded):
    kind: Literal["todo.updated"]


class HandoffEvent(Handoff, _Kinded):
    kind: Literal["handoff"]


class CompactionEvent(Compaction, _Kinded):
    kind: Literal["compaction"]


class UsageUpdatedEvent(UsageUpdated, _Kinded):
    kind: Literal["usage.updated"]


class CheckpointCreatedEvent(CheckpointCreated, _Kinded):
    kind: Literal["checkpoint.created"]


class SubagentStartedEvent(SubagentStarted, _Kinded):
    kind: Literal["subagent.started"]


class SubagentFinishedEvent(SubagentFinished, _Kinded):
    kind: Literal["subagent.finished"]


class MCPStatusEvent(MCPStatus, _Kinded):
    kind: Literal["mcp.status"]


class RunFinishedEvent(RunFinished, _Kinded):
    kind: Literal["run.finished"]


LoviaEvent = TypeAliasType(
    "LoviaEvent",
    Annotated[
        RunStartedEvent
        | UserMessageEvent
        | MessageDeltaEvent
        | ReasoningDeltaEvent
        | MessageCompletedEvent
        | OutputDiscardedEvent
        | ModelRetryingEvent
        | ToolCallEvent
        | ToolUpdateEvent
        | ToolResultEvent
        | ApprovalRequestedEvent
        | ApprovalResolvedEvent
        | QuestionRequestedEvent
        | QuestionAnsweredEvent
        | TodoUpdatedEvent
        | HandoffEvent
        | CompactionEvent
        | UsageUpdatedEvent
        | CheckpointCreatedEvent
        | SubagentStartedEvent
        | SubagentFinishedEvent
        | MCPStatusEvent
        | RunFinishedEvent,
        Field(discriminator="kind"),
    ],
)
"""One ``lovia/event`` notification: built by the event log, stored, sent and replayed."""

EVENT_CLASSES: dict[type[EventPayload], type[LoviaEvent]] = {
    cls.__bases__[0]: cls for cls in get_args(get_args(LoviaEvent.__value__)[0])
}
"""Each payload class's event class (the payload under the envelope)."""


@cache
def _event_adapter() -> TypeAdapter[LoviaEvent]:
    return TypeAdapter(LoviaEvent)


def parse_event(data: str | bytes | Mapping[str, Any]) -> LoviaEvent:
    """A stored or received event as its model (validated: raises ``ValidationError``)."""
    if isinstance(data, Mapping):
        return _event_adapter().validate_python(data)
    return _event_adapter().validate_json(data)


__all__ = [
    "APPROVAL_CHOICES",
    "DELTA_KINDS",
    "ESSENTIAL_KINDS",
    "EVENT_CLASSES",
    "EVENT_KINDS",
    "PAYLOADS",
    "TOOL_KINDS",
    "ApprovalAction",
    "ApprovalBy",
    "ApprovalChoice",
    "ApprovalOption",
    "ApprovalOutcome",
    "ApprovalRequested",
    "ApprovalRequestedEvent",
    "ApprovalResolved",
    "ApprovalResolvedEvent",
    "CheckpointCreated",
    "CheckpointCreatedEvent",
    "CheckpointKind",
    "Compaction",
    "CompactionEvent",
    "ContextSummary",
    "DiffContent",
    "EventEnvelope",
    "EventPayload",
    "FileDiff",
    "FinalStatus",
    "Handoff",
    "HandoffEvent",
    "Location",
    "LoviaEvent",
    "MCPStatus",
    "MCPStatusEvent",
    "MessageCompleted",
    "MessageCompletedEvent",
    "MessageDelta",
    "MessageDeltaEvent",
    "MessageSource",
    "ModelRetrying",
    "ModelRetryingEvent",
    "OutputDiscarded",
    "OutputDiscardedEvent",
    "QuestionAnswered",
    "QuestionAnsweredEvent",
    "QuestionRequested",
    "QuestionRequestedEvent",
    "ReasoningDelta",
    "ReasoningDeltaEvent",
    "RunError",
    "RunFinished",
    "RunFinishedEvent",
    "RunStarted",
    "RunStartedEvent",
    "SubagentFinished",
    "SubagentFinishedEvent",
    "SubagentRef",
    "SubagentStarted",
    "SubagentStartedEvent",
    "TextContent",
    "TodoItem",
    "TodoUpdated",
    "TodoUpdatedEvent",
    "ToolCallEvent",
    "ToolCallStarted",
    "ToolContent",
    "ToolKind",
    "ToolOutput",
    "ToolResult",
    "ToolResultEvent",
    "ToolStatus",
    "ToolStream",
    "ToolUpdate",
    "ToolUpdateEvent",
    "TurnUsage",
    "Usage",
    "UsageUpdated",
    "UsageUpdatedEvent",
    "UserMessage",
    "UserMessageEvent",
    "as_tool_kind",
    "parse_event",
]
