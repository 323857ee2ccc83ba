"""Asking a human: ``HumanChannel`` (host side) and the ``ask_human`` tool (agent side).

A host owns one channel, consumes ``channel.questions()`` and answers with
``channel.answer(question_id, text)``. The tool is a barrier (``parallel=False``) so
a run has at most one pending question. Use from the event-loop thread only.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lovia.exceptions import ToolError
from lovia.run_context import RunContext, current_tool_call
from lovia.tools.base import Tool, invalid_arguments
from lovia.tools.presentation import short


class QuestionOption(BaseModel):
    """One choice offered to the human."""

    model_config = ConfigDict(extra="forbid")

    label: str = Field(min_length=1)
    description: str = ""

    @field_validator("label", "description")
    @classmethod
    def _single_line(cls, value: str) -> str:
        if "\r" in value or "\n" in value:
            raise ValueError("must be a single line (no CR/LF)")
        return value


@dataclass
class HumanQuestion:
    question: str
    options: list[QuestionOption] = field(default_factory=list)
    multi_select: bool = False
    session_id: str | None = None
    run_id: str | None = None
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    # The asking tool call, so a host can attach the question to it without knowing tool names.
    tool_call_id: str | None = None


@dataclass
class HumanChannel:
    """Pending questions between agents (``ask``) and one host consumer (``questions``)."""

    _pending: dict[str, HumanQuestion] = field(default_factory=dict, repr=False)
    _futures: dict[str, asyncio.Future[str]] = field(default_factory=dict, repr=False)
    _feed: deque[HumanQuestion] = field(default_factory=deque, repr=False)
    _wakeup: asyncio.Event | None = field(default=None, repr=False)
    _closed: bool = field(default=False, repr=False)
    _close_reason: str = field(default="channel closed", repr=False)

    @property
    def pending(self) -> list[HumanQuestion]:
        """Snapshot of unanswered questions, oldest first."""
        return list(self._pending.values())

    @property
    def closed(self) -> bool:
        return self._closed

    def _notify(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    async def ask(self, question: HumanQuestion) -> str:
        """Queue ``question`` and wait for its answer (``ToolError`` on cancel/close)."""
        if self._closed:
            raise ToolError("human channel is closed")
        fut: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending[question.id] = question
        self._futures[question.id] = fut
        self._feed.append(question)
        self._notify()
        try:
            return await fut
        finally:
            self._pending.pop(question.id, None)
            self._futures.pop(question.id, None)
            if not fut.done():
                fut.cancel()

    async def questions(self) -> AsyncIterator[HumanQuestion]:
        """Unanswered questions in the order asked; ends when the channel closes."""
        while True:
            while self._feed:
                q = self._feed.popleft()
                if q.id in self._pending:
                    yield q
            if self._closed:
                return
            if self._wakeup is None:
                self._wakeup = asyncio.Event()
            self._wakeup.clear()
            if self._feed or self._closed:
                continue
            await self._wakeup.wait()

    def answer(self, question_id: str, text: str) -> None:
        """Resolve a question; unknown or already resolved ids are ignored."""
        fut = self._futures.get(question_id)
        if fut is not None and not fut.done():
            fut.set_result(text)
        self._pending.pop(question_id, None)

    def cancel(self, question_id: str, reason: str = "cancelled") -> None:
        """Make the waiting ``ask`` fail with ``ToolError(reason)``."""
        fut = self._futures.get(question_id)
        if fut is not None and not fut.done():
            fut.set_exception(ToolError(reason))
        self._pending.pop(question_id, None)

    def close(self, reason: str = "channel closed") -> None:
        """Cancel everything pending with ``reason`` and end ``questions()``; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._close_reason = reason
        for qid in list(self._futures):
            self.cancel(qid, reason)
        self._notify()


class _AskArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str
    options: list[QuestionOption] | None = Field(default=None, min_length=2, max_length=4)
    multi_select: bool = False

    @field_validator("options")
    @classmethod
    def _unique_labels(cls, value: list[QuestionOption] | None) -> list[QuestionOption] | None:
        if value is None:
            return value
        seen: set[str] = set()
        dupes: list[str] = []
        for opt in value:
            if opt.label in seen and opt.label not in dupes:
                dupes.append(opt.label)
            seen.add(opt.label)
        if dupes:
            raise ValueError("duplicate option labels: " + ", ".join(repr(d) for d in dupes))
        return value


_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "The question, one clear sentence or two."},
        "options": {
            "type": ["array", "null"],
            "minItems": 2,
            "maxItems": 4,
            "default": None,
            "description": "Optional choices (2-4, unique labels).",
            "items": {
                "type": "object",
                "properties": {
                    "label": {"type": "string", "minLength": 1},
                    "description": {"type": "string", "default": ""},
                },
                "required": ["label"],
                "additionalProperties": False,
            },
        },
        "multi_select": {
            "type": "boolean",
            "default": False,
            "description": "Allow several options; the answer lists the chosen labels.",
        },
    },
    "required": ["question"],
    "additionalProperties": False,
}


def _parse(args: dict[str, Any], name: str) -> _AskArgs:
    try:
        return _AskArgs.model_validate(args)
    except ValidationError as exc:
        raise invalid_arguments(name, exc, strip_value_error=True) from None


def ask_human(channel: HumanChannel, *, name: str = "ask_human") -> Tool:
    """A tool that asks the user a question through ``channel`` and returns the answer."""

    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> str:
        parsed = _parse(args, name)
        options = parsed.options or []
        question = HumanQuestion(
            question=parsed.question,
            options=list(options),
            multi_select=parsed.multi_select and bool(options),
            session_id=getattr(ctx, "session_id", None),
            run_id=getattr(ctx, "run_id", None),
        )
        call = current_tool_call.get()
        if call is not None:
            question.tool_call_id = call.id
        return await channel.ask(question)

    return Tool(
        name=name,
        description=(
            "Ask the user a question and wait for the answer. Use it when you cannot proceed "
            "without a decision or information only the user has; offer 2-4 options when the "
            "choice is between known alternatives (multi_select lets the user pick several; "
            "the answer then lists the chosen labels, one per line)."
        ),
        parameters=_SCHEMA,
        invoke=invoke,
        parallel=False,
        kind="other",
        title=lambda args: short(f"Ask: {args.get('question', '')}"),
    )


__all__ = ["HumanChannel", "HumanQuestion", "QuestionOption", "ask_human"]
