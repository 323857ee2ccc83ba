"""The server's outgoing frames: one bounded queue with urgent lanes, written by the event loop.

pygls' own writer writes a frame and flushes. This one does the same through the event loop's
pipe transport, which never blocks: a frame the pipe takes whole is written at once, and only
when the client has not read what it was sent does anything wait here. That is the one layer of
flow control, and it has three rules:

- **Answers and essential events overtake.** Responses and requests to the client go first
  (``answer``), then essential ``lovia/event``s (``run.started``, ``approval.requested``,
  ``run.finished``, ...: ``essential``), then everything else, always at a frame boundary.
  Answers come first because an essential event can be large (``run.finished`` carries the
  run's output). So that a run's events still reach the client in ``seq`` order, an essential
  event drops the queued events of its own run that it overtakes (they are in the event store;
  the client sees the gap and fills it from ``lovia/replay``).
- **Memory is capped.** A droppable frame (any other event) is refused while the queue holds
  more than ``cap`` bytes (``LOVIA_WRITE_QUEUE_MB``, default 16): a client that stopped reading
  costs at most that, and never blocks a run.
- **Nothing else.** No pacing, no timers, no cutting of frames: while the client keeps up, every
  frame goes straight to the pipe.

``pending`` tells whether a write is pending (the pipe did not take everything): the event log
merges deltas while it is, and ``drained()`` lets it wait for the moment it is not.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import stat
from typing import BinaryIO, Literal, Protocol

logger = logging.getLogger("lovia_server.transport.frame_writer")

DEFAULT_QUEUE_MB = 16.0

Lane = Literal["answer", "essential", "normal"]


def queue_cap() -> int:
    """Bytes of droppable notifications that may wait for the client (``LOVIA_WRITE_QUEUE_MB``)."""
    raw = os.environ.get("LOVIA_WRITE_QUEUE_MB", "").strip()
    try:
        megabytes = float(raw) if raw else DEFAULT_QUEUE_MB
    except ValueError:
        megabytes = DEFAULT_QUEUE_MB
    return max(0, int(max(megabytes, 0.0) * 1024 * 1024))


class Sink(Protocol):
    """Where frames go: the loop's write transport (or a file's stand-in for one)."""

    def write(self, data: bytes) -> None: ...

    def get_write_buffer_size(self) -> int: ...

    def is_closing(self) -> bool: ...

    def close(self) -> None: ...


class _FileSink:
    """A file or terminal as a sink, written with plain blocking writes: a file never waits for
    a reader, and a terminal shared with the user's shell must not be left non-blocking."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._closed = False

    def write(self, data: bytes) -> None:
        self._stream.write(data)
        self._stream.flush()

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True


class _PipeProtocol(asyncio.BaseProtocol):
    """The transport's flow-control callbacks, handed to the writer."""

    def __init__(self, writer: FrameWriter) -> None:
        self._writer = writer

    def pause_writing(self) -> None:
        self._writer._paused = True

    def resume_writing(self) -> None:
        self._writer._resume()

    def connection_lost(self, exc: Exception | None) -> None:
        self._writer._lost(exc)


class FrameWriter:
    """Writes whole frames to the client; see the module's docstring for the rules."""

    def __init__(self, sink: Sink | None = None, *, cap: int | None = None) -> None:
        self._sink = sink
        self.cap = queue_cap() if cap is None else cap
        self._answers: collections.deque[bytes] = collections.deque()
        self._essential: collections.deque[bytes] = collections.deque()
        self._normal: collections.deque[tuple[bytes, str | None]] = collections.deque()
        self._queued = 0  # bytes in the normal lane
        self._paused = False  # the transport holds bytes the pipe did not take yet
        self._failed = False
        self._closed = False  # close() was called: the pipe going away is expected
        self.dropped = 0
        self.dropped_bytes = 0
        self._dropping = False  # inside a run of refused frames (logged once per run)
        self._waiters: list[asyncio.Future[None]] = []

    @classmethod
    async def open(cls, stream: BinaryIO, *, cap: int | None = None) -> FrameWriter:
        """A writer over ``stream`` on the running loop: a pipe or socket (how editors start the
        server) through the loop's non-blocking transport, anything else with plain writes."""
        writer = cls(cap=cap)
        try:
            mode = os.fstat(stream.fileno()).st_mode
        except (OSError, ValueError):
            mode = 0
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
            writer._sink = _FileSink(stream)
            return writer
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_write_pipe(lambda: _PipeProtocol(writer), stream)
        # Pause as soon as the pipe leaves anything behind: queued frames then wait here, where
        # an answer can overtake them, not in the transport's buffer.
        transport.set_write_buffer_limits(high=0, low=0)
        writer._sink = transport
        return writer

    # ------------------------------------------------------------------ sending

    @property
    def pending(self) -> bool:
        """A write is pending: the client has not yet taken everything it was sent."""
        return self._paused

    def backlog(self) -> int:
        """Bytes waiting for the client: the queue plus what the transport still holds."""
        held = self._sink.get_write_buffer_size() if self._sink is not None else 0
        urgent = sum(len(f) for f in self._answers) + sum(len(f) for f in self._essential)
        return self._queued + urgent + held

    def write(self, data: bytes) -> None:
        """Send one whole frame in the normal lane, never refused (pygls' writer interface)."""
        self.send(data)

    def send(
        self,
        data: bytes,
        *,
        lane: Lane = "normal",
        droppable: bool = False,
        key: str | None = None,
    ) -> bool:
        """Send one whole frame; False when it was refused (the pipe is gone, or ``droppable``
        and the queue is over its cap). ``key`` names the run an event belongs to: an essential
        frame drops the queued normal frames with the same key."""
        if self._failed or self._sink is None or self._sink.is_closing():
            return False
        if not self._paused:  # nothing is queued either: the pump empties the lanes first
            self._put(data)
            return not self._failed
        if lane == "answer":
            self._answers.append(data)
            return True
        if lane == "essential":
            if key is not None and self._normal:
                self._drop_queued(key)
            self._essential.append(data)
            return True
        if droppable and self._queued + len(data) > self.cap:
            self._refuse(len(data))
            return False
        self._normal.append((data, key))
        self._queued += len(data)
        return True

    def _put(self, data: bytes) -> None:
        assert self._sink is not None
        try:
            self._sink.write(data)  # the transport calls pause_writing() if the pipe is full
        except (BrokenPipeError, OSError, ValueError, RuntimeError):
            self._lost(None)

    def _drop_queued(self, key: str) -> None:
        """An essential event overtakes its run's queued events: they go (the gap is replayed)."""
        kept: collections.deque[tuple[bytes, str | None]] = collections.deque()
        for frame, frame_key in self._normal:
            if frame_key == key:
                self._queued -= len(frame)
                self.dropped += 1
                self.dropped_bytes += len(frame)
            else:
                kept.append((frame, frame_key))
        self._normal = kept

    def _refuse(self, size: int) -> None:
        self.dropped += 1
        self.dropped_bytes += size
        if not self._dropping:
            self._dropping = True
            logger.warning(
                "writer.dropping: %d bytes wait for the client (cap %d); events are not sent "
                "until it catches up (they stay replayable)",
                self._queued,
                self.cap,
            )

    def _resume(self) -> None:
        """The pipe took everything the transport held: write queued frames, lane by lane,
        until the pipe is full again or the lanes are empty."""
        self._paused = False
        while not self._paused and not self._failed:
            if self._answers:
                self._put(self._answers.popleft())
            elif self._essential:
                self._put(self._essential.popleft())
            elif self._normal:
                frame, _ = self._normal.popleft()
                self._queued -= len(frame)
                self._put(frame)
            else:
                break
        if self._dropping and self._queued <= self.cap // 2:
            self._dropping = False
            logger.warning(
                "writer.caught_up: %d events (%d bytes) were not sent so far",
                self.dropped,
                self.dropped_bytes,
            )
        if not self._paused:
            self._release()

    def _lost(self, exc: Exception | None) -> None:
        if not self._failed and not self._closed:
            logger.error("writer.failed: the client's pipe is closed (%s)", exc or "closed")
        self._failed = True
        self._paused = False
        self._answers.clear()
        self._essential.clear()
        self._normal.clear()
        self._queued = 0
        self._release()

    # ------------------------------------------------------------------ waiting

    def drained(self) -> asyncio.Future[None] | None:
        """A future that completes once the client has taken everything (or the pipe is gone);
        ``None`` when nothing is pending."""
        if not self._paused:
            return None
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        return future

    def _release(self) -> None:
        waiters, self._waiters = self._waiters, []
        for future in waiters:
            if not future.done():
                future.set_result(None)

    def stats(self) -> dict[str, int]:
        return {
            "queued": self._queued,
            "urgent": len(self._answers) + len(self._essential),
            "dropped": self.dropped,
            "droppedBytes": self.dropped_bytes,
            "limit": self.cap,
        }

    def close(self) -> None:
        """Hand everything queued to the transport and close it; it writes what the pipe takes
        while the loop runs (pygls calls this on ``exit``)."""
        sink = self._sink
        self._closed = True
        if sink is None or sink.is_closing():
            return
        if not self._failed:
            for lane in (self._answers, self._essential):
                while lane:
                    sink.write(lane.popleft())
            while self._normal:
                sink.write(self._normal.popleft()[0])
        self._queued = 0
        sink.close()

    async def finish(self, *, grace: float = 5.0) -> None:
        """Give the client ``grace`` seconds to take what is queued, then close."""
        waiter = self.drained()
        if waiter is not None:
            try:
                await asyncio.wait_for(waiter, grace)
            except TimeoutError:
                logger.warning("writer.closing with %d bytes unsent", self.backlog())
        self.close()


__all__ = ["FrameWriter", "Lane", "queue_cap"]
