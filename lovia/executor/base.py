"""The executor seam: where a batch of independent jobs runs (this process, or a Ray cluster).

``evaluate()`` and the batch runner hand an executor a list of :class:`Job` values and read
:class:`JobOutcome` values back as they finish. A job is a module-level async function and
its arguments, so it can be pickled to another machine; the executor adds only what it knows
and the job cannot: how many attempts it took and which node ran it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

R = TypeVar("R")


@dataclass(frozen=True)
class Job(Generic[R]):
    """One unit of work: ``await fn(*args)``; ``key`` names it in outcomes and progress."""

    key: str
    fn: Callable[..., Coroutine[Any, Any, R]]
    args: tuple[Any, ...] = ()


@dataclass
class JobOutcome(Generic[R]):
    """How a job ended. ``error`` is set only when the executor could not produce a value:
    the job raised, or (``lost``) its worker died more often than the retry limit allows."""

    key: str
    value: R | None = None
    error: str | None = None
    attempts: int = 1
    node: str | None = None
    lost: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


@runtime_checkable
class Executor(Protocol):
    """Runs jobs and yields their outcomes in completion order.

    Closing the iterator early (``aclose``, or the consumer being cancelled) cancels every
    job that has not finished yet.
    """

    def run(self, jobs: Sequence[Job[R]]) -> AsyncGenerator[JobOutcome[R], None]: ...

    def share(self, value: Any) -> Any:
        """A handle for ``value`` that jobs receive as an argument (large, shared inputs)."""
        ...

    def running(self) -> int:
        """How many jobs are executing right now (for progress displays)."""
        ...


__all__ = ["Executor", "Job", "JobOutcome"]
