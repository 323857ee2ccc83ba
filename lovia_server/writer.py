"""A non-blocking stdout writer: frames are queued and written by a background thread.

A client that reads slowly fills the pipe; writing from the event loop would then block every
run. The queue's size in bytes is the backlog the publisher checks before sending deltas, and
``drained()`` lets it wait, without polling, for the moment the client has taken everything.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from typing import BinaryIO

logger = logging.getLogger("lovia_server.writer")


class QueuedWriter:
    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._pending = 0
        self._lock = threading.Lock()
        self._closed = False
        self._failed = False
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._thread = threading.Thread(target=self._run, name="lovia-stdout", daemon=True)
        self._thread.start()

    def backlog(self) -> int:
        """Bytes queued but not yet written to the pipe."""
        return self._pending

    def drained(self) -> asyncio.Future[None] | None:
        """A future that completes once every queued byte is in the pipe; ``None`` if none is
        queued. Call it on the event loop."""
        with self._lock:
            if self._pending <= 0 or self._closed or self._failed:
                return None
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append((future.get_loop(), future))
            return future

    def _wake(self) -> None:
        with self._lock:
            waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            try:
                loop.call_soon_threadsafe(_resolve, future)
            except RuntimeError:  # the loop is closed
                pass

    def write(self, data: bytes) -> None:
        if self._closed or self._failed:
            return
        with self._lock:
            self._pending += len(data)
        self._queue.put(data)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            data = self._queue.get()
            if data is None:
                break
            try:
                self._stream.write(data)
                if self._queue.empty():
                    self._stream.flush()
            except (BrokenPipeError, OSError, ValueError):
                logger.error("writer.failed: the client's pipe is closed")
                self._failed = True
                break
            finally:
                with self._lock:
                    self._pending -= len(data)
                    empty = self._pending <= 0 and bool(self._waiters)
                if empty or self._failed:
                    self._wake()
        try:
            self._stream.flush()
        except Exception:
            pass
        self._wake()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


__all__ = ["QueuedWriter"]
