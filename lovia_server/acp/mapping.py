"""lovia events -> ACP ``session/update`` payloads, and the other pure translations the ACP host
needs (approvals to permission requests, prompts to run input, run ends to stop reasons).

Nothing here does I/O. ``SessionMapper`` holds the little state a session's stream needs (which
tool calls were announced, the output a running call has printed, where the streamed markdown
stands), so the live stream and a ``session/load`` replay of the stored events come out
identical.

ACP clients render the text they get as markdown, images included, so every piece of text that
the model (or a file, a command, a tool) had a hand in goes through ``inert_markdown`` first:
an image there would be fetched with no click, its URL carrying whatever the agent read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from acp import RequestError
from acp import schema as a

from lovia_server import protocol as p
from lovia_server.acp.inert_markdown import InertMarkdown, inert
from lovia_server.protocol import ApprovalChoice

Update: TypeAlias = (
    a.UserMessageChunk
    | a.AgentMessageChunk
    | a.AgentThoughtChunk
    | a.ToolCallStart
    | a.ToolCallProgress
    | a.AgentPlanUpdate
    | a.AvailableCommandsUpdate
    | a.CurrentModeUpdate
    | a.ConfigOptionUpdate
    | a.SessionInfoUpdate
    | a.UsageUpdate
)

ToolContent: TypeAlias = (
    a.ContentToolCallContent | a.FileEditToolCallContent | a.TerminalToolCallContent
)

# Output a running call printed is sent whole in each update (ACP replaces a call's content);
# only its tail is kept so a chatty command cannot grow every update without bound.
OUTPUT_TAIL_CHARS = 64_000

_TOOL_STATUS: dict[str, Literal["completed", "failed"]] = {
    "completed": "completed",
    "failed": "failed",
    "declined": "failed",
    "cancelled": "failed",
}

_STOP_REASON: dict[str, a.StopReason] = {
    "completed": "end_turn",
    "cancelled": "cancelled",
    # a server that stops mid-run leaves it resumable: for the client, the turn was cut short
    "interrupted": "cancelled",
}

_FAILED_STOP: dict[str, a.StopReason] = {
    "MaxTurnsExceeded": "max_turn_requests",
    "BudgetExceeded": "max_tokens",
    "OutputTruncated": "max_tokens",
    "ContentFiltered": "refusal",
    "Refusal": "refusal",
}

PERMISSION_KINDS: dict[ApprovalChoice, a.PermissionOptionKind] = {
    ApprovalChoice.ALLOW_ONCE: "allow_once",
    ApprovalChoice.ALLOW_ALWAYS: "allow_always",
    ApprovalChoice.REJECT_ONCE: "reject_once",
    ApprovalChoice.REJECT_ALWAYS: "reject_always",
}


def text_block(text: str) -> a.TextContentBlock:
    return a.TextContentBlock(type="text", text=text)


def _text_content(text: str) -> a.ContentToolCallContent:
    """A tool call's text, which clients render as markdown of its own."""
    return a.ContentToolCallContent(type="content", content=text_block(inert(text)))


def _tool_content(items: Iterable[p.DiffContent | p.TextContent]) -> list[ToolContent]:
    out: list[ToolContent] = []
    for item in items:
        if isinstance(item, p.DiffContent):
            out.append(
                a.FileEditToolCallContent(
                    type="diff", path=item.path, old_text=item.old_text, new_text=item.new_text
                )
            )
        elif item.text:
            out.append(_text_content(item.text))
    return out


def _locations(items: Iterable[p.Location]) -> list[a.ToolCallLocation]:
    return [
        a.ToolCallLocation(
            path=loc.path, line=loc.line if loc.line is not None and loc.line >= 0 else None
        )
        for loc in items
    ]


def plan_entries(items: Iterable[p.TodoItem]) -> list[a.PlanEntry]:
    """The Todo plugin's items as an ACP plan (always the full list)."""
    return [
        a.PlanEntry(
            content=inert(item.content),
            status=_PLAN_STATUS.get(item.status, "pending"),
            priority="medium",
        )
        for item in items
    ]


_PLAN_STATUS: dict[str, Literal["pending", "in_progress", "completed"]] = {
    "pending": "pending",
    "in_progress": "in_progress",
    "completed": "completed",
}


@dataclass
class _Stream:
    """Streamed text of one kind (the answer or the thoughts), kept inert as it goes: a client
    joins the chunks into one markdown document, so the escaping must know what came before."""

    thought: bool
    doc: InertMarkdown = field(default_factory=InertMarkdown)
    message_id: Any = None

    def update(self, text: str) -> list[Update]:
        if not text:
            return []
        if self.thought:
            return [_thought(text, self.message_id)]
        return [
            a.AgentMessageChunk(
                session_update="agent_message_chunk",
                content=text_block(text),
                message_id=self.message_id,
            )
        ]

    def feed(self, text: str) -> list[Update]:
        return self.update(self.doc.feed(text))

    def pause(self) -> list[Update]:
        """Something else is shown now: the client may go on with this document later or
        start a new one (see ``InertMarkdown.boundary``)."""
        return self.update(self.doc.boundary())

    def restart(self) -> list[Update]:
        """A new prompt turn: every client starts new documents after the user's message."""
        out = self.pause()
        self.doc = InertMarkdown()
        return out


# Events after which the streamed text may go on in a new document: the model's message ended,
# the run ended, a new turn began.
_PAUSES = (p.MessageCompletedEvent, p.RunFinishedEvent)
_TURNS = (p.UserMessageEvent, p.RunStartedEvent)


@dataclass
class SessionMapper:
    """Maps one session's lovia events to ACP updates, in order.

    ``replay`` adds what a live client already shows by itself: the prompts it sent.
    """

    replay: bool = False
    announced: set[str] = field(default_factory=set)
    output: dict[str, str] = field(default_factory=dict)
    approval_calls: dict[str, str] = field(default_factory=dict)
    answer: _Stream = field(default_factory=lambda: _Stream(thought=False))
    thinking: _Stream = field(default_factory=lambda: _Stream(thought=True))

    def updates(self, event: p.LoviaEvent) -> list[Update]:
        if isinstance(event, _TURNS):
            held = self.answer.restart() + self.thinking.restart()
        elif isinstance(event, _PAUSES):
            held = self.answer.pause() + self.thinking.pause()
        else:
            held = []
        handler = _HANDLERS.get(type(event))
        produced = handler(self, event) if handler is not None else []
        if produced and not isinstance(event, _STREAMED):
            # a tool card, a plan...: what was streamed so far is shown before it, whole
            held += self.answer.pause() + self.thinking.pause()
        return held + produced

    def _say(self, stream: _Stream, text: str, message_id: Any) -> list[Update]:
        """Streamed text: the other stream pauses, a new message of this one pauses it first."""
        other = self.thinking if stream is self.answer else self.answer
        out = other.pause()
        if message_id != stream.message_id:
            out += stream.pause()
            stream.message_id = message_id
        return out + stream.feed(text)

    # ------------------------------------------------------------------ messages

    def _user(self, event: p.UserMessageEvent) -> list[Update]:
        if event.source != "steer" and not self.replay:
            return []  # the client shows the prompt it sent
        return [
            a.UserMessageChunk(
                session_update="user_message_chunk",
                content=text_block(event.text),
                message_id=event.message_id,
            )
        ]

    def _message(self, event: p.MessageDeltaEvent) -> list[Update]:
        return self._say(self.answer, event.text, event.message_id)

    def _thought(self, event: p.ReasoningDeltaEvent) -> list[Update]:
        return self._say(self.thinking, event.text, event.message_id)

    def _note(self, text: str) -> list[Update]:
        """lovia's own line among the thoughts (it quotes names and text the model chose)."""
        return self._say(self.thinking, text, None)

    def _handoff(self, event: p.HandoffEvent) -> list[Update]:
        reason = event.reason
        text = f"Handed over from {event.from_agent} to {event.to_agent}"
        return self._note(f"{text}: {reason}\n" if reason else f"{text}.\n")

    def _compaction(self, event: p.CompactionEvent) -> list[Update]:
        before, after = event.tokens_before, event.tokens_after
        sizes = f" ({before} → {after} tokens)" if before and after else ""
        return self._note(f"The conversation was compacted to fit the context{sizes}.\n")

    def _subagent_started(self, event: p.SubagentStartedEvent) -> list[Update]:
        verb = "Resumed" if event.resumed else "Started"
        return self._note(f"{verb} subagent {event.name} ({event.task_id}).\n")

    def _subagent_finished(self, event: p.SubagentFinishedEvent) -> list[Update]:
        said = f": {event.summary}" if event.summary else "."
        return self._note(f"Subagent {event.task_id} {event.status}{said}\n")

    def _retrying(self, event: p.ModelRetryingEvent) -> list[Update]:
        return self._note(f"{retry_line(event)}\n")

    def _mcp_status(self, event: p.MCPStatusEvent) -> list[Update]:
        if event.state in ("idle", "starting", "running", "stopped"):
            return []
        why = f": {event.error}" if event.error else ""
        return self._note(f"MCP server {event.server} is {event.state}{why}.\n")

    # ------------------------------------------------------------------ tool calls

    def _tool_call(self, event: p.ToolCallEvent) -> list[Update]:
        call_id = event.tool_call_id
        kind = event.tool_kind
        fields: dict[str, Any] = {
            "tool_call_id": call_id,
            "title": inert(event.title or event.name or "tool"),
            "kind": kind if kind in _TOOL_KINDS else "other",
            "status": "pending",
            "locations": _locations(event.locations),
            "raw_input": event.input,
        }
        self.output.pop(call_id, None)
        if call_id in self.announced:
            # a resumed run announces the call again: the client updates the card it has
            return [a.ToolCallProgress(session_update="tool_call_update", content=[], **fields)]
        self.announced.add(call_id)
        return [a.ToolCallStart(session_update="tool_call", content=[], **fields)]

    def _approval_resolved(self, event: p.ApprovalResolvedEvent) -> list[Update]:
        if event.outcome != "allowed":
            return []  # the tool's result follows and says it was declined
        call_id = self.approval_calls.get(event.approval_id)
        if call_id is None:
            return []
        return [_progress(call_id, status="in_progress")]

    def _approval_requested(self, event: p.ApprovalRequestedEvent) -> list[Update]:
        # the request itself goes out as session/request_permission (see permission_request)
        self.approval_calls[event.approval_id] = event.tool_call_id
        return []

    def _tool_output(self, event: p.ToolUpdateEvent) -> list[Update]:
        call_id = event.tool_call_id
        text = (self.output.get(call_id, "") + event.output.text)[-OUTPUT_TAIL_CHARS:]
        self.output[call_id] = text
        return [_progress(call_id, status="in_progress", content=[_text_content(text)])]

    def _tool_result(self, event: p.ToolResultEvent) -> list[Update]:
        call_id = event.tool_call_id
        self.output.pop(call_id, None)
        texts = [c.text for c in event.content if isinstance(c, p.TextContent)]
        return [
            _progress(
                call_id,
                status=_TOOL_STATUS.get(event.status, "failed"),
                content=_tool_content(event.content),
                raw_output={"status": event.status, "output": "\n".join(texts)},
            )
        ]

    # ------------------------------------------------------------------ plan and usage

    def _todos(self, event: p.TodoUpdatedEvent) -> list[Update]:
        return [a.AgentPlanUpdate(session_update="plan", entries=plan_entries(event.items))]

    def _usage(self, event: p.UsageUpdatedEvent) -> list[Update]:
        used, size = event.context_tokens, event.context_window
        if used is None or size is None or size <= 0:
            return []  # the schema's usage update needs both: the context used and its size
        cost = event.session_cost_usd
        return [
            a.UsageUpdate(
                session_update="usage_update",
                used=max(0, used),
                size=size,
                cost=a.Cost(amount=cost, currency="USD") if cost is not None else None,
                field_meta={"lovia": cache_meta(event)},
            )
        ]


_TOOL_KINDS = {
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
}

_STREAMED: tuple[type[p.EventEnvelope], ...] = (
    p.MessageDeltaEvent,
    p.ReasoningDeltaEvent,
    p.HandoffEvent,
    p.CompactionEvent,
    p.SubagentStartedEvent,
    p.SubagentFinishedEvent,
    p.MCPStatusEvent,
    p.ModelRetryingEvent,
)
"""Event classes whose updates are streamed text: they pause the streams themselves, in order."""

_Handler: TypeAlias = Callable[[SessionMapper, Any], list[Update]]

_HANDLERS: dict[type[p.EventEnvelope], _Handler] = {
    p.UserMessageEvent: SessionMapper._user,
    p.MessageDeltaEvent: SessionMapper._message,
    p.ReasoningDeltaEvent: SessionMapper._thought,
    p.HandoffEvent: SessionMapper._handoff,
    p.CompactionEvent: SessionMapper._compaction,
    p.SubagentStartedEvent: SessionMapper._subagent_started,
    p.SubagentFinishedEvent: SessionMapper._subagent_finished,
    p.MCPStatusEvent: SessionMapper._mcp_status,
    p.ModelRetryingEvent: SessionMapper._retrying,
    p.ToolCallEvent: SessionMapper._tool_call,
    p.ToolUpdateEvent: SessionMapper._tool_output,
    p.ToolResultEvent: SessionMapper._tool_result,
    p.ApprovalRequestedEvent: SessionMapper._approval_requested,
    p.ApprovalResolvedEvent: SessionMapper._approval_resolved,
    p.TodoUpdatedEvent: SessionMapper._todos,
    p.UsageUpdatedEvent: SessionMapper._usage,
}
"""Each event class's handler, which takes that class (the table is keyed by it)."""

MAPPED_KINDS: frozenset[str] = frozenset(
    cls.KIND for cls in _HANDLERS if issubclass(cls, p.EventPayload)
)
"""Event kinds that may produce updates; the rest (run.started, message.completed, ...) end a
prompt turn or are already carried by the updates above."""


def retry_line(event: p.ModelRetrying) -> str:
    """A retry notice in words: the cause, the wait, and which attempt comes next."""
    seconds = max(event.delay_ms, 0) / 1000
    wait = f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    line = (
        f"The model call failed ({event.reason}); retrying in {wait} "
        f"(attempt {event.attempt + 1} of {event.max_attempts})."
    )
    return f"{line} {event.hint}" if event.hint and event.attempt == 1 else line


def _thought(text: str, message_id: Any = None) -> a.AgentThoughtChunk:
    return a.AgentThoughtChunk(
        session_update="agent_thought_chunk", content=text_block(text), message_id=message_id
    )


def _progress(call_id: str, **fields: Any) -> a.ToolCallProgress:
    return a.ToolCallProgress(session_update="tool_call_update", tool_call_id=call_id, **fields)


# ---------------------------------------------------------------------------- approvals


def permission_request(
    payload: p.ApprovalRequested,
) -> tuple[a.ToolCallUpdate, list[a.PermissionOption]]:
    """An ``approval.requested`` payload as ``session/request_permission``'s tool call and
    options; each option's id is the lovia decision it stands for."""
    content = _tool_content(p.DiffContent.of(d) for d in payload.diff or [])
    if payload.detail and not content:
        content = [_text_content(payload.detail)]
    if payload.warning:  # a change to editor or agent configuration: said first, in plain words
        content = [_text_content(f"Warning: {payload.warning}"), *content]
    tool_call = a.ToolCallUpdate(
        tool_call_id=payload.tool_call_id,
        title=inert(payload.title or "Tool call"),
        status="pending",
        content=content,
        locations=[a.ToolCallLocation(path=path) for path in payload.paths],
    )
    options = [
        a.PermissionOption(
            option_id=option.decision.value,
            name=option.label,
            kind=PERMISSION_KINDS[option.decision],
        )
        for option in payload.options
    ]
    return tool_call, options


def permission_decision(response: a.RequestPermissionResponse) -> ApprovalChoice | None:
    """The client's answer as a lovia decision; ``None`` for a cancelled request."""
    outcome = response.outcome
    if isinstance(outcome, a.DeniedOutcome) or outcome.outcome != "selected":
        return None
    try:
        return ApprovalChoice(outcome.option_id)
    except ValueError:
        return ApprovalChoice.REJECT_ONCE  # an option we never offered: the safe answer


# ---------------------------------------------------------------------------- questions

NO_ANSWER = "(The user did not answer; decide yourself and say what you assumed.)"
NO_TYPED_ANSWER = (
    "(This editor cannot take a typed answer. Decide yourself and say what you assumed, or ask "
    "again with 2-4 options to choose from.)"
)
SKIP_OPTION = "skip"


def question_request(
    event: p.QuestionRequested, tool_call_id: str
) -> tuple[a.ToolCallUpdate, list[a.PermissionOption]]:
    """An ``ask_human`` question with choices as a permission request: one option per choice
    (ids ``choice-N``) and one to skip it."""
    tool_call = a.ToolCallUpdate(
        tool_call_id=tool_call_id,
        title=inert(event.text or "A question"),
        status="pending",
        content=[_text_content(event.text)],
    )
    options = [
        a.PermissionOption(option_id=f"choice-{i}", name=label, kind="allow_once")
        for i, label in enumerate(event.choices or [])
    ]
    options.append(a.PermissionOption(option_id=SKIP_OPTION, name="Skip", kind="reject_once"))
    return tool_call, options


def question_answer(response: a.RequestPermissionResponse, choices: Sequence[str]) -> str:
    """The chosen label, or the note that the question went unanswered."""
    outcome = response.outcome
    if isinstance(outcome, a.DeniedOutcome) or not outcome.option_id.startswith("choice-"):
        return NO_ANSWER
    try:
        return str(choices[int(outcome.option_id.removeprefix("choice-"))])
    except (ValueError, IndexError):
        return NO_ANSWER


# ---------------------------------------------------------------------------- run ends


def stop_reason(finished: p.RunFinished) -> a.StopReason | None:
    """A ``run.finished`` event's ACP stop reason; ``None`` when the run failed with an error
    the prompt request reports as a JSON-RPC error instead."""
    if finished.status in _STOP_REASON:
        return _STOP_REASON[finished.status]
    if finished.error is None:
        return None
    return _FAILED_STOP.get(finished.error.type)


def cache_meta(usage: p.Usage) -> dict[str, Any]:
    """The run's cache health for a ``_meta.lovia``, which ACP's usage has no field for: its
    input and what of it the prompt cache served (``cachedShare``, 0..1, once the run read or
    wrote the cache) or took in, the last turn's share, and the run's own cost."""
    meta: dict[str, Any] = {
        "inputTokens": usage.input_tokens,
        "cacheReadTokens": usage.cache_read_tokens,
        "cacheWriteTokens": usage.cache_write_tokens,
    }
    if usage.input_tokens > 0 and usage.cache_read_tokens + usage.cache_write_tokens > 0:
        meta["cachedShare"] = round(usage.cache_read_tokens / usage.input_tokens, 3)
    turn = usage.turn
    if (
        turn is not None
        and turn.input_tokens > 0
        and turn.cache_write_tokens + turn.cache_read_tokens
    ):
        meta["turnCachedShare"] = round(turn.cache_read_tokens / turn.input_tokens, 3)
    if usage.cost_usd is not None:
        meta["costUsd"] = usage.cost_usd
    return meta


def prompt_usage(finished: p.RunFinished) -> a.Usage | None:
    usage = finished.usage
    input_tokens = usage.input_tokens
    output_tokens = usage.output_tokens
    if not input_tokens and not output_tokens:
        return None
    return a.Usage(
        total_tokens=input_tokens + output_tokens,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_read_tokens=usage.cache_read_tokens or None,
        cached_write_tokens=usage.cache_write_tokens or None,
    )


def prompt_response(finished: p.RunFinishedEvent) -> a.PromptResponse:
    """How a prompt's run ended, as the ``session/prompt`` answer (or its error)."""
    reason = stop_reason(finished)
    if reason is None:
        error = finished.error
        raise RequestError(
            -32603,
            (error.message if error is not None else "") or "The run failed",
            {
                "type": error.type if error is not None else None,
                "hint": error.hint if error is not None else None,
                "runId": finished.run_id,
            },
        )
    meta: dict[str, Any] = {"runId": finished.run_id, "status": finished.status}
    if finished.usage.cost_usd is not None:
        meta["costUsd"] = finished.usage.cost_usd
    if finished.usage.session_cost_usd is not None:
        meta["sessionCostUsd"] = finished.usage.session_cost_usd
    return a.PromptResponse(
        stop_reason=reason, usage=prompt_usage(finished), field_meta={"lovia": meta}
    )


__all__ = [
    "MAPPED_KINDS",
    "NO_ANSWER",
    "NO_TYPED_ANSWER",
    "OUTPUT_TAIL_CHARS",
    "PERMISSION_KINDS",
    "SessionMapper",
    "Update",
    "cache_meta",
    "permission_decision",
    "permission_request",
    "plan_entries",
    "prompt_response",
    "prompt_usage",
    "question_answer",
    "question_request",
    "retry_line",
    "stop_reason",
]
