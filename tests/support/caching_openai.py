"""A fake OpenAI Chat Completions server that caches prompt prefixes by the documented rules.

:class:`CachingOpenAI` answers like :class:`~tests.support.fake_openai.FakeOpenAI` but works
out each request's ``prompt_tokens`` and ``prompt_tokens_details.cached_tokens`` and writes
them into the reply's usage chunk, as the real API reports them.

The rules modelled (OpenAI's prompt-caching guide):

- caching is automatic: the prompt is the tools (and ``response_format``) followed by the
  messages, compared byte for byte on canonical JSON; the model is part of the prefix;
- only prompts of at least 1,024 tokens are cached, and a hit covers the longest stored
  prefix, in steps of 128 tokens from 1,024 on (1,024, 1,152, 1,280 ...);
- after a request its prompt's prefixes are stored; an entry lives ``idle_ttl`` seconds
  (5 minutes) after its last use, or 24 hours with ``prompt_cache_retention: "24h"``;
- routing: a request goes to one of ``shards`` cache machines, chosen by a hash of the first
  256 tokens and the ``prompt_cache_key``. When one routing hash gets more than
  ``overflow_rpm`` requests a minute, the extra requests spill over to the next shards in turn
  and miss the cache there. With the default single shard a lone conversation is never split,
  so the key changes nothing: it matters when many conversations share a prefix (the same
  agent's tools and instructions) under load, and tests set ``shards`` to show that.

Tokens are :func:`~tests.support.prompt_tokens.count_tokens` of the canonical bytes, so a
128-token step is 512 bytes. ``server.tally`` sums what was reported; cached tokens bill at
``read_ratio`` (0.25: gpt-4.1's cached input price over its input price).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_server import RecordedRequest, Reply
from tests.support.prompt_tokens import CacheTally, canonical, count_tokens

MINIMUM = 1024
STEP = 128
BYTES_PER_TOKEN = 4
ROUTING_TOKENS = 256


def prompt_bytes(body: dict[str, Any]) -> bytes:
    """The prompt as the cache compares it: model, tools, response format, then messages."""
    head = {
        "model": body.get("model"),
        "tools": body.get("tools") or [],
        "response_format": body.get("response_format"),
    }
    return canonical(head) + b"".join(canonical(m) for m in body.get("messages") or [])


def _prefix_keys(data: bytes) -> list[tuple[int, bytes]]:
    """``(tokens, hash)`` of every cacheable prefix: 1,024 tokens, then every 128 more."""
    keys = []
    digest = hashlib.sha256()
    done = 0
    tokens = MINIMUM
    while tokens * BYTES_PER_TOKEN <= len(data):
        end = tokens * BYTES_PER_TOKEN
        digest.update(data[done:end])
        done = end
        keys.append((tokens, digest.copy().digest()))
        tokens += STEP
    return keys


@dataclass
class OpenAICachePlan:
    prompt_tokens: int
    cached_tokens: int
    shard: int
    keys: list[tuple[int, bytes]]
    ttl: float


class OpenAIPromptCache:
    """Shards of prefix-hash → expiry, with the routing and lookup rules."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        *,
        shards: int = 1,
        overflow_rpm: int = 15,
        idle_ttl: float = 300.0,
    ) -> None:
        self.clock = clock
        self.shards = shards
        self.overflow_rpm = overflow_rpm
        self.idle_ttl = idle_ttl
        self._entries: list[dict[bytes, float]] = [{} for _ in range(shards)]
        self._recent: dict[bytes, deque[float]] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._entries = [{} for _ in range(self.shards)]
            self._recent.clear()

    def _route(self, data: bytes, key: str | None, now: float) -> int:
        head = data[: ROUTING_TOKENS * BYTES_PER_TOKEN]
        routing = hashlib.sha256(canonical(key) + head).digest()
        recent = self._recent.setdefault(routing, deque())
        while recent and recent[0] <= now - 60.0:
            recent.popleft()
        recent.append(now)
        home = int.from_bytes(routing[:4], "big") % self.shards
        spill = max(0, len(recent) - self.overflow_rpm)
        return (home + spill) % self.shards

    def plan(self, body: dict[str, Any]) -> OpenAICachePlan:
        data = prompt_bytes(body)
        keys = _prefix_keys(data)
        key = body.get("prompt_cache_key")
        ttl = 86_400.0 if body.get("prompt_cache_retention") == "24h" else self.idle_ttl
        now = self.clock()
        with self._lock:
            shard = self._route(data, key if isinstance(key, str) else None, now)
            entries = self._entries[shard]
            cached = 0
            for tokens, digest in reversed(keys):
                expiry = entries.get(digest)
                if expiry is not None and expiry > now:
                    cached = tokens
                    break
        return OpenAICachePlan(count_tokens(data), cached, shard, keys, ttl)

    def commit(self, plan: OpenAICachePlan) -> None:
        now = self.clock()
        with self._lock:
            entries = self._entries[plan.shard]
            for _, digest in plan.keys:
                entries[digest] = max(entries.get(digest, 0.0), now + plan.ttl)


def with_usage(reply: Reply, prompt_tokens: int, cached_tokens: int) -> Reply:
    """``reply`` with the prompt figures in its usage chunk (``completion_tokens`` kept)."""
    frames = []
    for frame in reply.events:
        if frame.startswith(b"data: {") and b'"usage"' in frame:
            payload = json.loads(frame[6:])
            usage = payload.get("usage")
            if isinstance(usage, dict):
                completion = int(usage.get("completion_tokens") or 0)
                payload["usage"] = {
                    **usage,
                    "prompt_tokens": prompt_tokens,
                    "total_tokens": prompt_tokens + completion,
                    "prompt_tokens_details": {"cached_tokens": cached_tokens, "audio_tokens": 0},
                }
                frame = b"data: %s\n\n" % json.dumps(payload).encode()
        frames.append(frame)
    copy = reply.with_headers()
    copy.events = frames
    return copy


class CachingOpenAI(FakeOpenAI):
    """:class:`FakeOpenAI` with an :class:`OpenAIPromptCache` deciding every usage chunk."""

    def __init__(
        self,
        *,
        responder: Any = None,
        clock: Callable[[], float] = time.monotonic,
        shards: int = 1,
        overflow_rpm: int = 15,
        read_ratio: float = 0.25,
    ) -> None:
        super().__init__(responder=responder)
        self.cache = OpenAIPromptCache(clock, shards=shards, overflow_rpm=overflow_rpm)
        self.read_ratio = read_ratio
        self.tally = CacheTally(read_ratio=read_ratio)
        self.plans: list[OpenAICachePlan] = []

    def reset(self) -> None:
        super().reset()
        self.cache.clear()
        with self._lock:
            self.tally = CacheTally(read_ratio=self.read_ratio)
            self.plans.clear()

    def _reply_for(self, request: RecordedRequest) -> Reply:
        path = request.path.split("?", 1)[0]
        body = request.json
        if request.method != "POST" or path != self.stream_path or not isinstance(body, dict):
            return super()._reply_for(request)
        plan = self.cache.plan(body)
        reply = super()._reply_for(request)
        if reply.status != 200 or not reply.events:
            return reply
        self.cache.commit(plan)
        with self._lock:
            self.plans.append(plan)
            self.tally.add(
                input=plan.prompt_tokens - plan.cached_tokens, cache_read=plan.cached_tokens
            )
        return with_usage(reply, plan.prompt_tokens, plan.cached_tokens)


__all__ = [
    "MINIMUM",
    "STEP",
    "CachingOpenAI",
    "OpenAICachePlan",
    "OpenAIPromptCache",
    "prompt_bytes",
    "with_usage",
]
