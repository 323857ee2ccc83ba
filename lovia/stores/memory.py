"""In-process stores: the same contracts as the SQLite ones, for tests and short-lived hosts."""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections import defaultdict
from typing import Any

from lovia.checkpointer import RunHead, RunSnapshot
from lovia.session import Segment, Session
from lovia.stores.maintenance import rewind_segments, trim_segments
from lovia.transcript import TranscriptEntry


class InMemorySession(Session):
    def __init__(self) -> None:
        self._segments: defaultdict[str, list[Segment]] = defaultdict(list)
        self._lock = asyncio.Lock()

    async def segments(self, session_id: str) -> list[Segment]:
        async with self._lock:
            return [
                Segment(s.run_id, list(s.entries), copy.deepcopy(s.meta))
                for s in self._segments.get(session_id, [])
            ]

    async def append(
        self,
        session_id: str,
        entries: list[TranscriptEntry],
        *,
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> str:
        run_id = run_id or uuid.uuid4().hex
        async with self._lock:
            segs = self._segments[session_id]
            if any(s.run_id == run_id for s in segs):
                return run_id
            segs.append(Segment(run_id, list(entries), copy.deepcopy(meta)))
            return run_id

    async def clear(self, session_id: str) -> None:
        async with self._lock:
            self._segments.pop(session_id, None)

    async def trim_tool_results(
        self, session_id: str, *, keep_chars: int = 400, keep_runs: int = 1
    ) -> int:
        async with self._lock:
            segs = self._segments.get(session_id, [])
            new, count = trim_segments(segs, keep_chars=keep_chars, keep_runs=keep_runs)
            if count:
                self._segments[session_id] = new
            return count

    async def rewind(self, session_id: str, *, keep_entries: int) -> int:
        async with self._lock:
            segs = self._segments.get(session_id, [])
            new, removed = rewind_segments(segs, keep_entries=keep_entries)
            if removed:
                self._segments[session_id] = new
            return removed


def _frozen(head: RunHead) -> RunHead:
    return RunHead(
        agent_name=head.agent_name,
        usage=head.usage.clone(),
        turns=head.turns,
        status=head.status,
        output=copy.deepcopy(head.output),
        error=copy.deepcopy(head.error),
        last_input_tokens=head.last_input_tokens,
        context_state=copy.deepcopy(head.context_state),
        updated_at=head.updated_at,
    )


class InMemoryCheckpointer:
    def __init__(self) -> None:
        self._entries: dict[str, list[TranscriptEntry]] = {}
        self._heads: dict[str, RunHead] = {}

    async def append(self, run_id: str, entries: list[TranscriptEntry], head: RunHead) -> None:
        self._entries.setdefault(run_id, []).extend(entries)
        self._heads[run_id] = _frozen(head)

    async def load(self, run_id: str) -> RunSnapshot | None:
        head = self._heads.get(run_id)
        if head is None:
            return None
        return RunSnapshot.from_parts(run_id, list(self._entries.get(run_id, [])), _frozen(head))

    async def delete(self, run_id: str) -> None:
        self._entries.pop(run_id, None)
        self._heads.pop(run_id, None)


__all__ = ["InMemoryCheckpointer", "InMemorySession"]
