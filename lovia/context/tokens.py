"""Token accounting: a memoised per-entry estimator and the watermark budget.

Estimates are UTF-8 bytes // 4 (one C-speed encode per entry, so CJK text weighs ~0.75
tokens per character instead of being under-counted 4x), flat costs for images and files,
and a fixed per-entry overhead. ``Compaction`` calibrates them against the provider's real
input-token counts with an EMA ratio kept in its state.
"""

from __future__ import annotations

import json
import logging
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lovia.parts import FilePart, ImagePart, TextPart
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)

logger = logging.getLogger("lovia.context.tokens")

BYTES_PER_TOKEN = 4


def usable_tokens(window: int, reserve_output: int) -> int:
    """Prompt tokens available in ``window`` once ``reserve_output`` is set aside.

    A reserve that does not fit (``reserve_output >= window``) falls back to half the window.
    """
    if reserve_output >= window:
        return max(window // 2, 1)
    return window - reserve_output


def check_watermark(name: str, value: object) -> None:
    """Validate a watermark: a fraction in (0, 1] or an absolute token count >= 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a fraction or a token count")
    if isinstance(value, float):
        if not 0.0 < value <= 1.0:
            raise ValueError(f"{name} as a fraction must be in (0, 1]")
    elif value < 1:
        raise ValueError(f"{name} as a token count must be >= 1")


@dataclass(frozen=True)
class TokenBudget:
    """Watermark math over one context window.

    ``trigger`` (the high watermark) starts a compaction burst; ``target`` (the low one) is
    where the burst stops. Each is a fraction of the usable window (``float``) or an absolute
    token count (``int``). ``target_tokens`` is always below ``trigger_tokens``, so the
    hysteresis survives mixed units and clamping.
    """

    window: int
    reserve_output: int = 16_384
    trigger: int | float = 0.75
    target: int | float = 0.50
    usable: int = field(init=False)
    trigger_tokens: int = field(init=False)
    target_tokens: int = field(init=False)

    def __post_init__(self) -> None:
        if isinstance(self.window, bool) or not isinstance(self.window, int) or self.window < 1:
            raise ValueError("window must be >= 1")
        if (
            isinstance(self.reserve_output, bool)
            or not isinstance(self.reserve_output, int)
            or self.reserve_output < 0
        ):
            raise ValueError("reserve_output must be >= 0")
        check_watermark("trigger", self.trigger)
        check_watermark("target", self.target)
        if type(self.trigger) is type(self.target) and not self.target < self.trigger:
            raise ValueError("target must be below trigger")
        usable = usable_tokens(self.window, self.reserve_output)
        trigger_tokens = self._resolve(self.trigger, usable)
        target_tokens = min(self._resolve(self.target, usable), max(1, trigger_tokens - 1))
        object.__setattr__(self, "usable", usable)
        object.__setattr__(self, "trigger_tokens", trigger_tokens)
        object.__setattr__(self, "target_tokens", target_tokens)

    @staticmethod
    def _resolve(value: int | float, usable: int) -> int:
        if isinstance(value, float):
            return max(1, int(value * usable))
        return max(1, min(value, usable))

    def pressure(self, tokens: int) -> float:
        """How full the usable window is (1.0 = full)."""
        return tokens / self.usable


def _text_tokens(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass")) // BYTES_PER_TOKEN


class TokenCounter:
    """Estimates prompt tokens per entry, memoised by object identity.

    If ``provider`` implements ``estimate_tokens(entries)`` it is asked per entry instead of
    the byte heuristic (any exception falls back to the heuristic). The memo is keyed by
    ``id(entry)`` and guarded by a weak reference, so a recycled id is never trusted.
    """

    def __init__(
        self,
        provider: object | None = None,
        *,
        image_tokens: int = 1_600,
        file_tokens: int = 2_000,
        entry_overhead: int = 8,
        memo_size: int = 8_192,
    ) -> None:
        self.provider = provider
        estimator = getattr(provider, "estimate_tokens", None)
        self._estimator = estimator if callable(estimator) else None
        self.image_tokens = image_tokens
        self.file_tokens = file_tokens
        self.entry_overhead = entry_overhead
        self.memo_size = memo_size
        self._memo: OrderedDict[int, tuple[weakref.ref[Any], int]] = OrderedDict()
        self._tool_memo: OrderedDict[int, tuple[weakref.ref[Any], int]] = OrderedDict()

    # ------------------------------------------------------------------ entries

    def count_entry(self, entry: TranscriptEntry) -> int:
        key = id(entry)
        hit = self._memo.get(key)
        if hit is not None and hit[0]() is entry:
            return hit[1]
        n = self.estimate(entry)
        self._remember(self._memo, entry, n)
        return n

    def count(self, entries: Iterable[TranscriptEntry]) -> int:
        return sum(self.count_entry(e) for e in entries)

    def count_text(self, text: str) -> int:
        return _text_tokens(text) + self.entry_overhead

    def estimate(self, entry: TranscriptEntry) -> int:
        """``count_entry`` without the memo (for callers that keep their own per-entry cache)."""
        if self._estimator is not None:
            try:
                value = self._estimator([entry])
                if isinstance(value, int) and not isinstance(value, bool):
                    return value
            except Exception:
                logger.debug("estimate_tokens failed; using the byte heuristic", exc_info=True)
        return self.heuristic(entry)

    def heuristic(self, entry: TranscriptEntry) -> int:
        """The byte-based estimate for one entry (never consults the provider)."""
        overhead = self.entry_overhead
        if isinstance(entry, ToolResultEntry):
            if entry.parts:
                return overhead + self._parts_tokens(entry.parts)
            return _text_tokens(entry.output) + overhead
        if isinstance(entry, ToolCallEntry):
            return _text_tokens(entry.name + entry.arguments) + overhead
        if isinstance(entry, InputEntry):
            content = entry.content
            if isinstance(content, str):
                return _text_tokens(content) + overhead
            return overhead + self._parts_tokens(content)
        if isinstance(entry, (AssistantTextEntry, ReasoningEntry)):
            return _text_tokens(entry.content) + overhead
        return overhead

    def _parts_tokens(self, parts: Iterable[object]) -> int:
        total = 0
        for part in parts:
            if isinstance(part, TextPart):
                total += _text_tokens(part.text)
            elif isinstance(part, ImagePart):
                total += self.image_tokens
            elif isinstance(part, FilePart):
                total += self.file_tokens
        return total

    # ------------------------------------------------------------------ tools

    def count_tools(self, tools: Sequence[Any]) -> int:
        """Tokens of the tool-schema payload a request carries (additive, never calibrated)."""
        total = 0
        for t in tools:
            key = id(t)
            hit = self._tool_memo.get(key)
            if hit is not None and hit[0]() is t:
                total += hit[1]
                continue
            n = self._tool_tokens(t)
            self._remember(self._tool_memo, t, n)
            total += n
        return total

    def _tool_tokens(self, t: Any) -> int:
        schema_fn = getattr(t, "openai_schema", None)
        if not callable(schema_fn):
            return self.entry_overhead
        try:
            wire = json.dumps(schema_fn(), ensure_ascii=False, separators=(",", ":"))
        except Exception:
            return self.entry_overhead
        return _text_tokens(wire) + self.entry_overhead

    # ------------------------------------------------------------------ memo

    def _remember(
        self, memo: OrderedDict[int, tuple[weakref.ref[Any], int]], obj: Any, n: int
    ) -> None:
        try:
            ref = weakref.ref(obj)
        except TypeError:
            return
        key = id(obj)
        if key in memo:
            memo.move_to_end(key)
        memo[key] = (ref, n)
        if len(memo) > self.memo_size:
            memo.popitem(last=False)


__all__ = ["TokenBudget", "TokenCounter", "check_watermark", "usable_tokens"]
