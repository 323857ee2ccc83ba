"""Per-run event logs: sequence numbers, delta coalescing, persist-then-send publishing.

An event gets its ``seq`` when it enters a run's log. The publisher writes batches to the store
first and only then notifies the client, so a client never sees a ``seq`` a crash could lose and
a restarted server continues the numbering without gaps.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from typing import Any, overload

from lovia_server.protocol import (
    DELTA_KINDS,
    EventPayload,
    MessageDelta,
    ReasoningDelta,
    ToolOutput,
    ToolStream,
    ToolUpdate,
)
from lovia_server.store import ServerStore

logger = logging.getLogger("lovia_server.events")

Event = dict[str, Any]  # one ``lovia/event`` as sent: the JSON edge


def coalesce_interval() -> float:
    """Seconds between coalesced delta events (``LOVIA_COALESCE_MS``, default 20; 0 = off)."""
    raw = os.environ.get("LOVIA_COALESCE_MS", "").strip()
    try:
        return max(0.0, float(raw)) / 1000 if raw else 0.02
    except ValueError:
        return 0.02


class Publisher:
    """Persists queued events in batches, then hands each to ``send`` (the client notify)."""

    def __init__(
        self,
        store: ServerStore,
        send: Callable[[Event], None],
        *,
        backlog: Callable[[], int] = lambda: 0,
        backlog_limit: int = 8 * 1024 * 1024,
    ) -> None:
        self.store = store
        self.send = send
        self.backlog = backlog
        self.backlog_limit = backlog_limit
        self._pending: list[Event] = []
        self._task: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self.skipped = 0

    def publish(self, event: Event) -> None:
        self._pending.append(event)
        if self._task is None or self._task.done():
            self._idle.clear()
            self._task = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                rows = [
                    (e["runId"], e["seq"], json.dumps(e, ensure_ascii=False, separators=(",", ":")))
                    for e in batch
                ]
                try:
                    await self.store.append_events(rows)
                except Exception:
                    logger.exception("events.persist_failed: %d events not stored", len(rows))
                for event in batch:
                    self._deliver(event)
        finally:
            self._idle.set()

    def _deliver(self, event: Event) -> None:
        # A slow client must not stall runs: when its pipe is backed up, deltas are not sent.
        # They stay in the log; the next delivered event shows a seq gap and the client
        # catches up with lovia/replay.
        if event["kind"] in DELTA_KINDS and self.backlog() > self.backlog_limit:
            self.skipped += 1
            return
        try:
            self.send(event)
        except Exception:
            logger.exception("events.send_failed: seq %s of run %s", event["seq"], event["runId"])

    async def drain(self) -> None:
        """Wait until everything published so far is stored and sent."""
        while not self._idle.is_set() or self._pending:
            await self._idle.wait()
            if self._pending and (self._task is None or self._task.done()):
                self._idle.clear()
                self._task = asyncio.get_running_loop().create_task(self._flush())


class EventLog:
    """The ordered events of one run (all attempts); deltas are coalesced before sequencing."""

    def __init__(
        self,
        run_id: str,
        session_id: str,
        publisher: Publisher,
        *,
        last_seq: int = 0,
        interval: float | None = None,
        parent_run_id: str | None = None,
    ) -> None:
        self.run_id = run_id
        self.session_id = session_id
        self.parent_run_id = parent_run_id
        self.publisher = publisher
        self.seq = last_seq
        self.interval = coalesce_interval() if interval is None else interval
        self._deltas: dict[tuple[str, str, ToolStream], list[str]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._last_flush = 0.0

    @overload
    def emit(self, payload: EventPayload) -> Event: ...

    @overload
    def emit(self, payload: str, raw: Mapping[str, Any]) -> Event: ...

    def emit(self, payload: EventPayload | str, raw: Mapping[str, Any] | None = None) -> Event:
        """Sequence one event: a payload model, or a kind and an already-wire-shaped payload."""
        if self._deltas:
            self.flush_deltas()
        if isinstance(payload, EventPayload):
            return self._append(payload.KIND, payload.to_wire())
        return self._append(payload, raw or {})

    def _append(self, kind: str, payload: Mapping[str, Any]) -> Event:
        """The envelope, then the payload's fields: the event exactly as stored and sent."""
        self.seq += 1
        event: Event = {
            "sessionId": self.session_id,
            "runId": self.run_id,
            "seq": self.seq,
            "ts": int(time.time() * 1000),
        }
        if self.parent_run_id is not None:
            event["parentRunId"] = self.parent_run_id
        event["kind"] = kind
        event.update(payload)
        self.publisher.publish(event)
        return event

    def delta(self, kind: str, key: str, text: str, stream: ToolStream = "stdout") -> None:
        """Buffer a delta; at most one flush per ``interval`` per run."""
        if not text:
            return
        self._deltas.setdefault((kind, key, stream), []).append(text)
        if self.interval <= 0:
            self.flush_deltas()
            return
        if self._timer is None:
            wait = max(0.0, self._last_flush + self.interval - time.monotonic())
            self._timer = asyncio.get_running_loop().call_later(wait, self.flush_deltas)

    def flush_deltas(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._last_flush = time.monotonic()
        pending, self._deltas = self._deltas, {}
        for (kind, key, stream), parts in pending.items():
            text = "".join(parts)
            payload: EventPayload
            if kind == ToolUpdate.KIND:
                payload = ToolUpdate(tool_call_id=key, output=ToolOutput(text=text, stream=stream))
            elif kind == ReasoningDelta.KIND:
                payload = ReasoningDelta(message_id=key, text=text)
            else:
                payload = MessageDelta(message_id=key, text=text)
            self._append(payload.KIND, payload.to_wire())

    async def close(self) -> None:
        self.flush_deltas()
        await self.publisher.drain()


__all__ = ["DELTA_KINDS", "EventLog", "Publisher", "coalesce_interval"]
