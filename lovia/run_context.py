"""The live per-run handle that tools, hooks, guardrails, injectors and plugins receive."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from lovia.messages import Message, ToolCall, Usage
from lovia.reliability import CancelToken, RunBudget
from lovia.steering import Mailbox
from lovia.transcript import InputEntry, TranscriptEntry, entries_to_messages

if TYPE_CHECKING:
    from lovia.agent import Agent

TContext = TypeVar("TContext")

current_tool_call: ContextVar[ToolCall | None] = ContextVar("lovia_current_tool_call", default=None)
"""The tool call being executed, so tools can tag side output (e.g. streamed shell output)."""

current_approval: ContextVar[object] = ContextVar("lovia_current_approval", default=None)
"""The ``answer`` the executing call was approved with (``ApprovalRequired.approve(answer=...)``),
``None`` when it needed no approval or was approved without one: lets a tool policy act on what
the approver said (a host writes the user's reviewed text instead of the proposal)."""


@dataclass
class RunContext(Generic[TContext]):
    context: TContext
    entries: list[TranscriptEntry]
    agent: Agent[Any]
    usage: Usage = field(default_factory=Usage)
    session_id: str | None = None
    run_id: str | None = None
    turn: int = 0
    budget: RunBudget | None = None
    workspace: Any = None
    cancel_token: CancelToken = field(default_factory=CancelToken)
    mailbox: Mailbox = field(default_factory=Mailbox)
    _tracer: Any = field(default=None, repr=False)

    @property
    def deps(self) -> TContext:
        return self.context

    @property
    def messages(self) -> list[Message]:
        return entries_to_messages(self.entries)

    @property
    def system_prompt(self) -> str:
        if self.entries:
            first = self.entries[0]
            if (
                isinstance(first, InputEntry)
                and first.role == "system"
                and isinstance(first.content, str)
            ):
                return first.content
        return ""


__all__ = ["RunContext", "current_approval", "current_tool_call"]
