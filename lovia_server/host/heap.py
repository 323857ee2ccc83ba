"""Freed memory goes back to the system when a run ends (glibc's ``malloc_trim``).

A run loads its conversation from the store, builds every model request from it and drops it
all when it ends: nothing of it stays live. But CPython hands its bigger objects (tool outputs,
the history's texts) to the C allocator, which keeps freed pages in its arenas for reuse, and
a conversation's history is interleaved with objects that outlive the run, so the heap's top is
never free to shrink. The server's resident size then follows the longest conversation it ever
served, though nothing is live (``bench/soak.py``: +22 % over 200 runs). ``malloc_trim(0)``
hands every free page of every arena back (``madvise``), whatever lies above it; once per run
end, off the event loop, it keeps the server near its warmed-up size.

``LOVIA_HEAP_TRIM=0`` in the server's environment turns it off (to measure); elsewhere than
glibc there is nothing to call and nothing happens.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import os
from collections.abc import Callable

logger = logging.getLogger("lovia_server.host.heap")


def _glibc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None (musl, macOS, Windows)."""
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


class HeapTrimmer:
    """Trims the C heap after each run ends: one trim at a time, in a worker thread, and one
    more when runs ended while it worked (they freed their memory after it looked)."""

    def __init__(self, *, enabled: bool | None = None) -> None:
        if enabled is None:
            enabled = os.environ.get("LOVIA_HEAP_TRIM", "1").strip() not in ("0", "false", "no")
        self._trim = _glibc_trim() if enabled else None
        self.trims = 0
        self._task: asyncio.Task[None] | None = None
        self._again = False

    @property
    def active(self) -> bool:
        return self._trim is not None

    def run_ended(self) -> None:
        """A run dropped its conversation: give the freed pages back soon."""
        if self._trim is None:
            return
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.get_running_loop().create_task(self._work())

    async def _work(self) -> None:
        trim = self._trim
        assert trim is not None
        while True:
            self._again = False
            try:
                await asyncio.to_thread(trim, 0)
            except Exception:  # pragma: no cover - a libc that refuses: keep serving
                logger.debug("heap.trim_failed", exc_info=True)
                return
            self.trims += 1
            if not self._again:
                return

    async def idle(self) -> None:
        """Until no trim is running (tests, shutdown)."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)


__all__ = ["HeapTrimmer"]
