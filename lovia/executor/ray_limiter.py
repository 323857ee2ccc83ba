"""The cluster-wide rate limiter: one named Ray actor holds the buckets for every worker.

Workers ask the actor for a lease and sleep locally when told to wait, so the actor never
blocks and one slow caller cannot hold up the others.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping
from typing import Any

from lovia.executor.rate_limit import RateBuckets, RateLimit
from lovia.executor.ray_cluster import import_ray

ACTOR_NAME = "lovia-rate-limits"


class LimiterActor:
    """The actor body: :class:`RateBuckets` on the actor's own clock."""

    def __init__(
        self, limits: Mapping[str, RateLimit], default: RateLimit, lease_ttl: float
    ) -> None:
        self.buckets = RateBuckets(limits, default=default, lease_ttl=lease_ttl)

    def try_acquire(self, key: str) -> tuple[str | None, float]:
        return self.buckets.try_acquire(key, time.monotonic())

    def release(self, lease: str) -> None:
        self.buckets.release(lease)

    def pause(self, key: str, seconds: float) -> None:
        self.buckets.pause(key, seconds, time.monotonic())

    def peak(self, key: str) -> int:
        return self.buckets.peak(key)


class RayRateLimiter:
    """A client of the limiter actor; pickles to the workers with the actor handle."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    @classmethod
    def create(
        cls,
        limits: Mapping[str, RateLimit] | None = None,
        *,
        default: RateLimit | None = None,
        lease_ttl: float = 900.0,
        name: str | None = None,
    ) -> RayRateLimiter:
        """The limiter actor called ``name``, created with these limits if it does not exist
        yet. Without a name, a new actor (``lovia-rate-limits-<id>``) for one batch; pass the
        same name from several drivers to share one set of limits. Call after connecting."""
        ray = import_ray()
        actor_cls = ray.remote(num_cpus=0)(LimiterActor)
        chosen = name or f"{ACTOR_NAME}-{uuid.uuid4().hex[:12]}"
        actor = actor_cls.options(name=chosen, get_if_exists=True).remote(
            dict(limits or {}), default or RateLimit(), lease_ttl
        )
        return cls(actor)

    async def acquire(self, key: str) -> str:
        while True:
            lease, wait = await self.actor.try_acquire.remote(key)
            if lease is not None:
                return str(lease)
            await asyncio.sleep(wait)

    async def release(self, lease: str) -> None:
        await self.actor.release.remote(lease)

    async def pause(self, key: str, seconds: float) -> None:
        await self.actor.pause.remote(key, seconds)

    async def peak(self, key: str) -> int:
        result: int = await self.actor.peak.remote(key)
        return result

    def close(self) -> None:
        """Remove the actor (the limits die with the batch that made them)."""
        import_ray().kill(self.actor)


__all__ = ["ACTOR_NAME", "LimiterActor", "RayRateLimiter"]
