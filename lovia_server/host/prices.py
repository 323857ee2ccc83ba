"""What a run cost: token usage times a model's price.

A small built-in table of list prices (USD per million tokens) for common models, which the
``lovia.modelPrices`` setting extends or overrides. A model the table does not know has no
cost (the usage still shows). Prices change: the table is dated, and the setting wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from lovia.messages import Usage

PRICES_AS_OF = "2025-11"


@dataclass(frozen=True)
class Price:
    """USD per million tokens. ``cache_read`` / ``cache_write`` default to ``input``."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def cost(self, usage: Usage) -> float:
        """``input_tokens`` is the whole prompt; cached reads and writes are priced apart."""
        cached = usage.cache_read_tokens + usage.cache_write_tokens
        plain = max(0, usage.input_tokens - cached)
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        total = (
            plain * self.input
            + usage.cache_read_tokens * read
            + usage.cache_write_tokens * write
            + usage.output_tokens * self.output
        )
        return total / 1_000_000


# List prices per million tokens (input, output, cached input read, cache write). OpenAI
# bills no cache writes (they default to input: a write is an ordinary prompt token there);
# Anthropic's writes are the 5-minute TTL's 1.25x input, reads 0.1x.
DEFAULT_PRICES: dict[str, Price] = {
    "openai:gpt-5.1": Price(1.25, 10.0, 0.125),
    "openai:gpt-5.1-codex": Price(1.25, 10.0, 0.125),
    "openai:gpt-5.1-codex-mini": Price(0.25, 2.0, 0.025),
    "openai:gpt-5-codex": Price(1.25, 10.0, 0.125),
    "openai:gpt-5": Price(1.25, 10.0, 0.125),
    "openai:gpt-5-mini": Price(0.25, 2.0, 0.025),
    "openai:gpt-5-nano": Price(0.05, 0.40, 0.005),
    "openai:gpt-4.1": Price(2.0, 8.0, 0.50),
    "openai:gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "openai:gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "openai:gpt-4o": Price(2.50, 10.0, 1.25),
    "openai:gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "openai:o3": Price(2.0, 8.0, 0.50),
    "openai:o4-mini": Price(1.10, 4.40, 0.275),
    "anthropic:claude-opus-4-5": Price(5.0, 25.0, 0.50, 6.25),
    "anthropic:claude-opus-4-1": Price(15.0, 75.0, 1.50, 18.75),
    "anthropic:claude-sonnet-4-5": Price(3.0, 15.0, 0.30, 3.75),
    "anthropic:claude-opus-4": Price(15.0, 75.0, 1.50, 18.75),
    "anthropic:claude-sonnet-4": Price(3.0, 15.0, 0.30, 3.75),
    "anthropic:claude-3-7-sonnet": Price(3.0, 15.0, 0.30, 3.75),
    "anthropic:claude-haiku-4-5": Price(1.0, 5.0, 0.10, 1.25),
    "anthropic:claude-3-5-haiku": Price(0.80, 4.0, 0.08, 1.0),
}


def prices_from_settings(entries: Mapping[str, Any]) -> dict[str, Price]:
    """``lovia.modelPrices`` entries (``input``, ``output``, ``cacheRead``, ``cacheWrite``)."""
    return {
        model: Price(e.input, e.output, e.cacheRead, e.cacheWrite) for model, e in entries.items()
    }


def price_for(
    model: str | None, overrides: dict[str, Price] | None = None, *, long_cache: bool = False
) -> Price | None:
    """The price of ``model`` (``provider:name``): the setting first, then the table; a dated
    name (``claude-sonnet-4-5-20250929``) takes the longest known name it starts with, and a
    provider variant (``openai-responses:gpt-5``) its family's price (``openai:gpt-5``).

    ``long_cache``: Anthropic's 1-hour cache TTL is in use, whose writes cost 2x input (the
    table's are the 5-minute TTL's 1.25x); a ``modelPrices`` entry is taken as it is."""
    if not model:
        return None
    user = overrides or {}
    table = {**DEFAULT_PRICES, **user}
    found = _lookup(model, table)
    if found is None and ":" in model:
        provider, _, name = model.partition(":")
        family = provider.split("-", 1)[0]
        if family != provider:
            found = _lookup(f"{family}:{name}", table)
    if found is None:
        return None
    key, price = found
    if long_cache and key.startswith("anthropic:") and key not in user:
        price = replace(price, cache_write=price.input * 2)
    return price


def _lookup(model: str, table: dict[str, Price]) -> tuple[str, Price] | None:
    if model in table:
        return model, table[model]
    best: str | None = None
    for known in table:
        if model.startswith(known + "-") and (best is None or len(known) > len(best)):
            best = known
    return (best, table[best]) if best is not None else None


__all__ = ["DEFAULT_PRICES", "PRICES_AS_OF", "Price", "price_for", "prices_from_settings"]
