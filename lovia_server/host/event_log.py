"""Per-run event logs: sequence numbers, delta merging, persist-then-send publishing.

An event gets its envelope (``seq``, ``ts``, ids) when its payload model enters a run's log, and
is encoded to JSON once, for the store and the wire alike. The publisher writes batches to the store
first and only then notifies the client, so a client never sees a ``seq`` a crash could lose and
a restarted server continues the numbering without gaps.

Deltas (message text, reasoning, tool output) are sent the moment they arrive while nothing is
pending: nothing waits for a timer. They are merged only while a write is pending, that is while
the publisher is still storing and sending the previous batch, or while the client has not taken
what it was sent (the pipe did not take the last frame whole). The merged text leaves as one
event as soon as that write completes. Only adjacent deltas of the same message and stream
merge, so the order of everything a run emits is kept exactly.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable
from typing import Any, Protocol, TypeAlias

from pydantic_core import PydanticSerializationError

from lovia_server.host.store import ServerStore
from lovia_server.protocol import (
    DELTA_KINDS,
    ESSENTIAL_KINDS,
    EVENT_CLASSES,
    EventPayload,
    LoviaEvent,
    MessageDelta,
    ReasoningDelta,
    ToolOutput,
    ToolStream,
    ToolUpdate,
)

logger = logging.getLogger("lovia_server.host.event_log")

DeltaKind: TypeAlias = type[MessageDelta] | type[ReasoningDelta] | type[ToolUpdate]
"""The payload classes whose text streams in pieces (``DELTA_KINDS``)."""

MERGE_LIMIT = 1024
"""Characters of held delta text that are sequenced at once, without waiting for the write:
a merged event stays small, and a client that stopped reading costs the transport's cap, not
an ever-growing held text."""
TURN_INTERVAL = 0.001
"""How long a run that streams without pause may hold deltas before it lets the loop run."""

_dumps_ascii = json.JSONEncoder(separators=(",", ":")).encode


def encode_event(event: LoviaEvent) -> tuple[str, bytes]:
    """The event's JSON once: as text for the store and as UTF-8 for the wire.

    Text that UTF-8 cannot carry (a lone surrogate from a tool's output) is escaped instead.
    """
    try:
        text = event.model_dump_json()
    except PydanticSerializationError:
        text = _dumps_ascii(event.model_dump(mode="json"))
    return text, text.encode()


class EventSink(Protocol):
    """Where the publisher's events go: the one port both front doors implement (the language
    server frames the encoded bytes as they are; ACP maps the event model to its updates)."""

    def send_event(self, event: LoviaEvent, data: bytes, *, essential: bool) -> bool:
        """Send one stored event (``data``: its JSON, the bytes the store's row was made from);
        False when the transport refused it (not essential, and the client too far behind).
        An essential event overtakes the run's queued ones."""
        ...

    def pending(self) -> bool:
        """A write is pending: the client has not taken everything it was sent."""
        ...

    def drained(self) -> Awaitable[None] | None:
        """Completes once nothing is pending; ``None`` when nothing is."""
        ...


class Publisher:
    """Persists queued events in batches, then hands each to the client's :class:`EventSink`.

    An event the transport refused is in the store; the client notices the gap at the run's next
    delivered event. So that there always is one, a run whose latest event was not sent keeps it
    as its *tail*, sent as soon as nothing is pending any more.
    """

    def __init__(
        self,
        store: ServerStore,
        sink: EventSink,
    ) -> None:
        self.store = store
        self.sink = sink
        self._pending: list[LoviaEvent] = []
        self._held: dict[EventLog, None] = {}  # logs with merged deltas waiting for a write
        self._task: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._wake: asyncio.Future[None] | None = None  # set by publish() while _run waits
        self.skipped = 0
        self.batches = 0
        self._tails: dict[str, tuple[LoviaEvent, bytes]] = {}  # run id -> its latest unsent event
        self._tail_task: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        """A batch is being stored or sent, or held deltas wait for the client."""
        return self._task is not None and not self._task.done()

    def accepts_delta(self) -> bool:
        """Whether a delta may leave at once: no write pending."""
        return not self.busy and not self.sink.pending()

    def publish(self, event: LoviaEvent) -> None:
        self._pending.append(event)
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)
        self._start()

    def hold(self, log: EventLog) -> None:
        """``log`` merges deltas until the pending write completes; it is flushed then."""
        self._held[log] = None
        self._start()

    def release(self, log: EventLog) -> None:
        self._held.pop(log, None)

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._idle.clear()
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            while True:
                if self._pending:
                    batch, self._pending = self._pending, []
                    await self._write(batch)
                    continue
                if not self._held:
                    return
                await self._until_written()
                if self._pending:
                    continue  # new events first: held deltas of their runs are already in them
                for log in list(self._held):
                    log.flush_deltas()  # into _pending: the next batch
        finally:
            self._idle.set()

    async def _until_written(self) -> None:
        """Wait until the client took what was sent, or an event is published (it is stored
        at once; a client that stopped reading must not hold up the store)."""
        waiter = self.sink.drained()
        if waiter is None:
            return
        self._wake = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait(
                [asyncio.ensure_future(waiter), self._wake], return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            self._wake = None

    async def _write(self, batch: list[LoviaEvent]) -> None:
        encoded = [encode_event(e) for e in batch]
        rows = [(e.run_id, e.seq, text) for e, (text, _) in zip(batch, encoded, strict=True)]
        self.batches += 1
        try:
            await self.store.append_events(rows)
        except Exception:
            logger.exception("events.persist_failed: %d events not stored", len(rows))
        for event, (_, data) in zip(batch, encoded, strict=True):
            self._deliver(event, data)

    def _deliver(self, event: LoviaEvent, data: bytes) -> None:
        # A slow client must not stall runs or fill memory: the transport refuses events other
        # than the essential ones while the client is far behind. They stay in the log; the next
        # delivered event of the run shows a seq gap and the client catches up with
        # lovia/replay.
        if self._send(event, data, essential=event.ESSENTIAL):
            self._tails.pop(event.run_id, None)
            return
        self.skipped += 1
        self._tails[event.run_id] = (event, data)
        if self._tail_task is None or self._tail_task.done():
            self._tail_task = asyncio.get_running_loop().create_task(self._send_tails())

    def _send(self, event: LoviaEvent, data: bytes, *, essential: bool) -> bool:
        try:
            return self.sink.send_event(event, data, essential=essential)
        except Exception:
            logger.exception("events.send_failed: seq %s of run %s", event.seq, event.run_id)
        return True

    async def _send_tails(self) -> None:
        """Send each run's latest unsent event once the client took everything else."""
        while self._tails:
            waiter = self.sink.drained()
            if waiter is not None:
                await waiter
                continue
            tails, self._tails = self._tails, {}
            for event, data in tails.values():
                self._send(event, data, essential=True)

    async def drain(self) -> None:
        """Wait until everything published or held so far is stored and sent."""
        while self.busy or self._pending or self._held:
            if not self.busy:
                self._start()
            await self._idle.wait()


class EventLog:
    """The ordered events of one run (all attempts); deltas are merged while a write is pending.

    ``coalesce=False`` makes every delta its own event (the publisher still batches the
    storing).
    """

    def __init__(
        self,
        run_id: str,
        session_id: str,
        publisher: Publisher,
        *,
        last_seq: int = 0,
        coalesce: bool = True,
        parent_run_id: str | None = None,
    ) -> None:
        self.run_id = run_id
        self.session_id = session_id
        self.parent_run_id = parent_run_id
        self.publisher = publisher
        self.seq = last_seq
        self.coalesce = coalesce
        # Runs of adjacent deltas to the same target: [payload class, key, stream, parts].
        self._held: list[list[Any]] = []
        self._held_chars = 0
        self._turn_at = 0.0  # when the held deltas' wait (or its last turn) began

    def emit(self, payload: EventPayload) -> LoviaEvent:
        """Sequence one event (the deltas held so far go first)."""
        if self._held:
            self.flush_deltas()
        return self._append(payload)

    def _append(self, payload: EventPayload) -> LoviaEvent:
        """The payload under its envelope: the event exactly as stored and sent.

        The payload was validated when it was built and the envelope is the log's own, so the
        event is assembled without validating it again.
        """
        self.seq += 1
        event = EVENT_CLASSES[type(payload)].model_construct(
            session_id=self.session_id,
            run_id=self.run_id,
            seq=self.seq,
            ts=int(time.time() * 1000),
            parent_run_id=self.parent_run_id,
            kind=payload.KIND,
            **payload.__dict__,
        )
        self.publisher.publish(event)
        return event

    def delta(self, kind: DeltaKind, key: str, text: str, stream: ToolStream = "stdout") -> None:
        """Send a delta now if nothing is pending, else merge it into the run's held text."""
        if not text:
            return
        held = self._held
        if held:
            last = held[-1]
            if last[0] == kind and last[1] == key and last[2] == stream:
                last[3].append(text)
            else:
                held.append([kind, key, stream, [text]])
            self._held_chars += len(text)
            if self._held_chars >= MERGE_LIMIT:
                self.flush_deltas()
            return  # already waiting for the publisher
        held.append([kind, key, stream, [text]])
        self._held_chars = len(text)
        if not self.coalesce or self.publisher.accepts_delta():
            self.flush_deltas()
        else:
            self._turn_at = time.monotonic()
            self.publisher.hold(self)

    def needs_turn(self) -> bool:
        """True, at most once per ``TURN_INTERVAL``, while deltas are held: the caller should
        let the event loop run (``await asyncio.sleep(0)``).

        A burst arrives faster than it is read, and reading buffered data never yields to the
        loop, so the pending write could not complete and everything would wait for the end
        of the burst.
        """
        if not self._held:
            return False
        now = time.monotonic()
        if now - self._turn_at < TURN_INTERVAL:
            return False
        self._turn_at = now
        return True

    def flush_deltas(self) -> None:
        """Sequence the held deltas now, one event per run of adjacent same-target text."""
        if not self._held:
            return
        held, self._held = self._held, []
        if self.coalesce:
            self.publisher.release(self)
        for kind, key, stream, parts in held:
            text = parts[0] if len(parts) == 1 else "".join(parts)
            self._append(delta_payload(kind, key, text, stream))

    async def close(self) -> None:
        self.flush_deltas()
        await self.publisher.drain()


def delta_payload(kind: DeltaKind, key: str, text: str, stream: ToolStream) -> EventPayload:
    """A delta's payload, built without validation (the many small events of a stream)."""
    if kind is ToolUpdate:
        output = ToolOutput.model_construct(text=text, stream=stream)
        return ToolUpdate.model_construct(tool_call_id=key, output=output)
    return kind.model_construct(message_id=key, text=text)


__all__ = [
    "DELTA_KINDS",
    "ESSENTIAL_KINDS",
    "DeltaKind",
    "EventLog",
    "EventSink",
    "Publisher",
    "delta_payload",
    "encode_event",
]
