"""Freed memory goes back to the system when a run ends, so the server's size follows what is
live, not the longest conversation it ever served.

A run loads its conversation from the store, builds every model request from it and drops it
all when it ends: nothing of it stays live (``bench/soak.py`` counts the objects). But glibc
hands freed memory back by itself only from the top of its heaps, and a run's big strings (5-50
KB tool outputs, the conversation's rows) sit below objects that outlive the run. So when a run
ends the server calls glibc's ``malloc_trim(0)``, off the event loop, which gives every free
page of every glibc arena back (``madvise``). CPython's own small-object arenas need no help:
they are unmapped once empty, and what a run leaves in them is flat over a day.

Nothing changes at start-up (no other allocator, no interpreter switch). ``LOVIA_HEAP_TRIM=0``
in the server's environment turns trimming off (to measure). Elsewhere than Linux with glibc
there is nothing to call and nothing happens.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable

logger = logging.getLogger("lovia_server.host.heap")


def enabled() -> bool:
    return os.environ.get("LOVIA_HEAP_TRIM", "1").strip().lower() not in ("0", "false", "no")


def _glibc() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError):  # musl: no such name
        return False


def _glibc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None (musl, macOS, Windows)."""
    if not _glibc():
        return None
    import ctypes
    import ctypes.util

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

    def __init__(self, *, trim: bool | None = None) -> None:
        self._trim = _glibc_trim() if (enabled() if trim is None else trim) else None
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


__all__ = ["HeapTrimmer", "enabled"]
