"""Sessions: the append-only log of completed runs of one conversation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from lovia.transcript import TranscriptEntry

STATE_META_KEY = "context_state"
NOTICE_META_KEY = "context_notice"


@dataclass
class Segment:
    """One completed run's own entries, in the session's run order."""

    run_id: str
    entries: list[TranscriptEntry]
    meta: dict[str, Any] | None = None


@runtime_checkable
class Session(Protocol):
    """Append-only conversation store: ``append`` is idempotent per ``(session_id, run_id)``."""

    async def segments(self, session_id: str) -> list[Segment]: ...

    async def load(self, session_id: str) -> list[TranscriptEntry]:
        return [entry for seg in await self.segments(session_id) for entry in seg.entries]

    async def append(
        self,
        session_id: str,
        entries: list[TranscriptEntry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str: ...

    async def clear(self, session_id: str) -> None: ...


__all__ = ["NOTICE_META_KEY", "STATE_META_KEY", "Segment", "Session"]
