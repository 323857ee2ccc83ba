"""stream_with_retries: Retry-After, cancellation mid-stream, resets after partial output."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from lovia.exceptions import ProviderError, RunCancelled
from lovia.reliability import CancelToken, RetryPolicy
from lovia.runtime.model_turn import _StreamReset, stream_with_retries
from lovia.transcript import FinishDelta, InputEntry, ModelDelta, TextDelta, TranscriptEntry


class FlakyProvider:
    """Fails with the queued errors (after ``partial`` text deltas), then answers."""

    name = "flaky"
    model = "m"
    supports_json_schema = False

    def __init__(self, *errors: BaseException, partial: int = 0, answer: int = 3) -> None:
        self.errors = list(errors)
        self.partial = partial
        self.answer = answer
        self.calls = 0
        self.closed = 0

    async def stream(
        self, entries: Sequence[TranscriptEntry], **kw: Any
    ) -> AsyncIterator[ModelDelta]:
        self.calls += 1
        try:
            if self.errors:
                for i in range(self.partial):
                    yield TextDelta(f"p{i}")
                raise self.errors.pop(0)
            for i in range(self.answer):
                yield TextDelta(f"t{i}")
            yield FinishDelta("stop")
        finally:
            self.closed += 1


class Sleeps(list[float]):
    async def __call__(self, delay: float) -> None:
        self.append(delay)


async def collect(provider: FlakyProvider, retry: RetryPolicy | None, **kw: Any) -> list[Any]:
    return [
        d
        async for d in stream_with_retries(
            provider,
            [InputEntry("user", "hi")],
            tools=None,
            response_format=None,
            settings=None,
            retry=retry,
            **kw,
        )
    ]


def rate_limited(after: float | None) -> ProviderError:
    return ProviderError("429", status_code=429, retryable=True, retry_after=after)


async def test_retry_after_raises_the_backoff_delay() -> None:
    sleeps = Sleeps()
    retry = RetryPolicy(max_attempts=3, backoff_base=0.01, sleep=sleeps)
    await collect(FlakyProvider(rate_limited(5.0)), retry)
    assert sleeps == [5.0]


async def test_retry_after_is_capped_at_backoff_max() -> None:
    sleeps = Sleeps()
    retry = RetryPolicy(max_attempts=3, backoff_base=0.0, backoff_max=10.0, sleep=sleeps)
    await collect(FlakyProvider(rate_limited(120.0)), retry)
    assert sleeps == [10.0]


async def test_backoff_alone_without_retry_after() -> None:
    sleeps = Sleeps()
    retry = RetryPolicy(max_attempts=3, backoff_base=0.2, sleep=sleeps)
    await collect(FlakyProvider(rate_limited(None), rate_limited(0.0)), retry)
    assert len(sleeps) == 2
    assert 0.1 <= sleeps[0] <= 0.3 and 0.2 <= sleeps[1] <= 0.6


async def test_partial_output_arms_one_reset_before_the_retry() -> None:
    provider = FlakyProvider(rate_limited(None), partial=2)
    deltas = await collect(provider, RetryPolicy(backoff_base=0.0, sleep=Sleeps()))
    kinds = [type(d).__name__ for d in deltas]
    assert kinds == [
        "TextDelta",
        "TextDelta",
        "_StreamReset",
        "TextDelta",
        "TextDelta",
        "TextDelta",
        "FinishDelta",
    ]
    assert isinstance(deltas[2], _StreamReset) and deltas[2].visible
    assert provider.closed == 2


async def test_cancel_token_mid_stream_closes_the_provider_stream() -> None:
    provider = FlakyProvider(answer=100)
    token = CancelToken()
    seen = 0
    with pytest.raises(RunCancelled, match="stop now"):
        async for _delta in stream_with_retries(
            provider,
            [InputEntry("user", "hi")],
            tools=None,
            response_format=None,
            settings=None,
            retry=RetryPolicy(retry_on=lambda exc: True, sleep=Sleeps()),
            cancel_token=token,
        ):
            seen += 1
            if seen == 2:
                token.cancel("stop now")
    assert seen == 2
    assert provider.calls == 1 and provider.closed == 1


async def test_cancel_token_checked_around_the_retry_sleep() -> None:
    token = CancelToken()

    async def sleep(delay: float) -> None:
        token.cancel()

    with pytest.raises(RunCancelled):
        await collect(
            FlakyProvider(rate_limited(1.0)), RetryPolicy(sleep=sleep), cancel_token=token
        )
