"""The in-process executor: jobs run as asyncio tasks in this event loop (today's behaviour)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncGenerator, Sequence
from typing import Any, TypeVar

from lovia.executor.base import Job, JobOutcome

R = TypeVar("R")


class InProcessExecutor:
    """At most ``concurrency`` jobs at a time in the running event loop; no retries (a job
    that raises is reported with its error, there is no worker that could die)."""

    def __init__(self, concurrency: int = 4) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.concurrency = concurrency
        self._running = 0

    def share(self, value: Any) -> Any:
        return value

    def running(self) -> int:
        return self._running

    async def run(self, jobs: Sequence[Job[R]]) -> AsyncGenerator[JobOutcome[R], None]:
        gate = asyncio.Semaphore(self.concurrency)
        node = f"local:{socket.gethostname()}:{os.getpid()}"

        async def one(job: Job[R]) -> JobOutcome[R]:
            async with gate:
                self._running += 1
                try:
                    value = await job.fn(*job.args)
                except Exception as exc:
                    return JobOutcome(job.key, error=f"{type(exc).__name__}: {exc}", node=node)
                finally:
                    self._running -= 1
            return JobOutcome(job.key, value=value, node=node)

        tasks = [asyncio.ensure_future(one(job)) for job in jobs]
        try:
            for next_done in asyncio.as_completed(tasks):
                yield await next_done
        finally:
            for task in tasks:
                task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.gather(*tasks, return_exceptions=True)


__all__ = ["InProcessExecutor"]
