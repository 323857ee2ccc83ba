"""Helpers for provider tests: collect deltas, fold them like the run loop does."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lovia.messages import Usage
from lovia.providers.base import Provider
from lovia.transcript import (
    EntryCompletedDelta,
    FinishDelta,
    ModelDelta,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    TranscriptEntry,
    UsageDelta,
)


@dataclass
class Folded:
    deltas: list[ModelDelta]
    text: str = ""
    reasoning: str = ""
    calls: dict[int, dict[str, str]] = field(default_factory=dict)
    completed: list[TranscriptEntry] = field(default_factory=list)
    usage: Usage | None = None
    finish: str | None = None
    finished: bool = False


def fold(deltas: Sequence[ModelDelta]) -> Folded:
    out = Folded(list(deltas))
    for d in deltas:
        if isinstance(d, TextDelta):
            out.text += d.text
        elif isinstance(d, ReasoningDelta):
            out.reasoning += d.text
        elif isinstance(d, ToolCallDelta):
            slot = out.calls.setdefault(d.index, {"id": "", "name": "", "arguments": ""})
            slot["id"] = d.call_id or slot["id"]
            slot["name"] = d.name or slot["name"]
            slot["arguments"] += d.arguments
        elif isinstance(d, EntryCompletedDelta):
            out.completed.append(d.entry)
        elif isinstance(d, UsageDelta):
            out.usage = d.usage
        elif isinstance(d, FinishDelta):
            out.finish = d.reason
            out.finished = True
    return out


class Sleeps(list[float]):
    """A ``RetryPolicy.sleep`` that records the delays instead of waiting."""

    async def __call__(self, delay: float) -> None:
        self.append(delay)


async def run(provider: Provider, entries: Sequence[TranscriptEntry], **kw: Any) -> Folded:
    deltas = [d async for d in provider.stream(entries, **kw)]
    return fold(deltas)
