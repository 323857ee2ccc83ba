"""Compaction stages: each records new sticky decisions in ``CompactionState``.

Stages plan, they never transform a view: ``render_view`` turns the decisions into the view.
They are ordered cheapest first (offload -> clear -> summarise) and stop as soon as the
running estimate is at or below the budget's target. Decisions are never undone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from lovia.context.render import (
    clear_marker,
    offload_marker,
    render_entries,
    safe_cuts_from,
)
from lovia.context.state import (
    CompactionState,
    OffloadRecord,
    SummaryState,
    fingerprint,
    result_digest,
    unique_result_ids,
)
from lovia.context.tokens import TokenBudget, TokenCounter, usable_tokens
from lovia.providers.base import context_window
from lovia.transcript import ToolResultEntry, TranscriptEntry

if TYPE_CHECKING:
    from lovia.context.policy import CompactionRequest
    from lovia.context.store import ResultStore
    from lovia.context.summarizer import Summarizer

logger = logging.getLogger("lovia.context.stages")


@dataclass
class StageContext:
    """Everything a stage may read; ``state`` is the one thing it may change."""

    request: CompactionRequest
    state: CompactionState
    counter: TokenCounter
    budget: TokenBudget
    current_tokens: int
    protected_from: int
    aggressive: bool
    store: ResultStore | None = None
    model_window: int | None = None
    recall: bool = True
    # Optional indexes a caller that tracks the body incrementally can hand over, so a stage
    # does not have to rescan the whole body (each is recomputed from ``body`` when absent).
    result_counts: Mapping[str, int] | None = None
    """Number of tool results per call id in the body."""
    called: Container[str] | None = None
    """Call ids that appear on some tool call in the body."""
    prefix_fingerprint: Callable[[int], str] | None = None
    """``fingerprint(body[:k])`` for a growing ``k``."""
    manual: bool = False
    """The user asked for this compaction (``/compact``): no saving threshold, no breaker."""

    def calibrated(self, raw: int) -> int:
        return int(raw * self.state.ratio)

    def fingerprint(self, body: Sequence[TranscriptEntry], covered: int) -> str:
        if self.prefix_fingerprint is not None:
            return self.prefix_fingerprint(covered)
        return fingerprint(body[:covered])


@runtime_checkable
class Stage(Protocol):
    """One compaction step. ``plan`` returns True iff it recorded a new decision.

    It must not mutate ``body``, must never undo a decision, and should log and return False
    rather than raise.
    """

    @property
    def name(self) -> str: ...

    async def plan(self, body: Sequence[TranscriptEntry], ctx: StageContext) -> bool: ...


def _covered(state: CompactionState, body_len: int) -> int:
    summary = state.summary
    if summary is not None and 0 < summary.covered <= body_len:
        return summary.covered
    return 0


def _result_indices(body: Sequence[TranscriptEntry], ctx: StageContext) -> list[int]:
    """Body indices of results stages may decide about (unique call ids), oldest first."""
    counts = ctx.result_counts
    unique: Container[str]
    if counts is None:
        unique = unique_result_ids(body)
    else:
        unique = (
            {cid for cid, n in counts.items() if n == 1} if len(counts) < 64 else _Unique(counts)
        )
    out: list[int] = []
    for i in range(_covered(ctx.state, len(body)), len(body)):
        e = body[i]
        if isinstance(e, ToolResultEntry) and e.call_id in unique:
            out.append(i)
    return out


class _Unique:
    """``call_id in _Unique(counts)``: carried by exactly one result (no set is built)."""

    __slots__ = ("counts",)

    def __init__(self, counts: Mapping[str, int]) -> None:
        self.counts = counts

    def __contains__(self, call_id: object) -> bool:
        return isinstance(call_id, str) and self.counts.get(call_id, 0) == 1


def _oversized(entry: TranscriptEntry, ctx: StageContext) -> bool:
    """A single result bigger than the target loses tail protection on the aggressive path."""
    return ctx.calibrated(ctx.counter.count_entry(entry)) > ctx.budget.target_tokens


def _non_negative(name: str, value: int) -> None:
    if value < 0:
        raise ValueError(f"{name} must be >= 0")


class OffloadToolResults:
    """Replace big tool results with a preview marker; archive the full output in the store.

    Without a store ``recall_tool_result`` falls back to the transcript, which always keeps
    the full output.
    """

    def __init__(self, *, min_chars: int = 4_000, keep_last: int = 2, preview_chars: int = 400):
        if min_chars < 1:
            raise ValueError("min_chars must be >= 1")
        _non_negative("keep_last", keep_last)
        _non_negative("preview_chars", preview_chars)
        self.min_chars = min_chars
        self.keep_last = keep_last
        self.preview_chars = preview_chars

    @property
    def name(self) -> str:
        return "offload"

    async def plan(self, body: Sequence[TranscriptEntry], ctx: StageContext) -> bool:
        state, counter = ctx.state, ctx.counter
        target = ctx.budget.target_tokens
        tokens = ctx.current_tokens
        indices = _result_indices(body, ctx)
        first_kept = len(indices) - self.keep_last
        decided = False
        for pos, i in enumerate(indices):
            if tokens <= target:
                break
            entry = body[i]
            assert isinstance(entry, ToolResultEntry)
            if state.decided(entry.call_id) or len(entry.output) < self.min_chars:
                continue
            protected = pos >= first_kept or i >= ctx.protected_from
            if protected and not (ctx.aggressive and _oversized(entry, ctx)):
                continue
            digest = result_digest(entry.output)
            if ctx.store is not None:
                try:
                    await ctx.store.put(digest, entry.output)
                except Exception:
                    logger.warning(
                        "offload.store_failed: call_id=%s; keeping the marker, recall falls "
                        "back to the transcript",
                        entry.call_id,
                        exc_info=True,
                    )
            record = OffloadRecord(
                preview=entry.output[: self.preview_chars], chars=len(entry.output), digest=digest
            )
            state.offloaded[entry.call_id] = record
            marker = offload_marker(record, recall=ctx.recall)
            saving = max(0, counter.count_entry(entry) - counter.count_text(marker))
            tokens -= ctx.calibrated(saving)
            decided = True
        return decided


class ClearToolResults:
    """Replace older tool results with a one-line recall marker."""

    def __init__(
        self,
        *,
        keep_last: int = 3,
        min_chars: int = 200,
        clear_at_least_tokens: int | None = None,
    ):
        _non_negative("keep_last", keep_last)
        _non_negative("min_chars", min_chars)
        self.keep_last = keep_last
        self.min_chars = min_chars
        self.clear_at_least_tokens = clear_at_least_tokens

    @property
    def name(self) -> str:
        return "clear"

    async def plan(self, body: Sequence[TranscriptEntry], ctx: StageContext) -> bool:
        state, counter = ctx.state, ctx.counter
        keep_last = 1 if ctx.aggressive else self.keep_last
        min_chars = 0 if ctx.aggressive else self.min_chars
        target = ctx.budget.target_tokens
        at_least = self.clear_at_least_tokens
        tokens = ctx.current_tokens
        freed = 0
        indices = _result_indices(body, ctx)
        first_kept = len(indices) - keep_last
        decided = False
        for pos, i in enumerate(indices):
            if tokens <= target and (at_least is None or freed >= at_least):
                break
            entry = body[i]
            assert isinstance(entry, ToolResultEntry)
            if state.decided(entry.call_id):
                continue
            if len(entry.output) <= min_chars and not entry.parts:
                continue
            protected = pos >= first_kept or i >= ctx.protected_from
            if protected and not (ctx.aggressive and _oversized(entry, ctx)):
                continue
            state.cleared.add(entry.call_id)
            marker = clear_marker(entry.call_id, recall=ctx.recall)
            saving = ctx.calibrated(max(0, counter.count_entry(entry) - counter.count_text(marker)))
            tokens -= saving
            freed += saving
            decided = True
        return decided


class SummarizeHistory:
    """Fold the older, unprotected part of the body into a running LLM summary.

    Skips (proactively) when the projected saving is under ``min_savings_ratio`` of the
    current prompt; after ``max_failures`` consecutive failures only the reactive
    (overflow) path still tries, and a success closes the breaker again.
    """

    def __init__(
        self,
        *,
        summarizer: Summarizer | None = None,
        min_savings_ratio: float = 0.10,
        max_failures: int = 3,
        max_summary_chars: int | None = 16_000,
    ):
        if not 0 <= min_savings_ratio < 1:
            raise ValueError("min_savings_ratio must be in [0, 1)")
        if max_failures < 1:
            raise ValueError("max_failures must be >= 1")
        if max_summary_chars is not None and max_summary_chars < 1:
            raise ValueError("max_summary_chars must be >= 1 (or None)")
        if summarizer is None:
            from lovia.context.summarizer import LLMSummarizer

            summarizer = LLMSummarizer()
        self.summarizer: Summarizer = summarizer
        self.min_savings_ratio = min_savings_ratio
        self.max_failures = max_failures
        self.max_summary_chars = max_summary_chars

    @property
    def name(self) -> str:
        return "summary"

    def _chunk_cap(self, ctx: StageContext) -> int:
        usable = ctx.budget.usable
        windows = (
            ctx.model_window,
            context_window(getattr(self.summarizer, "provider", None)),
        )
        for w in windows:
            if w:
                usable = min(usable, usable_tokens(w, ctx.budget.reserve_output))
        return max(1, usable // 2)

    async def plan(self, body: Sequence[TranscriptEntry], ctx: StageContext) -> bool:
        state, counter = ctx.state, ctx.counter
        if state.summary_failures >= self.max_failures and not (ctx.aggressive or ctx.manual):
            return False
        prior = state.summary
        prior_covered = _covered(state, len(body))
        # pair-safety of cuts at or above prior_covered (safe[k] is for body index offset+k)
        safe = safe_cuts_from(body, prior_covered, called=ctx.called)
        end_of_span = min(ctx.protected_from, len(body))
        while end_of_span > prior_covered and not safe[end_of_span - prior_covered]:
            end_of_span -= 1
        if end_of_span <= prior_covered:
            return False
        rendered = render_entries(body[prior_covered:end_of_span], state, recall=ctx.recall)
        costs = [counter.count_entry(e) for e in rendered]
        if not ctx.aggressive and not ctx.manual:
            growth = max(256, counter.count_text(prior.text) if prior is not None else 512)
            projected = ctx.calibrated(sum(costs)) - growth
            if projected < self.min_savings_ratio * ctx.current_tokens:
                return False
        cap = self._chunk_cap(ctx)
        running = prior.text if prior is not None else None
        folded = False
        start = 0
        n = len(rendered)
        while start < n:
            end = self._chunk_end(costs, safe, start, cap, ctx)
            try:
                text = await self.summarizer.summarize(
                    rendered[start:end], req=ctx.request, prior_summary=running
                )
                if not isinstance(text, str) or not text.strip():
                    raise ValueError("summarizer returned empty text")
                if self.max_summary_chars is not None and len(text) > self.max_summary_chars:
                    raise ValueError(
                        f"summary has {len(text)} chars, over max_summary_chars="
                        f"{self.max_summary_chars}"
                    )
            except Exception as exc:
                state.summary_failures += 1
                logger.warning(
                    "summary.failed: %s: %s (consecutive failures: %d)",
                    type(exc).__name__,
                    exc,
                    state.summary_failures,
                )
                return folded
            covered = prior_covered + end
            state.summary = SummaryState(text, covered, ctx.fingerprint(body, covered))
            state.summary_failures = 0
            running = text
            folded = True
            start = end
        return folded

    @staticmethod
    def _chunk_end(
        costs: list[int],
        safe: list[bool],
        start: int,
        cap: int,
        ctx: StageContext,
    ) -> int:
        """End (exclusive, span-relative) of the chunk starting at ``start``; always pair-safe."""
        acc = 0
        best: int | None = None
        for k in range(start, len(costs)):
            acc += costs[k]
            end = k + 1
            if not safe[end]:
                continue
            if ctx.calibrated(acc) <= cap:
                best = end
            else:
                return best if best is not None else end
        return best if best is not None else len(costs)


__all__ = [
    "ClearToolResults",
    "OffloadToolResults",
    "Stage",
    "StageContext",
    "SummarizeHistory",
]
