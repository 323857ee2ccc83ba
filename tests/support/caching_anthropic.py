"""A fake Anthropic Messages server that keeps a prompt cache by the documented rules.

:class:`CachingAnthropic` answers like :class:`~tests.support.fake_anthropic.FakeAnthropic`
(scripted replies or a responder) but works out each request's cache usage first and writes it
into the reply's ``message_start.usage``, as the real API reports it. So a client's caching is
judged on the figures the vendor would bill, over real HTTP with the real SDK.

The rules modelled (Anthropic's prompt-caching documentation):

- the prompt is one sequence of blocks in the order tools → system → messages: every tool
  definition, every system block and every content block of every message is one block (a
  string ``system`` or message ``content`` counts as one text block); the model is part of
  every prefix (each model has its own cache);
- ``cache_control`` on a block is a breakpoint; a top-level ``cache_control`` (automatic mode)
  puts one on the last block. More than 4 in all is a 400 error, like the API's;
- a write stores the prefix up to and including a breakpoint's block, if that prefix has at
  least the model's minimum (1,024 tokens; 2,048 for Haiku models); shorter prefixes are
  simply not cached;
- a read: at each breakpoint the server looks for a stored prefix ending at that block or at
  one of the 19 blocks before it (a window of 20 positions, the breakpoint's own included) and
  takes the longest found; a hit refreshes that entry's TTL;
- TTL ``5m`` (the default) or ``1h`` (``cache_control: {"type": "ephemeral", "ttl": "1h"}``),
  on the clock ``clock`` (``time.monotonic`` unless a test moves time itself);
- usage: ``cache_read_input_tokens`` is the read prefix, ``cache_creation_input_tokens`` the
  tokens from there to the last breakpoint written (split by TTL in ``cache_creation``),
  ``input_tokens`` the rest (everything after the last breakpoint, and prefixes too short to
  cache).

Not modelled: the rule that longer TTLs come first, images and thinking-parameter changes
(only the model keys the cache), and eviction before the TTL. A breakpoint whose prefix lies
inside the read prefix but has no entry of its own gets one without charge.

Tokens are :func:`~tests.support.prompt_tokens.count_tokens` of each block's canonical JSON.
``server.tally`` sums what was reported (:class:`~tests.support.prompt_tokens.CacheTally`).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.support.fake_anthropic import FakeAnthropic, error
from tests.support.fake_server import RecordedRequest, Reply
from tests.support.prompt_tokens import CacheTally, canonical, count_tokens

MAX_BREAKPOINTS = 4
LOOKBACK = 20
"""Positions a read searches at a breakpoint, the breakpoint's own block included."""
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}


class CacheRuleError(ValueError):
    """A request the real API refuses (400 ``invalid_request_error``)."""


@dataclass
class _Block:
    data: bytes
    tokens: int
    ttl: str | None
    """The breakpoint's TTL (``"5m"``/``"1h"``), ``None`` when the block is no breakpoint."""


@dataclass
class CachePlan:
    """What one request reads and writes; applied only when the request succeeds."""

    read: int = 0
    write_5m: int = 0
    write_1h: int = 0
    input: int = 0
    refresh: list[bytes] = field(default_factory=list)
    writes: list[tuple[bytes, str]] = field(default_factory=list)

    @property
    def write(self) -> int:
        return self.write_5m + self.write_1h

    def usage(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input,
            "cache_creation_input_tokens": self.write,
            "cache_read_input_tokens": self.read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.write_5m,
                "ephemeral_1h_input_tokens": self.write_1h,
            },
        }


def _ttl_of(marker: Any) -> str:
    if not isinstance(marker, dict) or marker.get("type") != "ephemeral":
        raise CacheRuleError(f"cache_control must be {{'type': 'ephemeral'}}, got {marker!r}")
    ttl = marker.get("ttl", "5m")
    if ttl not in TTL_SECONDS:
        raise CacheRuleError(f"cache_control.ttl must be '5m' or '1h', got {ttl!r}")
    return str(ttl)


def _block(value: dict[str, Any], role: str, first: bool) -> _Block:
    marker = value.get("cache_control")
    plain = {k: v for k, v in value.items() if k != "cache_control"}
    data = canonical({"role": role, "first": first, "block": plain})
    return _Block(data, count_tokens(canonical(plain)), None if marker is None else _ttl_of(marker))


def prompt_blocks(body: dict[str, Any]) -> list[_Block]:
    """The request as the cache sees it: tools, system, then every message's blocks."""
    blocks = [_block(tool, "tools", i == 0) for i, tool in enumerate(body.get("tools") or [])]
    system = body.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    blocks += [_block(b, "system", i == 0) for i, b in enumerate(system or [])]
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        role = str(message.get("role"))
        blocks += [_block(b, role, i == 0) for i, b in enumerate(content or [])]
    top = body.get("cache_control")
    if top is not None and blocks and blocks[-1].ttl is None:
        blocks[-1].ttl = _ttl_of(top)
    found = sum(1 for b in blocks if b.ttl is not None)
    if found > MAX_BREAKPOINTS:
        raise CacheRuleError(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. "
            f"Found {found}."
        )
    return blocks


def minimum_tokens(model: str) -> int:
    """The shortest cacheable prefix for ``model`` (2,048 for Haiku, else 1,024)."""
    return 2048 if "haiku" in model.lower() else 1024


class PromptCache:
    """The server-side store: prefix hash → expiry, with the read and write rules."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.minimum: Callable[[str], int] = minimum_tokens
        self._entries: dict[bytes, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def _alive(self, key: bytes, now: float) -> bool:
        entry = self._entries.get(key)
        return entry is not None and entry[0] > now

    def plan(self, body: dict[str, Any]) -> CachePlan:
        model = str(body.get("model") or "")
        blocks = prompt_blocks(body)
        digest = hashlib.sha256(canonical({"model": model}))
        keys: list[bytes] = []
        ends: list[int] = []
        total = 0
        for block in blocks:
            digest.update(block.data)
            keys.append(digest.copy().digest())
            total += block.tokens
            ends.append(total)
        breakpoints = [i for i, b in enumerate(blocks) if b.ttl is not None]
        now = self.clock()
        plan = CachePlan()
        read_at = -1
        with self._lock:
            for at in breakpoints:
                for pos in range(at, max(-1, at - LOOKBACK), -1):
                    if self._alive(keys[pos], now):
                        read_at = max(read_at, pos)
                        break
        if read_at >= 0:
            plan.read = ends[read_at]
            plan.refresh.append(keys[read_at])
        minimum = self.minimum(model)
        covered = plan.read
        for at in breakpoints:
            ttl = blocks[at].ttl or "5m"
            if ends[at] < minimum:
                continue
            plan.writes.append((keys[at], ttl))
            if at <= read_at:
                continue
            fresh = ends[at] - covered
            covered = ends[at]
            if ttl == "1h":
                plan.write_1h += fresh
            else:
                plan.write_5m += fresh
        plan.input = total - plan.read - plan.write
        return plan

    def commit(self, plan: CachePlan) -> None:
        now = self.clock()
        with self._lock:
            for key in plan.refresh:
                _, ttl = self._entries[key]
                self._entries[key] = (now + TTL_SECONDS[ttl], ttl)
            for key, ttl in plan.writes:
                old = self._entries.get(key)
                expiry = now + TTL_SECONDS[ttl]
                if old is not None and old[0] > expiry:
                    continue
                self._entries[key] = (expiry, ttl)


def with_usage(reply: Reply, usage: dict[str, Any]) -> Reply:
    """``reply`` with ``usage`` (input and cache fields) in its ``message_start`` event."""
    frames = []
    for frame in reply.events:
        if frame.startswith(b"event: message_start\n"):
            payload = json.loads(frame.split(b"data: ", 1)[1])
            payload["message"]["usage"] = {**payload["message"].get("usage", {}), **usage}
            frame = b"event: message_start\ndata: %s\n\n" % json.dumps(payload).encode()
        frames.append(frame)
    copy = reply.with_headers()
    copy.events = frames
    return copy


class CachingAnthropic(FakeAnthropic):
    """:class:`FakeAnthropic` with a :class:`PromptCache` deciding every reply's usage."""

    def __init__(self, *, responder: Any = None, clock: Callable[[], float] = time.monotonic):
        super().__init__(responder=responder)
        self.cache = PromptCache(clock)
        self.tally = CacheTally(read_ratio=0.1, write_ratio=1.25, write_1h_ratio=2.0)
        self.plans: list[CachePlan] = []

    def reset(self) -> None:
        super().reset()
        self.cache.clear()
        with self._lock:
            self.tally = CacheTally(read_ratio=0.1, write_ratio=1.25, write_1h_ratio=2.0)
            self.plans.clear()

    def _reply_for(self, request: RecordedRequest) -> Reply:
        path = request.path.split("?", 1)[0]
        body = request.json
        if request.method != "POST" or path != self.stream_path or not isinstance(body, dict):
            return super()._reply_for(request)
        try:
            plan = self.cache.plan(body)
        except CacheRuleError as exc:
            with self._lock:
                self.requests.append(request)
            return error(400, str(exc))
        reply = super()._reply_for(request)
        if reply.status != 200 or not reply.events:
            return reply
        self.cache.commit(plan)
        with self._lock:
            self.plans.append(plan)
            self.tally.add(
                input=plan.input,
                cache_read=plan.read,
                cache_write=plan.write,
                write_1h=plan.write_1h,
            )
        return with_usage(reply, plan.usage())


__all__ = [
    "LOOKBACK",
    "MAX_BREAKPOINTS",
    "CachePlan",
    "CacheRuleError",
    "CachingAnthropic",
    "PromptCache",
    "minimum_tokens",
    "prompt_blocks",
    "with_usage",
]
