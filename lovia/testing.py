"""Deterministic test doubles: ``ScriptedProvider`` replays canned assistant turns."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Sequence
from typing import Any

from lovia.messages import AssistantTurn, Message, ToolCall, Usage
from lovia.providers.base import ModelSettings
from lovia.transcript import (
    EntryCompletedDelta,
    FinishDelta,
    ModelDelta,
    ReasoningDelta,
    ReasoningEntry,
    TextDelta,
    ToolCallDelta,
    TranscriptEntry,
    UsageDelta,
    entries_to_messages,
)


class _ScriptedTurn(AssistantTurn):
    reasoning: str | None = None


class ScriptedProvider:
    """Replays ``script`` turn by turn and records every prompt it receives in ``calls``.

    ``record=False`` skips recording (long scripted runs, benchmarks). Not reusable across
    concurrent runs: it pops a shared queue.
    """

    name = "scripted"
    model: str | None = None
    supports_json_schema = False

    def __init__(self, script: Sequence[AssistantTurn], *, record: bool = True) -> None:
        self.script: deque[AssistantTurn] = deque(script)
        self.record = record
        self._views: list[list[TranscriptEntry]] = []
        self._calls: list[list[Message]] = []
        self.requests: list[dict[str, Any]] = []

    @property
    def calls(self) -> list[list[Message]]:
        """Each call's prompt as messages (converted lazily, so recording stays cheap)."""
        while len(self._calls) < len(self._views):
            self._calls.append(entries_to_messages(self._views[len(self._calls)]))
        return self._calls

    async def stream(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelDelta]:
        if self.record:
            self._views.append(list(entries))
            self.requests.append({"tools": tools, "response_format": response_format})
        if not self.script:
            raise AssertionError("ScriptedProvider ran out of canned responses")
        turn = self.script.popleft()
        reasoning = getattr(turn, "reasoning", None)
        if reasoning:
            for ch in reasoning:
                yield ReasoningDelta(ch)
            yield EntryCompletedDelta(ReasoningEntry(content=reasoning, provider="scripted"))
        for ch in turn.content or "":
            yield TextDelta(ch)
        for i, c in enumerate(turn.tool_calls):
            yield ToolCallDelta(index=i, call_id=c.id, name=c.name, arguments=c.arguments)
        yield UsageDelta(turn.usage)
        yield FinishDelta(turn.finish_reason)


def text(content: str, *, reasoning: str | None = None) -> AssistantTurn:
    turn = _ScriptedTurn(content=content, usage=Usage(input_tokens=1, output_tokens=1))
    turn.reasoning = reasoning
    return turn


def call(name: str, args: dict[str, Any], *, call_id: str | None = None) -> AssistantTurn:
    return AssistantTurn(
        content=None,
        tool_calls=[ToolCall(call_id or f"call_{name}", name, json.dumps(args))],
        usage=Usage(input_tokens=1, output_tokens=1),
    )


def batch(*specs: tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], str]) -> AssistantTurn:
    calls = []
    for i, spec in enumerate(specs):
        name, args = spec[0], spec[1]
        call_id = spec[2] if len(spec) > 2 else f"call_{i}_{name}"
        calls.append(ToolCall(call_id, name, json.dumps(args)))
    return AssistantTurn(
        content=None, tool_calls=calls, usage=Usage(input_tokens=1, output_tokens=1)
    )


__all__ = ["ScriptedProvider", "batch", "call", "text"]
