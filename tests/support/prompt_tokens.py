"""A deterministic stand-in tokenizer and the billing arithmetic of prompt caches.

The caching fakes (``caching_anthropic``, ``caching_openai``) count tokens as a quarter of the
bytes of canonical JSON (sorted keys, no spaces), rounded up: close enough to real tokenizers
on code and prose for cost *ratios*, and the same on every machine.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any


def canonical(value: Any) -> bytes:
    """The bytes a prefix is compared on: key order and whitespace do not matter."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def count_tokens(data: bytes) -> int:
    return math.ceil(len(data) / 4)


@dataclass
class CacheTally:
    """Sums of the usage a caching fake reported, and the bill relative to no caching.

    ``write_1h`` is the part of ``cache_write`` written with the 1-hour TTL (billed at 2×
    rather than 1.25×); OpenAI has no writes, only reads at ``read_ratio``.
    """

    read_ratio: float = 0.1
    write_ratio: float = 1.25
    write_1h_ratio: float = 2.0
    requests: int = 0
    input: int = 0
    cache_read: int = 0
    cache_write: int = 0
    write_1h: int = 0

    def add(
        self, *, input: int, cache_read: int = 0, cache_write: int = 0, write_1h: int = 0
    ) -> None:
        self.requests += 1
        self.input += input
        self.cache_read += cache_read
        self.cache_write += cache_write
        self.write_1h += write_1h

    @property
    def total(self) -> int:
        """Every prompt token, whatever the cache did with it."""
        return self.input + self.cache_read + self.cache_write

    @property
    def billed(self) -> float:
        """Input cost in uncached-token units."""
        write_5m = self.cache_write - self.write_1h
        return (
            self.input
            + self.write_ratio * write_5m
            + self.write_1h_ratio * self.write_1h
            + self.read_ratio * self.cache_read
        )

    @property
    def relative(self) -> float:
        """Billed input relative to the same prompts with no caching (1.0: caching saved nothing)."""
        return self.billed / self.total if self.total else 1.0

    def summary(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "input_tokens": self.input,
            "cache_read_tokens": self.cache_read,
            "cache_write_tokens": self.cache_write,
            "total_tokens": self.total,
            "billed_relative": round(self.relative, 4),
        }


__all__ = ["CacheTally", "canonical", "count_tokens"]
