"""A non-blocking stdout writer: frames are queued and written by a background thread.

A client that reads slowly fills the pipe; writing from the event loop would then block every
run. Three rules keep a slow or stopped client from costing more than a bounded amount:

- **Answers overtake.** Responses to client requests and requests to the client go in an urgent
  lane that is written before any queued notification, always at a frame boundary.
- **The pipe stays short.** Before a notification is written the thread asks the kernel how much
  the pipe still holds (``FIONREAD``) and waits while that is over ``PIPE_TARGET``, so an urgent
  frame never queues behind tens of kilobytes the client has yet to read. Streams that are not
  pipes (files, sockets, ttys) are written without pacing.
- **Memory is capped, and so is the lag.** A frame the caller marks droppable (``lovia/event``
  notifications other than the essential kinds: they are in the event store, the client sees
  the ``seq`` gap and replays) is refused when the queue would exceed what the client reads in
  ``LAG_SECONDS`` (measured while it is behind; at least ``LAG_MIN``) or ``queue_cap()`` bytes
  (``LOVIA_WRITE_QUEUE_MB``, default 16), whichever is less. Responses, requests and essential
  events are always queued, so what the client must see is never more than that behind.
- **A client that keeps up costs no thread hop.** A frame that finds both lanes empty, nothing
  being written and room for it in the pipe for certain is written by the caller at once (a
  write that fits cannot block); everything else goes through the thread.
- **No frame is long for a slow client.** A client that declared it can join ``lovia/part``
  frames (``parts``) gets a large notification cut into parts, each what it reads in
  ``PART_SECONDS``, once it is seen reading slowly (``notification_parts``): an answer then
  waits for one part, not for a whole ``message.completed``.

The notification queue's size in bytes is the backlog the publisher checks before sending
deltas, and ``drained()`` lets it wait, without polling, for the client to take everything.
"""

from __future__ import annotations

import array
import asyncio
import collections
import logging
import os
import stat
import threading
import time
from typing import BinaryIO

from lovia_server.notification_parts import PART_MIN, split_frame

try:
    import fcntl
    import termios
except ImportError:  # pragma: no cover - Windows: no FIONREAD, notifications are not paced
    fcntl = termios = None  # type: ignore[assignment]

logger = logging.getLogger("lovia_server.writer")

DEFAULT_QUEUE_MB = 16.0
PIPE_TARGET = 512
"""Bytes a slow client's pipe may hold before the next notification is written (urgent frames:
no limit)."""
PIPE_FAST = 16 * 1024
"""The same for a client that reads fast (or has not been seen to be slow): pacing it to 512
bytes would make every write wait for its next read."""
FAST_CLIENT = 1024 * 1024
"""Bytes/s: a client measured reading slower than this, with data waiting, is paced tightly."""
SPIN = 0.02
"""Seconds a wait for the pipe polls at ``POLL_MIN`` before it backs off (a fast client reads
within this; a slow or stopped one is looked at less and less often)."""
LAG_SECONDS = 1.0
"""Droppable notifications may queue up to what the client reads in this long..."""
LAG_MIN = 64 * 1024
"""...but never less than this many bytes (a client that stopped reading gets this much)."""
LAG_UNKNOWN = 256 * 1024
"""The limit before the client's rate was first measured."""
RATE_WINDOW = 0.25
"""Seconds over which the client's reading rate is measured while it is behind."""
PART_SECONDS = 0.025
"""A part is what the client reads in this long (at least ``PART_MIN``, at most ``PART_MAX``)."""
PART_MAX = 16 * 1024
POLL_MIN = 0.0005
POLL_MAX = 0.016
"""The wait between two looks at a pipe the client is not reading: doubles from POLL_MIN."""


def queue_cap() -> int:
    """Bytes of notifications that may wait for the client (``LOVIA_WRITE_QUEUE_MB``)."""
    raw = os.environ.get("LOVIA_WRITE_QUEUE_MB", "").strip()
    try:
        megabytes = float(raw) if raw else DEFAULT_QUEUE_MB
    except ValueError:
        megabytes = DEFAULT_QUEUE_MB
    return max(0, int(max(megabytes, 0.0) * 1024 * 1024))


def _pipe_size(fd: int) -> int:
    """The pipe's capacity (Linux may shrink it to one page for a user over its pipe quota);
    0 when unknown, which turns direct writes off."""
    get = getattr(fcntl, "F_GETPIPE_SZ", None)
    if get is None:
        return 0
    try:
        return int(fcntl.fcntl(fd, get))
    except OSError:
        return 0


def _pipe_fd(stream: BinaryIO) -> int | None:
    """The stream's descriptor when it is a pipe whose fill level the kernel reports."""
    if fcntl is None:  # pragma: no cover - Windows
        return None
    try:
        fd = stream.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        fcntl.ioctl(fd, termios.FIONREAD, array.array("i", [0]))
    except (AttributeError, OSError, ValueError):
        return None
    return fd


class QueuedWriter:
    def __init__(
        self,
        stream: BinaryIO,
        *,
        cap: int | None = None,
        pipe_target: int = PIPE_TARGET,
        fast_target: int = PIPE_FAST,
    ) -> None:
        self._stream = stream
        self.cap = queue_cap() if cap is None else cap
        self.pipe_target = pipe_target
        self.fast_target = fast_target
        self._fd = _pipe_fd(stream)
        self._pipe_size = _pipe_size(self._fd) if self._fd is not None else 0
        self._writing = False  # the thread is writing a frame (outside the lock)
        self.direct = 0  # frames written by the caller (see _write_now)
        self._urgent: collections.deque[bytes] = collections.deque()
        self._normal: collections.deque[bytes] = collections.deque()
        self._pending = 0  # bytes queued in the notification lane
        self._cond = threading.Condition()
        self._closed = False
        self._failed = False
        self.dropped = 0
        self.dropped_bytes = 0
        self._dropping = False  # inside a run of refused frames (logged once per run)
        self._waiters: list[asyncio.Future[None]] = []
        self._rate: float | None = None  # bytes/s the client read while behind; None: unknown
        self._window_start = time.monotonic()
        self._window_bytes = 0
        # The client's own reading, sampled from the pipe: bytes written minus bytes held.
        self._written_total = 0
        self._sample: tuple[float, int] | None = None  # (when, consumed) with data waiting
        self._client_rate: float | None = None  # None: not seen slow
        self._unseen = 0  # at most what the pipe holds: its fill when last seen, plus writes since
        self.parts = False  # the client joins lovia/part frames: cut large notifications
        self.split = 0  # notifications sent in parts
        self._thread = threading.Thread(target=self._run, name="lovia-stdout", daemon=True)
        self._thread.start()

    @property
    def paced(self) -> bool:
        """Whether notifications wait for the pipe to empty (the stream is a pipe)."""
        return self._fd is not None

    def backlog(self) -> int:
        """Bytes of notifications queued but not yet written to the pipe."""
        return self._pending

    def drained(self) -> asyncio.Future[None] | None:
        """A future that completes once every queued notification is in the pipe; ``None`` if
        none is queued. Call it on the event loop."""
        with self._cond:
            if self._pending <= 0 or self._closed or self._failed:
                return None
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(future)
            return future

    def write(self, data: bytes) -> None:
        """Queue one frame in the notification lane, never refused (pygls' writer interface)."""
        self.send(data)

    def send(self, data: bytes, *, urgent: bool = False, droppable: bool = False) -> bool:
        """Queue one whole frame; False when it was refused (closed, or droppable and the
        notification queue is over its cap)."""
        if self._closed or self._failed:
            return False
        with self._cond:
            if not urgent:
                if droppable and self._pending + len(data) > self.limit():
                    self.dropped += 1
                    self.dropped_bytes += len(data)
                    if not self._dropping:
                        self._dropping = True
                        logger.warning(
                            "writer.dropping: %d bytes wait for the client (limit %d, cap %d, "
                            "reading %s B/s); events are not sent until it catches up (they "
                            "stay replayable)",
                            self._pending,
                            self.limit(),
                            self.cap,
                            "?" if self._rate is None else int(self._rate),
                        )
                    return False
                if self._pending == 0 and time.monotonic() - self._window_start > RATE_WINDOW:
                    self._window_start, self._window_bytes = time.monotonic(), 0  # was idle
            if self._write_now(data, urgent=urgent):
                return not self._failed
            if urgent:
                self._urgent.append(data)
                self._cond.notify()
            else:
                self._normal.append(data)
                self._pending += len(data)
                if len(self._normal) == 1:  # the thread may be idle; else it is pacing
                    self._cond.notify()
        return True

    def _write_now(self, data: bytes, *, urgent: bool) -> bool:
        """Write ``data`` here, under the lock, when that cannot block or overtake: the lanes
        are empty, the thread is not writing, and the pipe has room for it for certain (what it
        held when last seen plus what was written since, against a target well under its
        capacity). False: queue it."""
        size = len(data)
        if (
            not self._pipe_size
            or self._urgent
            or self._normal
            or self._writing
            or self._closed
            or self._failed
        ):
            return False
        if self._unseen + size > self._direct_room():
            held = self._in_pipe()  # look: a client that keeps up has read it all by now
            self._unseen = held
            self._sample_client(time.monotonic(), held)  # may change the verdict, and the room
            if held + size > self._direct_room():
                return False
        if not self._put(data):
            self._cond.notify()  # the thread releases the drained() waiters and stops
            return True
        self.direct += 1
        self._written_total += size
        self._unseen += size
        if not urgent:
            self._window_bytes += size
        return True

    def _direct_room(self) -> int:
        """Bytes the pipe may hold after a direct write: the pacing target, and never more
        than half of what the pipe can take."""
        return min(self._target(), self._pipe_size // 2)

    def limit(self) -> int:
        """Bytes of droppable notifications that may queue now (see the module's docstring)."""
        if self._rate is None:  # not measured yet: start modestly, it doubles as it keeps up
            return min(self.cap, LAG_UNKNOWN)
        return min(self.cap, max(LAG_MIN, int(self._rate * LAG_SECONDS)))

    def stats(self) -> dict[str, int]:
        return {
            "queued": self._pending,
            "urgent": len(self._urgent),
            "dropped": self.dropped,
            "droppedBytes": self.dropped_bytes,
            "split": self.split,
        }

    def close(self) -> None:
        if self._closed:
            return
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join(timeout=5)

    # ------------------------------------------------------------------ the thread

    def _in_pipe(self) -> int:
        """Bytes the client has not read from the pipe yet (0 when unknown)."""
        if self._fd is None:
            return 0
        held = array.array("i", [0])
        try:
            fcntl.ioctl(self._fd, termios.FIONREAD, held)
        except OSError:
            return 0
        return held[0]

    def _next(self) -> tuple[bytes, bool] | None:
        """The next frame to write, waiting for one (and, for a notification, for room in the
        pipe); None once closed and everything queued is written."""
        poll = POLL_MIN
        last_held = -1
        waiting_since = 0.0
        with self._cond:
            while True:
                if self._urgent:
                    return self._take(self._urgent, urgent=True)
                if self._normal:
                    if self._fd is None:
                        return self._take(self._normal, urgent=False)
                    if self._unseen + len(self._normal[0]) <= self._target():
                        # The pipe cannot hold more than it held when last seen plus what was
                        # written since: no need to ask the kernel (a fast client's case).
                        return self._take(self._normal, urgent=False)
                    held = self._in_pipe()
                    self._unseen = held  # what the pipe holds now, exactly
                    now = time.monotonic()
                    self._sample_client(now, held)
                    if held <= self._target():
                        return self._take(self._normal, urgent=False)
                    # Read since the last look, or only just started waiting: look again soon;
                    # else less and less often.
                    if not waiting_since:
                        waiting_since = now
                    if held < last_held or now - waiting_since < SPIN:
                        poll = POLL_MIN
                    else:
                        poll = min(poll * 2, POLL_MAX)
                    last_held = held
                    self._measure()
                    self._cond.wait(poll)
                    continue
                if self._closed:
                    return None
                self._cond.wait()

    def _take(self, lane: collections.deque[bytes], *, urgent: bool) -> tuple[bytes, bool]:
        """Pop the next frame for the thread to write (under the lock): until ``_written``,
        nothing is written directly, so no frame can overtake or split it."""
        self._writing = True
        return lane.popleft(), urgent

    def _slow(self) -> bool:
        return self._client_rate is not None and self._client_rate < FAST_CLIENT

    def _target(self) -> int:
        """Bytes the pipe may hold before a notification: few for a client seen reading slowly
        (so an answer waits for little), more for one that keeps up."""
        return self.pipe_target if self._slow() else max(self.pipe_target, self.fast_target)

    def _cut(self, data: bytes) -> bytes:
        """A large notification for a slow client that joins parts: its first part, the rest
        put back at the head of the lane (answers may go out between two parts)."""
        rate = self._client_rate
        if not self.parts or rate is None or not self._slow():
            return data
        size = min(PART_MAX, max(PART_MIN, int(rate * PART_SECONDS)))
        pieces = split_frame(data, self.split, size)  # None when small; outside the lock
        if not pieces:
            return data
        with self._cond:
            self.split += 1
            self._normal.extendleft(reversed(pieces[1:]))
            self._pending += sum(len(piece) for piece in pieces) - len(data)
        return pieces[0]

    def _sample_client(self, now: float, held: int) -> None:
        """Measure how fast the client reads while data waits for it (under the lock): over
        ``RATE_WINDOW`` with the pipe never found empty, that is its rate. A pipe found empty
        means it read everything it had, at least at the rate since the sample began: fast
        when that alone is fast, else the verdict stands (it may have had too little to read)."""
        consumed = self._written_total - held
        if self._sample is None or now - self._sample[0] > 4 * RATE_WINDOW:
            self._sample = (now, consumed) if held > 0 else None
            return
        started, consumed_then = self._sample
        elapsed = now - started
        if held <= 0:
            if elapsed > 0 and (consumed - consumed_then) / elapsed >= FAST_CLIENT:
                self._client_rate = None
            self._sample = None
            return
        if elapsed >= RATE_WINDOW:
            self._client_rate = (consumed - consumed_then) / elapsed
            self._sample = (now, consumed)

    def _run(self) -> None:
        while True:
            item = self._next()
            if item is None:
                break
            data, urgent = item
            if not urgent:
                data = self._cut(data)
            self._put(data)
            self._written(len(data), urgent=urgent)
            if self._failed:
                break
        self._release()

    def _put(self, data: bytes) -> bool:
        """Write one frame to the stream; False (and failed from now on) if the pipe is gone."""
        try:
            self._stream.write(data)
            self._stream.flush()
        except (BrokenPipeError, OSError, ValueError):
            logger.error("writer.failed: the client's pipe is closed")
            self._failed = True
            return False
        return True

    def _measure(self) -> None:
        """Update the client's reading rate once per ``RATE_WINDOW`` (under the lock): bytes
        written while it was behind. When the queue ran empty the estimate only doubles (the
        client may be faster than we saw; an empty queue can also mean that events were
        refused), so a slow client is not taken for a fast one."""
        now = time.monotonic()
        if now - self._window_start < RATE_WINDOW:
            return
        if self._pending > 0:
            self._rate = self._window_bytes / (now - self._window_start)
        else:
            self._rate = max(self._rate or 0.0, LAG_UNKNOWN / LAG_SECONDS) * 2
        self._window_start = now
        self._window_bytes = 0

    def _written(self, size: int, *, urgent: bool) -> None:
        with self._cond:
            self._writing = False
            self._written_total += size
            self._unseen += size
            if urgent:  # answers are not in the notification lane's counts
                return
            self._pending -= size
            self._window_bytes += size
            self._measure()
            if self._dropping and self._pending <= self.limit() // 2:
                self._dropping = False
                logger.warning(
                    "writer.caught_up: %d events (%d bytes) were not sent so far",
                    self.dropped,
                    self.dropped_bytes,
                )
            empty = self._pending <= 0 and bool(self._waiters)
        if empty:
            self._release()

    def _release(self) -> None:
        """Complete the ``drained`` futures (everything written, or the pipe is gone)."""
        with self._cond:
            waiters, self._waiters = self._waiters, []
            if self._failed:
                self._urgent.clear()
                self._normal.clear()
                self._pending = 0
        for future in waiters:
            try:
                future.get_loop().call_soon_threadsafe(_resolve, future)
            except RuntimeError:  # the loop is closed
                pass


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


__all__ = ["LAG_MIN", "PIPE_TARGET", "QueuedWriter", "queue_cap"]
