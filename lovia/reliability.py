"""Run limits, cooperative cancellation and provider retry policy."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeAlias

from lovia.exceptions import BudgetExceeded, ProviderError, RunCancelled
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

    def backoff_delay(self, attempt: int) -> float:
        base: float = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        return base * (0.5 + random.random())


__all__ = ["CancelToken", "RetryPolicy", "RetryPredicate", "RunBudget"]
