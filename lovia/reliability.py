"""Run limits, cooperative cancellation and provider retry policy."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeAlias

from lovia.exceptions import BudgetExceeded, LoviaError, ProviderError, RunCancelled
from lovia.messages import Usage

RetryPredicate: TypeAlias = Callable[[BaseException], bool]


@dataclass
class RunBudget:
    """Hard caps for one run; ``None`` means unlimited. Reusing a budget carries counters over."""

    max_input_tokens: int | None = None
    max_output_tokens: int | None = None
    max_total_tokens: int | None = None
    max_tool_calls: int | None = None
    max_seconds: float | None = None
    _started_at: float | None = field(default=None, init=False, repr=False)
    _tool_calls: int = field(default=0, init=False, repr=False)

    def record_tool_call(self) -> None:
        self._tool_calls += 1

    def check(self, usage: Usage) -> None:
        if self._started_at is None:
            self._started_at = time.monotonic()
        if self.max_input_tokens is not None and usage.input_tokens > self.max_input_tokens:
            raise BudgetExceeded(
                f"input tokens {usage.input_tokens} exceeds budget {self.max_input_tokens}"
            )
        if self.max_output_tokens is not None and usage.output_tokens > self.max_output_tokens:
            raise BudgetExceeded(
                f"output tokens {usage.output_tokens} exceeds budget {self.max_output_tokens}"
            )
        if self.max_total_tokens is not None and usage.total_tokens > self.max_total_tokens:
            raise BudgetExceeded(
                f"total tokens {usage.total_tokens} exceeds budget {self.max_total_tokens}"
            )
        if self.max_tool_calls is not None and self._tool_calls > self.max_tool_calls:
            raise BudgetExceeded(
                f"tool call count {self._tool_calls} exceeds budget {self.max_tool_calls}"
            )
        if self.max_seconds is not None:
            elapsed = time.monotonic() - self._started_at
            if elapsed > self.max_seconds:
                raise BudgetExceeded(
                    f"elapsed {elapsed:.1f}s exceeds budget {self.max_seconds:.1f}s"
                )


@dataclass
class CancelToken:
    """Cooperative cancellation: checked at turn starts, between tool calls and retries."""

    _cancelled: bool = field(default=False, init=False, repr=False)
    _reason: str | None = field(default=None, init=False, repr=False)

    @property
    def is_cancelled(self) -> bool:
        return self._cancelled

    @property
    def reason(self) -> str | None:
        return self._reason

    def cancel(self, reason: str | None = None) -> None:
        self._cancelled = True
        self._reason = reason

    def check(self) -> None:
        if self._cancelled:
            raise RunCancelled(self._reason or "run cancelled")


@dataclass(frozen=True)
class RetryNotice:
    """A provider call failed and is tried again after ``delay`` seconds.

    Given to ``RetryPolicy.on_retry`` so a front end can say so while the run waits; the run's
    event stream is not changed by a retry (see ``stream_with_retries``)."""

    attempt: int  # the call that failed, from 1
    max_attempts: int
    delay: float
    error: BaseException

    @property
    def reason(self) -> str:
        """The error's message (without its hint) on one line."""
        return one_line_reason(self.error)


RetryListener: TypeAlias = Callable[[RetryNotice], None]


def one_line_reason(exc: BaseException, limit: int = 300) -> str:
    """An error's message (without its hint) on one line, for a retry warning or notice."""
    text = exc.message if isinstance(exc, LoviaError) else str(exc)
    flat = " ".join((text or type(exc).__name__).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _default_retry_on(exc: BaseException) -> bool:
    return isinstance(exc, ProviderError) and exc.retryable is not False


@dataclass(frozen=True)
class RetryPolicy:
    """How provider calls are retried; ``max_attempts`` counts every call, 1 = no retry."""

    max_attempts: int = 5
    restart_on_partial: bool = True
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    retry_on: RetryPredicate = _default_retry_on
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    # Told of each retry before its wait (a host shows it); it cannot change the run.
    on_retry: RetryListener | None = field(default=None, compare=False)

    def backoff_delay(self, attempt: int) -> float:
        base: float = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        return base * (0.5 + random.random())


__all__ = [
    "CancelToken",
    "RetryListener",
    "RetryNotice",
    "RetryPolicy",
    "RetryPredicate",
    "RunBudget",
]
