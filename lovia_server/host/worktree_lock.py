"""One operation at a time on a worktree run's tree.

The server commits a run's work on its branch when the run ends, in the background, while the
client may already keep, apply or discard it (``run.finished`` has arrived), or send a
follow-up prompt into the same worktree. Two ``git`` commands in one worktree at once fight
over its index, and one that removes the worktree pulls it from under the other. So each of
them holds the worktree's lock, and looks at the record again once it has it: a worktree
landed or discarded meanwhile is not touched. (A follow-up or a resume also waits, before the
lock, for the last run's end to be handled: its commit is its own, not the next run's.)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class WorktreeLocks:
    """A lock per worktree run (by its first ``runId``), gone when nobody holds or waits."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, run_id: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(run_id, (asyncio.Lock(), 0))
        self._locks[run_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[run_id]
            if users == 1:
                del self._locks[run_id]
            else:
                self._locks[run_id] = (lock, users - 1)


__all__ = ["WorktreeLocks"]
