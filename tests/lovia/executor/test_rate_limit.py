"""Token buckets, concurrency leases and the Retry-After pause, and the limited provider."""

from __future__ import annotations

import asyncio
import time

import pytest

from lovia import Agent, Runner
from lovia.exceptions import ProviderError
from lovia.executor.rate_limit import (
    LocalRateLimiter,
    RateBuckets,
    RateLimit,
    RateLimitedProvider,
    limit_key,
)
from lovia.providers import provider_from_string
from lovia.reliability import RetryPolicy
from lovia.testing import ScriptedProvider, text
from tests.support import fake_openai as oai


def test_the_bucket_spends_its_burst_then_waits_for_refill():
    buckets = RateBuckets(default=RateLimit(requests_per_minute=60, burst=2))
    assert buckets.try_acquire("k", 0.0)[0] is not None
    assert buckets.try_acquire("k", 0.0)[0] is not None
    lease, wait = buckets.try_acquire("k", 0.0)
    assert lease is None and wait == pytest.approx(1.0)
    assert buckets.try_acquire("k", 1.0)[0] is not None


def test_the_concurrency_cap_counts_leases_until_released_or_expired():
    buckets = RateBuckets({"a": RateLimit(max_concurrent=1)}, lease_ttl=10)
    first, _ = buckets.try_acquire("a", 0.0)
    assert buckets.try_acquire("a", 0.0)[0] is None
    assert buckets.try_acquire("b", 0.0)[0] is not None  # other keys use the default
    buckets.release(first)
    second, _ = buckets.try_acquire("a", 1.0)
    assert second is not None
    assert buckets.try_acquire("a", 11.5)[0] is not None  # the dead holder's lease expired
    assert buckets.peak("a") == 1


def test_a_pause_holds_every_caller_of_the_key():
    buckets = RateBuckets()
    buckets.pause("k", 2.0, now=10.0)
    lease, wait = buckets.try_acquire("k", 11.0)
    assert lease is None and wait == pytest.approx(1.0)
    assert buckets.try_acquire("k", 12.0)[0] is not None


def test_limits_are_validated():
    with pytest.raises(ValueError):
        RateLimit(max_concurrent=0)
    with pytest.raises(ValueError):
        RateLimit(requests_per_minute=0)


async def test_the_limited_provider_keeps_calls_under_the_cap():
    limiter = LocalRateLimiter(RateBuckets(default=RateLimit(max_concurrent=2)))
    live = peak = 0

    class Slow(ScriptedProvider):
        async def stream(self, entries, **kw):
            nonlocal live, peak
            live += 1
            peak = max(peak, live)
            await asyncio.sleep(0.05)
            live -= 1
            async for delta in super().stream(entries, **kw):
                yield delta

    def agent() -> Agent:
        inner = Slow([text("ok")], record=False)
        return Agent(name="a", model=RateLimitedProvider(inner, limiter))

    results = await asyncio.gather(*(Runner.run(agent(), "hi") for _ in range(6)))
    assert [r.output for r in results] == ["ok"] * 6
    assert peak == 2


async def test_a_429_with_retry_after_pauses_the_key_for_everyone(openai_env):
    openai_env.script(oai.rate_limited(retry_after="1"), oai.text("one"), oai.text("two"))
    limiter = LocalRateLimiter(RateBuckets())
    inner = provider_from_string("openai:fake-model")
    assert RateLimitedProvider(inner, limiter).key == limit_key(inner) == "openai-chat:fake-model"
    retry = RetryPolicy(max_attempts=3, backoff_base=0.01)

    def agent() -> Agent:
        return Agent(name="a", model=RateLimitedProvider(inner, limiter, key="k"), retry=retry)

    first = asyncio.ensure_future(Runner.run(agent(), "hi"))
    while not any(r.method == "POST" for r in openai_env.requests):  # noqa: ASYNC110
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)  # the 429 reaches the first caller, which pauses the key
    started = time.monotonic()
    # A second caller sharing the limiter waits out the same Retry-After window.
    second = await Runner.run(agent(), "hi")
    assert time.monotonic() - started >= 0.8
    assert sorted([second.output, (await first).output]) == ["one", "two"]


async def test_provider_errors_other_than_429_do_not_pause(openai_env):
    openai_env.script(oai.error(400, "bad request"))
    limiter = LocalRateLimiter(RateBuckets())
    agent = Agent(
        name="a",
        model=RateLimitedProvider(provider_from_string("openai:fake-model"), limiter),
        retry=RetryPolicy(max_attempts=1),
    )
    with pytest.raises(ProviderError):
        await Runner.run(agent, "hi")
    assert limiter.buckets.try_acquire("openai:fake-model", time.monotonic())[1] == 0.0
