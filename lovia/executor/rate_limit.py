"""Shared rate limits for model calls: a token bucket and a concurrency cap per provider and
model, and a provider wrapper that takes a lease before every call.

The bucket state (:class:`RateBuckets`) is plain data with an injected clock, so one class
serves both the in-process limiter here and the cluster-wide Ray actor
(:mod:`lovia.executor.ray_limiter`). A 429 with ``Retry-After`` pauses the key for every
holder of the limiter, not just the worker that saw it.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from lovia.exceptions import ProviderError
from lovia.providers.base import ModelSettings, Provider
from lovia.transcript import ModelDelta, TranscriptEntry

#: How long to hold a key after a 429 that named no ``Retry-After``.
DEFAULT_PAUSE = 1.0
#: Polling step while a caller waits for a free concurrency slot.
_SLOT_POLL = 0.05


@dataclass(frozen=True)
class RateLimit:
    """Limits for one provider/model key; ``None`` means unlimited."""

    requests_per_minute: float | None = None
    max_concurrent: int | None = None
    burst: int | None = None

    def __post_init__(self) -> None:
        if self.requests_per_minute is not None and self.requests_per_minute <= 0:
            raise ValueError("requests_per_minute must be > 0")
        if self.max_concurrent is not None and self.max_concurrent < 1:
            raise ValueError("max_concurrent must be >= 1")
        if self.burst is not None and self.burst < 1:
            raise ValueError("burst must be >= 1")


@dataclass
class _Bucket:
    limit: RateLimit
    tokens: float
    stamp: float
    blocked_until: float = 0.0
    leases: dict[str, float] = field(default_factory=dict)  # lease -> expiry
    peak: int = 0


class RateBuckets:
    """Token buckets and lease counts per key. ``try_acquire`` never waits: it returns a lease
    or how long to wait before asking again. Leases expire after ``lease_ttl`` seconds, so a
    worker that died holding one does not shrink the pool for good."""

    def __init__(
        self,
        limits: Mapping[str, RateLimit] | None = None,
        *,
        default: RateLimit | None = None,
        lease_ttl: float = 900.0,
    ) -> None:
        self.limits = dict(limits or {})
        self.default = default or RateLimit()
        self.lease_ttl = lease_ttl
        self._buckets: dict[str, _Bucket] = {}
        self._owner: dict[str, str] = {}
        self._ids = itertools.count(1)

    def _bucket(self, key: str, now: float) -> _Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            limit = self.limits.get(key, self.default)
            bucket = _Bucket(limit, tokens=float(_capacity(limit)), stamp=now)
            self._buckets[key] = bucket
        return bucket

    def try_acquire(self, key: str, now: float) -> tuple[str | None, float]:
        bucket = self._bucket(key, now)
        for lease, expiry in list(bucket.leases.items()):
            if expiry <= now:
                del bucket.leases[lease]
                self._owner.pop(lease, None)
        if bucket.blocked_until > now:
            return None, bucket.blocked_until - now
        limit = bucket.limit
        if limit.max_concurrent is not None and len(bucket.leases) >= limit.max_concurrent:
            return None, _SLOT_POLL
        if limit.requests_per_minute is not None:
            rate = limit.requests_per_minute / 60.0
            bucket.tokens = min(
                float(_capacity(limit)), bucket.tokens + (now - bucket.stamp) * rate
            )
            bucket.stamp = now
            if bucket.tokens < 1.0:
                return None, (1.0 - bucket.tokens) / rate
            bucket.tokens -= 1.0
        lease = f"{key}#{next(self._ids)}"
        bucket.leases[lease] = now + self.lease_ttl
        bucket.peak = max(bucket.peak, len(bucket.leases))
        self._owner[lease] = key
        return lease, 0.0

    def release(self, lease: str) -> None:
        key = self._owner.pop(lease, None)
        if key is not None:
            self._buckets[key].leases.pop(lease, None)

    def pause(self, key: str, seconds: float, now: float) -> None:
        bucket = self._bucket(key, now)
        bucket.blocked_until = max(bucket.blocked_until, now + max(seconds, 0.0))

    def peak(self, key: str) -> int:
        """The most leases ``key`` ever had out at once (for tests and reports)."""
        bucket = self._buckets.get(key)
        return bucket.peak if bucket is not None else 0


def _capacity(limit: RateLimit) -> int:
    if limit.burst is not None:
        return limit.burst
    if limit.requests_per_minute is None:
        return 1
    return max(1, int(limit.requests_per_minute // 60))


@runtime_checkable
class RateLimiter(Protocol):
    """What a rate-limited provider needs: leases per key, and a cluster-wide pause."""

    async def acquire(self, key: str) -> str: ...

    async def release(self, lease: str) -> None: ...

    async def pause(self, key: str, seconds: float) -> None: ...


class LocalRateLimiter:
    """The limiter for one process (the in-process executor's jobs share it)."""

    def __init__(self, buckets: RateBuckets) -> None:
        self.buckets = buckets

    async def acquire(self, key: str) -> str:
        while True:
            lease, wait = self.buckets.try_acquire(key, time.monotonic())
            if lease is not None:
                return lease
            await asyncio.sleep(wait)

    async def release(self, lease: str) -> None:
        self.buckets.release(lease)

    async def pause(self, key: str, seconds: float) -> None:
        self.buckets.pause(key, seconds, time.monotonic())


def limit_key(provider: Provider) -> str:
    """The key limits are looked up by: ``"<provider name>:<model>"``."""
    return f"{provider.name}:{provider.model or ''}"


class RateLimitedProvider:
    """A provider that holds a lease from ``limiter`` for the length of every model call.

    Optional capabilities of the wrapped provider (context window, token estimates, vision)
    show through unchanged.
    """

    def __init__(self, inner: Provider, limiter: RateLimiter, *, key: str | None = None) -> None:
        self.inner = inner
        self.limiter = limiter
        self.key = key or limit_key(inner)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model(self) -> str | None:
        return self.inner.model

    @property
    def supports_json_schema(self) -> bool:
        return self.inner.supports_json_schema

    def __getattr__(self, attr: str) -> Any:
        if attr == "inner":  # not set yet (unpickling)
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    async def stream(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelDelta]:
        lease = await self.limiter.acquire(self.key)
        try:
            async for delta in self.inner.stream(
                entries, tools=tools, response_format=response_format, settings=settings
            ):
                yield delta
        except ProviderError as exc:
            if exc.status_code == 429 or exc.retry_after is not None:
                await self.limiter.pause(self.key, exc.retry_after or DEFAULT_PAUSE)
            raise
        finally:
            await self.limiter.release(lease)


__all__ = [
    "DEFAULT_PAUSE",
    "LocalRateLimiter",
    "RateBuckets",
    "RateLimit",
    "RateLimitedProvider",
    "RateLimiter",
    "limit_key",
]
