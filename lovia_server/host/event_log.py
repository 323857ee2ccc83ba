"""Per-run event logs: sequence numbers, delta merging, persist-then-send publishing.

An event gets its ``seq`` when it enters a run's log. The publisher writes batches to the store
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
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, overload

from lovia_server.host.store import ServerStore
from lovia_server.protocol import DELTA_KINDS, EventPayload, ToolStream

logger = logging.getLogger("lovia_server.host.payloads")

Event = dict[str, Any]  # one ``lovia/event`` as sent: the JSON edge

ESSENTIAL_KINDS = frozenset(
    {
        "run.started",
        "run.finished",
        "approval.requested",
        "approval.resolved",
        "question.requested",
        "question.answered",
        "subagent.started",
        "subagent.finished",
    }
)
"""Events always sent, ahead of other queued events, however far behind the client is: the ones
it must act on or that open and close a run (a client that missed the rest sees the ``seq`` gap
and replays)."""

MERGE_LIMIT = 1024
"""Characters of held delta text that are sequenced at once, without waiting for the write:
a merged event stays small, and a client that stopped reading costs the transport's cap, not
an ever-growing held text."""
TURN_INTERVAL = 0.001
"""How long a run that streams without pause may hold deltas before it lets the loop run."""

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_dumps_ascii = json.JSONEncoder(separators=(",", ":")).encode


def encode_event(event: Event) -> tuple[str, bytes]:
    """The event's JSON once: as text for the store and as UTF-8 for the wire.

    Text that UTF-8 cannot carry (a lone surrogate from a tool's output) is escaped instead.
    """
    text = _dumps(event)
    try:
        return text, text.encode()
    except UnicodeEncodeError:
        text = _dumps_ascii(event)
        return text, text.encode()


class EventWire(Protocol):
    """The client's end as the publisher needs it (``LspEditor`` over the ``FrameWriter``)."""

    def send_event(self, data: bytes, *, run_id: str, essential: bool) -> bool:
        """Send one encoded event; False when the transport refused it (not essential, and
        the client too far behind). An essential event overtakes the run's queued ones."""
        ...

    def pending(self) -> bool:
        """A write is pending: the client has not taken everything it was sent."""
        ...

    def drained(self) -> Awaitable[None] | None:
        """Completes once nothing is pending; ``None`` when nothing is."""
        ...


class Publisher:
    """Persists queued events in batches, then hands each to the client.

    ``send`` gets the event; ``wire``, when given, gets its already encoded JSON instead (the
    server frames those bytes as they are) and tells whether a write is pending.

    An event the transport refused is in the store; the client notices the gap at the run's next
    delivered event. So that there always is one, a run whose latest event was not sent keeps it
    as its *tail*, sent as soon as nothing is pending any more.
    """

    def __init__(
        self,
        store: ServerStore,
        send: Callable[[Event], None],
        *,
        wire: EventWire | None = None,
    ) -> None:
        self.store = store
        self.send = send
        self.wire = wire
        self._pending: list[Event] = []
        self._held: dict[EventLog, None] = {}  # logs with merged deltas waiting for a write
        self._task: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._wake: asyncio.Future[None] | None = None  # set by publish() while _run waits
        self.skipped = 0
        self.batches = 0
        self._tails: dict[str, tuple[Event, bytes]] = {}  # run id -> its latest unsent event
        self._tail_task: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        """A batch is being stored or sent, or held deltas wait for the client."""
        return self._task is not None and not self._task.done()

    def _wire_pending(self) -> bool:
        return self.wire is not None and self.wire.pending()

    def accepts_delta(self) -> bool:
        """Whether a delta may leave at once: no write pending."""
        return not self.busy and not self._wire_pending()

    def publish(self, event: Event) -> None:
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
        waiter = self.wire.drained() if self.wire is not None else None
        if waiter is None:
            return
        self._wake = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait(
                [asyncio.ensure_future(waiter), self._wake], return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            self._wake = None

    async def _write(self, batch: list[Event]) -> None:
        encoded = [encode_event(e) for e in batch]
        rows = [(e["runId"], e["seq"], text) for e, (text, _) in zip(batch, encoded, strict=True)]
        self.batches += 1
        try:
            await self.store.append_events(rows)
        except Exception:
            logger.exception("events.persist_failed: %d events not stored", len(rows))
        for event, (_, data) in zip(batch, encoded, strict=True):
            self._deliver(event, data)

    def _deliver(self, event: Event, data: bytes) -> None:
        # A slow client must not stall runs or fill memory: the transport refuses events other
        # than the essential ones while the client is far behind. They stay in the log; the next
        # delivered event of the run shows a seq gap and the client catches up with
        # lovia/replay.
        if self._send(event, data, essential=event["kind"] in ESSENTIAL_KINDS):
            self._tails.pop(event["runId"], None)
            return
        self.skipped += 1
        self._tails[event["runId"]] = (event, data)
        if self._tail_task is None or self._tail_task.done():
            self._tail_task = asyncio.get_running_loop().create_task(self._send_tails())

    def _send(self, event: Event, data: bytes, *, essential: bool) -> bool:
        try:
            if self.wire is not None:
                return self.wire.send_event(data, run_id=event["runId"], essential=essential)
            self.send(event)
        except Exception:
            logger.exception("events.send_failed: seq %s of run %s", event["seq"], event["runId"])
        return True

    async def _send_tails(self) -> None:
        """Send each run's latest unsent event once the client took everything else."""
        while self._tails:
            waiter = self.wire.drained() if self.wire is not None else None
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
        # Runs of adjacent deltas to the same target: [kind, key, stream, parts].
        self._held: list[list[Any]] = []
        self._held_chars = 0
        self._turn_at = 0.0  # when the held deltas' wait (or its last turn) began

    @overload
    def emit(self, payload: EventPayload) -> Event: ...

    @overload
    def emit(self, payload: str, raw: Mapping[str, Any]) -> Event: ...

    def emit(self, payload: EventPayload | str, raw: Mapping[str, Any] | None = None) -> Event:
        """Sequence one event: a payload model, or a kind and an already-wire-shaped payload."""
        if self._held:
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
            self._append(kind, delta_payload(kind, key, text, stream))

    async def close(self) -> None:
        self.flush_deltas()
        await self.publisher.drain()


def delta_payload(kind: str, key: str, text: str, stream: ToolStream) -> dict[str, Any]:
    """A delta's wire payload, built directly (the models' ``to_wire`` shape, no validation)."""
    if kind == "tool.update":
        return {"toolCallId": key, "output": {"text": text, "stream": stream}}
    return {"messageId": key, "text": text}


__all__ = [
    "DELTA_KINDS",
    "ESSENTIAL_KINDS",
    "EventLog",
    "EventWire",
    "Publisher",
    "delta_payload",
    "encode_event",
]
