"""Freed memory goes back to the system when a run ends, so the server's size follows what is
live, not the longest conversation it ever served.

A run loads its conversation from the store, builds every model request from it and drops it
all when it ends: nothing of it stays live (``bench/soak.py`` counts the objects). But freed
memory is not handed back by itself. CPython keeps small objects in 1 MiB arenas of its own
allocator (pymalloc), which go back only when every object in them is gone, and a run's
history is interleaved with objects that outlive it (caches, the next run's state); bigger
objects go to glibc's heap, which gives back only its top. The server then grew with the
conversations' length (``bench/soak.py``, 200 runs in three growing conversations: +22 %
after the warm-up, and still rising).

So the stdio server runs with ``PYTHONMALLOC=malloc`` (every object on glibc's heap: a free
page anywhere in it can be given back) — it starts its interpreter again with it once, at
start-up, before any import — and calls ``malloc_trim(0)`` when a run ends, off the event
loop, which hands every free page of every glibc arena back (``madvise``). The variable is
taken out of the server's environment again: commands the agent runs never see it.

``LOVIA_HEAP_TRIM=0`` in the server's environment turns both off (to measure). Elsewhere than
Linux with glibc there is nothing to call and nothing happens.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable, Sequence

logger = logging.getLogger("lovia_server.host.heap")


_MARK = "LOVIA_SYSTEM_MALLOC"
"""Set for the interpreter started again with ``PYTHONMALLOC=malloc`` (and removed by it)."""


def enabled() -> bool:
    return os.environ.get("LOVIA_HEAP_TRIM", "1").strip().lower() not in ("0", "false", "no")


def _glibc() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return os.confstr("CS_GNU_LIBC_VERSION") is not None
    except (ValueError, OSError):  # musl: no such name
        return False


def use_system_malloc(argv: Sequence[str] | None = None) -> None:
    """Start this interpreter again with ``PYTHONMALLOC=malloc`` (same process id, same
    descriptors) unless it runs with it already or the user chose an allocator; in the new
    interpreter, take the variable out of the environment again (children keep the user's)."""
    if os.environ.get(_MARK) == "1":
        del os.environ[_MARK]
        if os.environ.get("PYTHONMALLOC") == "malloc":
            del os.environ["PYTHONMALLOC"]
        return
    if "PYTHONMALLOC" in os.environ or not enabled() or not _glibc():
        return
    args = list(argv if argv is not None else getattr(sys, "orig_argv", []))
    if not args or not sys.executable:
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    env = {**os.environ, "PYTHONMALLOC": "malloc", _MARK: "1"}
    try:
        os.execve(sys.executable, args, env)
    except OSError:  # pragma: no cover - cannot start again: go on with pymalloc
        logger.debug("heap.reexec_failed", exc_info=True)


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


__all__ = ["HeapTrimmer", "enabled", "use_system_malloc"]
