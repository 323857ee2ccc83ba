"""``Compaction``: the default context policy (a sticky, staged, watermark-driven pipeline).

Per call the policy (1) brings its sticky ``CompactionState`` up to date with the transcript,
(2) estimates the prompt the view would make, and (3) only when that crosses the high
watermark runs its stages (offload -> clear -> summarise) until the estimate is at or below
the low watermark. Decisions are sticky and monotonic; the view is always
``render_view(transcript, state)``.

Cost model. The loop calls ``compact`` before every model turn, so the common case — below the
watermark — must not do work proportional to the transcript: a per-run
:class:`~lovia.context.compaction_track.CompactionTrack` mirrors the transcript incrementally
(see that module for how, and for the invariants the policy relies on). Work proportional to
the transcript happens only in a compaction burst and on a rebuild (new run, resume, a
caller-rewritten transcript).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lovia.context.compaction_track import CompactionTrack
from lovia.context.policy import CompactionRequest, ContextResult
from lovia.context.render import (
    RECALL_TOOL_NAME,
    protected_tail_start,
)
from lovia.context.stages import (
    ClearToolResults,
    OffloadToolResults,
    Stage,
    StageContext,
    SummarizeHistory,
)
from lovia.context.state import (
    RATIO_MAX,
    RATIO_MIN,
    SCHEMA_VERSION,
    SCRATCH_KEY,
    CompactionState,
    plausible_window,
    window_key,
)
from lovia.context.tokens import TokenBudget, TokenCounter, check_watermark

if TYPE_CHECKING:
    from lovia.context.store import ResultStore
    from lovia.context.summarizer import Summarizer
    from lovia.tools.base import Tool
    from lovia.transcript import TranscriptEntry

logger = logging.getLogger("lovia.context.compaction")

_MAX_TRACKS = 32
_MAX_SESSIONS = 256


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _with_target(budget: TokenBudget, target_tokens: int) -> TokenBudget:
    """``budget`` with a lower absolute target (the reactive path's harder squeeze)."""
    target_tokens = max(1, target_tokens)
    if target_tokens >= budget.target_tokens:
        return budget
    return TokenBudget(
        budget.window, budget.reserve_output, trigger=budget.trigger_tokens, target=target_tokens
    )


class Compaction:
    """The default context policy. See ``docs/context.md``.

    ``compact_at`` / ``compact_to`` are the high / low watermarks, each a fraction of the
    usable window (``float``) or absolute tokens (``int``). ``context_window=None`` means
    "ask the provider" (and makes the runner probe it once per run); with no window known,
    proactive compaction is off and only the reactive (overflow) path compacts.
    """

    name = "compaction"

    def __init__(
        self,
        *,
        context_window: int | None = None,
        compact_at: int | float = 0.75,
        compact_to: int | float = 0.50,
        keep_recent_tokens: int | None = None,
        reserve_output_tokens: int = 16_384,
        stages: Sequence[Stage] | None = None,
        summarizer: Summarizer | None = None,
        image_tokens: int = 1_600,
        store: ResultStore | None = None,
    ) -> None:
        if context_window is not None and (
            isinstance(context_window, bool)
            or not isinstance(context_window, int)
            or context_window < 1
        ):
            raise ValueError("context_window must be >= 1")
        if reserve_output_tokens < 0:
            raise ValueError("reserve_output_tokens must be >= 0")
        check_watermark("compact_at", compact_at)
        check_watermark("compact_to", compact_to)
        if type(compact_at) is type(compact_to) and not compact_to < compact_at:
            raise ValueError("compact_to must be below compact_at")
        if keep_recent_tokens is not None and keep_recent_tokens < 1:
            raise ValueError("keep_recent_tokens must be >= 1")
        self.context_window = context_window
        self.compact_at = compact_at
        self.compact_to = compact_to
        self.keep_recent_tokens = keep_recent_tokens
        self.reserve_output_tokens = reserve_output_tokens
        self.summarizer = summarizer
        self.image_tokens = image_tokens
        self.store = store
        self.stages: list[Stage] = (
            list(stages)
            if stages is not None
            else [
                OffloadToolResults(),
                ClearToolResults(),
                SummarizeHistory(summarizer=summarizer),
            ]
        )
        self._counter: tuple[object, TokenCounter] | None = None
        self._window_fn: Callable[[], object] | None = None
        self._tracks: dict[int, CompactionTrack] = {}
        self._sessions: OrderedDict[str, CompactionState] = OrderedDict()
        self._budgets: dict[tuple[Any, ...], TokenBudget] = {}
        self._last_budget: TokenBudget | None = None

    def __repr__(self) -> str:
        return (
            f"Compaction(context_window={self.context_window!r}, compact_at={self.compact_at!r}, "
            f"compact_to={self.compact_to!r})"
        )

    # ------------------------------------------------------------------ public surface

    def tools(self) -> list[Tool]:
        from lovia.tools.recall import make_recall_tool

        return [make_recall_tool(self.store)]

    def passthrough(
        self, provider: object, scratch: Mapping[str, Any], session_id: str | None
    ) -> bool:
        """Whether ``compact`` would hand the transcript back untouched without reading it.

        True when there is no window to budget against and no sticky state to replay. The run
        loop asks before building a request, so an idle policy costs nothing per turn (the
        overflow path still calls ``compact``); the skipped calls would only have updated the
        token accounting. Always False for subclasses that override ``compact``, so they see
        every call.
        """
        if type(self).compact is not Compaction.compact:
            return False
        cached = self._counter
        if cached is None or cached[0] is not provider:
            self._counter_for(provider)
        return (
            self._base_window() is None
            and SCRATCH_KEY not in scratch
            and (session_id is None or session_id not in self._sessions)
        )

    def session_state(self, session_id: str) -> CompactionState | None:
        """A copy of the sticky state cached in-process for ``session_id`` (if any)."""
        state = self._sessions.get(session_id)
        return state.copy() if state is not None else None

    def forget_session(self, session_id: str) -> None:
        """Drop the in-process cache for ``session_id`` (e.g. after clearing the session)."""
        self._sessions.pop(session_id, None)

    # ------------------------------------------------------------------ internals

    def _counter_for(self, provider: object) -> TokenCounter:
        cached = self._counter
        if cached is not None and cached[0] is provider:
            return cached[1]
        counter = TokenCounter(provider, image_tokens=self.image_tokens)
        self._counter = (provider, counter)
        fn = getattr(provider, "context_window", None)
        self._window_fn = fn if callable(fn) else None
        return counter

    def _budget(self, window: int) -> TokenBudget:
        last = self._last_budget
        if (
            last is not None
            and last.window == window
            and last.reserve_output == self.reserve_output_tokens
            and last.trigger == self.compact_at
            and last.target == self.compact_to
        ):
            return last
        key = (window, self.reserve_output_tokens, self.compact_at, self.compact_to)
        budget = self._budgets.get(key)
        if budget is None:
            if len(self._budgets) > 64:
                self._budgets.clear()
            budget = TokenBudget(
                window, self.reserve_output_tokens, trigger=self.compact_at, target=self.compact_to
            )
            self._budgets[key] = budget
        self._last_budget = budget
        return budget

    def _track_for(self, req: CompactionRequest, counter: TokenCounter) -> CompactionTrack:
        scratch = req.scratch
        track = self._tracks.get(id(scratch))
        if (
            track is not None
            and track.scratch is scratch
            and scratch.get(SCRATCH_KEY) is track.saved
        ):
            if track.counter is not counter:
                same_costs = track.counter._estimator is None and counter._estimator is None
                track.counter = counter
                if not same_costs:
                    track.build(req.entries)
                    return track
            track.sync(req.entries)
            return track
        track = CompactionTrack(scratch, self._initial_state(req), counter, req.session_id)
        track.build(req.entries)
        tracks = self._tracks
        tracks.pop(id(scratch), None)
        if req.session_id is not None:
            # a new run on a session supersedes its earlier runs: release their transcripts
            # (keeping the newest one, in case two runs on a session overlap)
            same = [k for k, t in tracks.items() if t.session_id == req.session_id]
            for key in same[:-1]:
                del tracks[key]
        tracks[id(scratch)] = track
        while len(tracks) > _MAX_TRACKS:
            del tracks[next(iter(tracks))]
        return track

    def _initial_state(self, req: CompactionRequest) -> CompactionState:
        raw = req.scratch.get(SCRATCH_KEY)
        if isinstance(raw, dict) and raw.get("version") == SCHEMA_VERSION:
            return CompactionState.from_dict(raw)
        cached = self._sessions.get(req.session_id) if req.session_id is not None else None
        if cached is not None:
            return cached.copy()
        return CompactionState()

    def _remember_session(self, session_id: str, state: CompactionState) -> None:
        sessions = self._sessions
        if sessions.get(session_id) is state:
            return
        sessions[session_id] = state
        sessions.move_to_end(session_id)
        while len(sessions) > _MAX_SESSIONS:
            sessions.popitem(last=False)

    def _base_window(self) -> int | None:
        """The configured window, else the provider's own (``context_window()``)."""
        window = self.context_window
        if window is None:
            fn = self._window_fn
            if fn is not None:
                try:
                    value = fn()
                except Exception:
                    logger.debug("provider.context_window() failed", exc_info=True)
                    value = None
                if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
                    window = value
        return window

    def _window(
        self, req: CompactionRequest, track: CompactionTrack, window: int | None
    ) -> int | None:
        """``window`` capped by the learned (endpoint-reported) window, if any."""
        learned = track.state.learned_windows
        reported = req.reported_window
        if reported is None and not learned:
            return window
        key = window_key(req.provider, req.model)
        if plausible_window(reported) and learned.get(key) != reported:
            assert reported is not None
            learned[key] = reported
            track.dirty = True
        known = learned.get(key)
        if known is not None:
            window = known if window is None else min(window, known)
        return window

    # ------------------------------------------------------------------ the policy

    async def compact(self, req: CompactionRequest) -> ContextResult:
        provider = req.provider
        cached = self._counter
        counter = (
            cached[1]
            if cached is not None and cached[0] is provider
            else self._counter_for(provider)
        )
        base_window = self._base_window()
        track = self._track_for(req, counter)
        state = track.state

        observed_input = req.last_input_tokens
        if observed_input and state.last_view_estimate:
            ratio = 0.8 * state.ratio + 0.2 * (observed_input / max(1, state.last_view_estimate))
            state.ratio = RATIO_MIN if ratio < RATIO_MIN else min(ratio, RATIO_MAX)
        ratio = state.ratio

        tools = req.tools
        tool_list = tools if isinstance(tools, list) else list(tools)
        previous = track.tools
        if previous is None or (tool_list is not previous and tool_list != previous):
            track.tools = tool_list
            track.overhead = counter.count_tools(tool_list)
            track.set_recall(
                not tool_list
                or any(getattr(t, "name", None) == RECALL_TOOL_NAME for t in tool_list)
            )
        overhead = track.overhead

        view_raw = track.sys_cost + track.summary_cost + track.view_sum
        tokens = int((view_raw + overhead) * ratio)
        tokens_before = int((track.sys_cost + track.raw_sum + overhead) * ratio)

        overflow = req.overflow
        window = self._window(req, track, base_window)
        if req.manual and not overflow:
            return await self._compact_now(req, track, counter, window, tokens, tokens_before)
        model_window = window
        if window is None:
            if not overflow:
                return self._finish(req, track, None, None, tokens, tokens, tokens_before)
            window = max(tokens, 1) + self.reserve_output_tokens
        elif overflow:
            # the failed prompt refutes any larger claimed window
            window = min(window, max(tokens, 1) + self.reserve_output_tokens)
        budget = self._budget(window)
        if overflow:
            budget = _with_target(budget, int(0.25 * budget.usable))
        elif tokens < budget.trigger_tokens:
            return self._finish(req, track, None, budget, tokens, tokens, tokens_before)

        # ---- a compaction burst: above the high watermark, or recovering from an overflow
        body = list(req.entries[len(track.sys) :])
        tail = self.keep_recent_tokens or max(1, budget.usable // 5)
        if overflow:
            tail = min(tail, max(1, budget.usable // 10))
        protected_from = protected_tail_start(
            track.rendered(), counter, ratio, tail, called=track.call_pos
        )
        if protected_from == 0 and body:
            logger.warning(
                "context.compaction: protected tail covers the entire view (tail budget %d "
                "tokens); nothing older can be compacted",
                tail,
            )
        reasons: list[str] = []
        start_tokens = tokens
        for stage in self.stages:
            ctx = self._stage_context(
                req,
                track,
                counter,
                budget,
                tokens,
                protected_from,
                model_window,
                aggressive=overflow,
            )
            if await self._plan(stage, body, ctx, track):
                reasons.append(stage.name)
                track.apply_new_decisions()
                tokens = int((track.view_raw + overhead) * ratio)
            if tokens <= budget.target_tokens:
                break
        return self._finish(req, track, reasons, budget, start_tokens, tokens, tokens_before)

    async def _compact_now(
        self,
        req: CompactionRequest,
        track: CompactionTrack,
        counter: TokenCounter,
        window: int | None,
        tokens: int,
        tokens_before: int,
    ) -> ContextResult:
        """``/compact``: the summary stage folds everything outside the protected tail now,
        whatever the watermarks say. The tail is ``keep_recent_tokens`` when set, else empty
        (the whole conversation is summarised, as Claude Code's ``/compact`` does); the
        offload and clear stages are skipped, so the summary is written from full results."""
        state = track.state
        ratio = state.ratio
        overhead = track.overhead
        # no window known: one big enough that the whole body is one summary chunk
        sized = window if window is not None else 2 * max(tokens, 1) + self.reserve_output_tokens
        budget = self._budget(sized)
        body = list(req.entries[len(track.sys) :])
        keep = self.keep_recent_tokens
        protected_from = (
            len(body)
            if keep is None
            else protected_tail_start(track.rendered(), counter, ratio, keep, called=track.call_pos)
        )
        failures = state.summary_failures
        reasons: list[str] = []
        after = tokens
        for stage in self.stages:
            if stage.name != "summary":
                continue
            ctx = self._stage_context(
                req, track, counter, budget, tokens, protected_from, window, manual=True
            )
            if await self._plan(stage, body, ctx, track):
                reasons.append(stage.name)
                track.apply_new_decisions()
                after = int((track.view_raw + overhead) * ratio)
        shown = budget if window is not None else None
        result = self._finish(req, track, reasons, shown, tokens, after, tokens_before)
        if not reasons and state.summary_failures > failures:
            result.detail.append("the summary could not be made (the log says why)")
        return result

    def _stage_context(
        self,
        req: CompactionRequest,
        track: CompactionTrack,
        counter: TokenCounter,
        budget: TokenBudget,
        tokens: int,
        protected_from: int,
        model_window: int | None,
        *,
        aggressive: bool = False,
        manual: bool = False,
    ) -> StageContext:
        """What a stage plans with: the same for the watermark path and ``/compact``."""
        return StageContext(
            request=req,
            state=track.state,
            counter=counter,
            budget=budget,
            current_tokens=tokens,
            protected_from=protected_from,
            aggressive=aggressive,
            store=self.store,
            model_window=model_window,
            recall=track.recall,
            result_counts=track.result_count,
            called=track.call_pos,
            prefix_fingerprint=track.prefix_fingerprint,
            manual=manual,
        )

    @staticmethod
    async def _plan(
        stage: Stage, body: Sequence[TranscriptEntry], ctx: StageContext, track: CompactionTrack
    ) -> bool:
        """One stage's decisions; a stage that raises still leaves the state it had saved."""
        try:
            decided = await stage.plan(body, ctx)
        except BaseException:
            track.dirty = True
            track.state.last_view_estimate = track.view_raw + track.overhead
            track.commit()
            raise
        track.dirty = True
        return decided

    def _finish(
        self,
        req: CompactionRequest,
        track: CompactionTrack,
        reasons: list[str] | None,
        budget: TokenBudget | None,
        tokens_at_start: int,
        tokens: int,
        tokens_before: int,
    ) -> ContextResult:
        state = track.state
        estimate = track.sys_cost + track.summary_cost + track.view_sum + track.overhead
        state.last_view_estimate = estimate
        saved = track.saved
        current: object = req.scratch.get(SCRATCH_KEY)
        if saved is not None and not track.dirty and current is saved:
            saved["ratio"] = state.ratio
            saved["last_view_estimate"] = estimate
        else:
            track.commit()
        if req.session_id is not None:
            self._remember_session(req.session_id, state)
        view = track.view
        detail: list[str] = (
            [f"context was {round(budget.pressure(tokens_at_start) * 100)}% full"]
            if budget is not None
            else []
        )
        if view is None and not reasons:
            # the view equals the transcript: hand back the request's own list
            return ContextResult(
                entries=req.entries,
                tokens_before=tokens_before,
                tokens_after=tokens,
                detail=detail,
            )
        if state.offloaded:
            detail.append(f"{_plural(len(state.offloaded), 'tool result')} offloaded in total")
        if state.cleared:
            detail.append(f"{_plural(len(state.cleared), 'tool result')} cleared in total")
        if track.covered:
            detail.append(f"summary covers {_plural(track.covered, 'message')}")
        summary = state.summary
        reason: str | None
        if reasons:
            prefix = "reactive_" if req.overflow else "manual_" if req.manual else ""
            reason = prefix + "+".join(reasons)
        else:
            reason = "sticky_replay" if view is not None else None
        return ContextResult(
            entries=list(view) if view is not None else req.entries,
            changed=view is not None,
            compacted=bool(reasons),
            reason=reason,
            summary=summary.text if reasons and "summary" in reasons and summary else None,
            tokens_before=tokens_before,
            tokens_after=tokens,
            detail=detail,
        )


__all__ = ["Compaction"]
