"""The context-policy seam: shapes the per-call view of the transcript, never the transcript."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from lovia.transcript import TranscriptEntry

if TYPE_CHECKING:
    from lovia.messages import Usage
    from lovia.providers.base import Provider
    from lovia.tools.base import Tool


@dataclass
class CompactionRequest:
    entries: list[TranscriptEntry]
    provider: Provider | None = None
    model: str | None = None
    tools: Sequence[Tool] = ()
    last_input_tokens: int | None = None
    overflow: bool = False
    reported_window: int | None = None
    scratch: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    """The run's session id (keys the policy's in-process state cache), if any."""
    usage: Usage | None = None
    """Where model calls made while compacting (summaries) add what they cost; the run
    loop counts it into the run's usage. None: nobody is counting."""
    manual: bool = False
    """Compact now, whatever the watermarks say (``/compact``): a policy that understands it
    summarises everything outside its protected tail; one that does not ignores it."""
    focus: str | None = None
    """With ``manual``: what the user asked the summary to keep (``/compact <focus>``)."""


@dataclass
class ContextResult:
    entries: list[TranscriptEntry]
    changed: bool = False
    compacted: bool = False
    reason: str | None = None
    summary: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    detail: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CompactNow:
    """Ask a run to compact its session's conversation now instead of calling the model
    (``Runner.stream(..., compact=CompactNow("keep the API decisions"))``, ``/compact``)."""

    focus: str | None = None


@runtime_checkable
class ContextPolicy(Protocol):
    async def compact(self, req: CompactionRequest) -> ContextResult: ...


class NoopContextPolicy:
    """Sends the transcript as is."""

    name = "noop"

    async def compact(self, req: CompactionRequest) -> ContextResult:
        return ContextResult(entries=req.entries)


__all__ = ["CompactNow", "CompactionRequest", "ContextPolicy", "ContextResult", "NoopContextPolicy"]
