"""``Compaction``: the default context policy (a sticky, staged, watermark-driven pipeline).

Per call the policy (1) brings its sticky ``CompactionState`` up to date with the transcript,
(2) estimates the prompt the view would make, and (3) only when that crosses the high
watermark runs its stages (offload -> clear -> summarise) until the estimate is at or below
the low watermark. Decisions are sticky and monotonic; the view is always
``render_view(transcript, state)``.

Cost model. The loop calls ``compact`` before every model turn, so the common case — below the
watermark — must not do work proportional to the transcript. A per-run ``_Track`` mirrors the
transcript's body with per-entry token costs, running totals and the rendered view, and is
advanced by the entries appended since the previous call. The transcript is append-only apart
from the leading system run (replaced on handoff) and the newest tool calls (arguments
normalised in place); the track re-checks the system run and probes O(log n) positions of the
body by identity, and rebuilds itself from scratch (O(n), memoised per entry) whenever a probe
fails. Work proportional to the transcript happens only in a compaction burst and on a
rebuild (new run, resume, a caller-rewritten transcript).

Long because the policy, its sticky state and the incremental track share one cost model (above);
split, the invariants that keep the common case cheap would live in several files.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from lovia.context.policy import CompactionRequest, ContextResult
from lovia.context.render import (
    RECALL_TOOL_NAME,
    clear_marker,
    offload_marker,
    pair_safe_cuts,
    protected_tail_start,
    summary_entry,
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
    SummaryState,
    entry_signature,
    plausible_window,
    window_key,
)
from lovia.context.tokens import TokenBudget, TokenCounter, check_watermark
from lovia.transcript import InputEntry, ToolCallEntry, ToolResultEntry, TranscriptEntry

if TYPE_CHECKING:
    from lovia.context.store import ResultStore
    from lovia.context.summarizer import Summarizer
    from lovia.tools.base import Tool

logger = logging.getLogger("lovia.context.compaction")

_MAX_TRACKS = 32
_MAX_SESSIONS = 256


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class _Track:
    """Incremental mirror of one run's transcript under one ``CompactionState``.

    Invariants after ``sync``: ``body`` holds the transcript's body entries (by identity),
    ``cost[i]`` is the raw estimate of ``body[i]``, ``view_sum`` is the raw estimate of the
    rendered ``body[covered:]``, and ``view`` is the rendered view (``None`` while it would
    equal the transcript).
    """

    __slots__ = (
        "body",
        "call_pos",
        "cost",
        "counter",
        "covered",
        "decided_ids",
        "dirty",
        "fp_hash",
        "fp_len",
        "markers",
        "overhead",
        "patched",
        "raw_sum",
        "recall",
        "result_count",
        "result_pos",
        "saved",
        "scratch",
        "session_id",
        "state",
        "summary_cost",
        "summary_obj",
        "summary_text",
        "sys",
        "sys_cost",
        "tools",
        "view",
        "view_sum",
    )

    def __init__(
        self,
        scratch: dict[str, Any],
        state: CompactionState,
        counter: TokenCounter,
        session_id: str | None = None,
    ):
        self.scratch = scratch
        self.session_id = session_id
        self.saved: dict[str, Any] | None = None
        self.state = state
        self.counter = counter
        self.dirty = True
        self.recall = True
        self.tools: list[Any] | None = None
        self.overhead = 0
        self.markers: dict[str, ToolResultEntry] = {}
        self.summary_obj: InputEntry | None = None
        self.summary_text: str | None = None
        self._reset()

    def _reset(self) -> None:
        self.sys: list[TranscriptEntry] = []
        self.sys_cost = 0
        self.body: list[TranscriptEntry] = []
        self.cost: list[int] = []
        self.raw_sum = 0
        self.result_count: dict[str, int] = {}
        self.result_pos: dict[str, int] = {}
        self.call_pos: dict[str, int] = {}
        self.covered = 0
        self.summary_cost = 0
        self.view_sum = 0
        self.view: list[TranscriptEntry] | None = None
        self.patched: dict[int, ToolResultEntry] = {}
        self.decided_ids: set[str] = set()
        self.fp_hash: Any = None
        self.fp_len = 0

    # ------------------------------------------------------------------ sync

    def build(self, entries: Sequence[TranscriptEntry]) -> None:
        """Full (re)build: O(n)."""
        self._reset()
        self.markers.clear()
        ns = _system_count(entries)
        self._set_system(list(entries[:ns]))
        self._extend(entries, ns)
        self._validate_summary()
        state = self.state
        if state.cleared or state.offloaded:
            unique = {cid for cid, n in self.result_count.items() if n == 1}
            if state.prune(unique):
                self.dirty = True
        self.refresh()

    def sync(self, entries: Sequence[TranscriptEntry]) -> None:
        """Advance to ``entries``: O(new entries) when the transcript only grew.

        The fast path trusts the loop's contract (append-only body, system run replaced only
        on handoff) and checks it with constant-time identity probes: the first and last
        known body entries, the middle one, the system run's last entry and the summary
        boundary. Anything unexpected falls back to a full rebuild.
        """
        body = self.body
        m = len(body)
        sys_list = self.sys
        ns = len(sys_list)
        n = len(entries)
        if (
            m == 0
            or n - ns < m
            or entries[ns] is not body[0]
            or entries[ns + m - 1] is not body[m - 1]
            or (ns and entries[ns - 1] is not sys_list[-1])
        ):
            self._resync(entries)
            return
        if m > 2 and entries[ns + (m >> 1)] is not body[m >> 1]:
            self.build(entries)
            return
        covered = self.covered
        if covered > 1 and entries[ns + covered - 1] is not body[covered - 1]:
            self.build(entries)
            return
        if ns > 1 and any(entries[i] is not sys_list[i] for i in range(ns - 1)):
            self._set_system(list(entries[:ns]))
        if n - ns > m:
            self._extend(entries, ns + m)

    def _resync(self, entries: Sequence[TranscriptEntry]) -> None:
        """Slow path: a replaced system run (handoff) keeps the body; anything else rebuilds."""
        body = self.body
        m = len(body)
        ns = _system_count(entries)
        n = len(entries)
        if (
            m
            and n - ns >= m
            and entries[ns] is body[0]
            and entries[ns + m - 1] is body[m - 1]
            and entries[ns + (m >> 1)] is body[m >> 1]
        ):
            self._set_system(list(entries[:ns]))
            if n - ns > m:
                self._extend(entries, ns + m)
            return
        self.build(entries)

    def _set_system(self, sys_entries: list[TranscriptEntry]) -> None:
        old = len(self.sys)
        self.sys = sys_entries
        self.sys_cost = sum(self.counter.estimate(e) for e in sys_entries)
        if self.view is not None:
            self.view[:old] = sys_entries

    def _extend(self, entries: Sequence[TranscriptEntry], start: int) -> None:
        """Append ``entries[start:]`` to the body, keeping every running total current."""
        counter = self.counter
        estimate = counter.estimate
        # the byte heuristic inlined for plain results and calls (the bulk of a tool loop)
        inline = counter._estimator is None
        overhead = counter.entry_overhead
        body, cost, view = self.body, self.cost, self.view
        result_count, result_pos, call_pos = self.result_count, self.result_pos, self.call_pos
        cleared, offloaded = self.state.cleared, self.state.offloaded
        covered = self.covered
        added = 0
        reused_decision = coverage_broken = False
        i = len(body)
        for j in range(start, len(entries)):
            e = entries[j]
            if inline and type(e) is ToolResultEntry and not e.parts:
                c = len(e.output.encode("utf-8", "surrogatepass")) // 4 + overhead
            elif inline and type(e) is ToolCallEntry:
                c = len((e.name + e.arguments).encode("utf-8", "surrogatepass")) // 4 + overhead
            else:
                c = estimate(e)
            body.append(e)
            cost.append(c)
            added += c
            if view is not None:
                view.append(e)
            if isinstance(e, ToolResultEntry):
                cid = e.call_id
                seen = result_count.get(cid, 0) + 1
                result_count[cid] = seen
                result_pos[cid] = i
                if seen == 2 and (cid in cleared or cid in offloaded):
                    # a reused call id: decisions only ever target unique results
                    cleared.discard(cid)
                    offloaded.pop(cid, None)
                    self.markers.pop(cid, None)
                    self.dirty = reused_decision = True
                call_at = call_pos.get(cid)
                if call_at is not None and call_at < covered:
                    coverage_broken = True
            elif isinstance(e, ToolCallEntry) and e.call_id not in call_pos:
                call_pos[e.call_id] = i
            i += 1
        self.raw_sum += added
        self.view_sum += added
        if coverage_broken:
            # a new result answers a call inside the summary: re-validate the coverage
            self.build(entries)
        elif reused_decision:
            self.refresh()

    def _validate_summary(self) -> None:
        """Drop a summary whose prefix was rewritten; rewind coverage onto a pair-safe cut."""
        state = self.state
        summary = state.summary
        if summary is None:
            return
        body = self.body
        covered = summary.covered
        if not 0 < covered <= len(body) or self.prefix_fingerprint(covered) != summary.fingerprint:
            state.summary = None
            self.dirty = True
            return
        safe = pair_safe_cuts(body)
        if safe[covered]:
            return
        while covered > 0 and not safe[covered]:
            covered -= 1
        self.dirty = True
        if covered == 0:
            state.summary = None
        else:
            state.summary = SummaryState(summary.text, covered, self.prefix_fingerprint(covered))

    # ------------------------------------------------------------------ view

    def marker(self, entry: ToolResultEntry) -> ToolResultEntry | None:
        cid = entry.call_id
        cached = self.markers.get(cid)
        if cached is not None:
            return cached
        state = self.state
        record = state.offloaded.get(cid)
        if record is not None:
            text = offload_marker(record, recall=self.recall)
        elif cid in state.cleared:
            text = clear_marker(cid, recall=self.recall)
        else:
            return None
        made = ToolResultEntry(call_id=cid, output=text, raw=None, is_error=entry.is_error)
        self.markers[cid] = made
        return made

    def _summary_head(self) -> list[TranscriptEntry]:
        if self.summary_obj is not None:
            return [*self.sys, self.summary_obj]
        return list(self.sys)

    def _set_summary(self, covered: int) -> None:
        summary = self.state.summary
        self.covered = covered
        if covered and summary is not None:
            if self.summary_obj is None or self.summary_text != summary.text:
                self.summary_obj = summary_entry(summary.text)
                self.summary_text = summary.text
            self.summary_cost = self.counter.count_entry(self.summary_obj)
        else:
            self.summary_obj = None
            self.summary_text = None
            self.summary_cost = 0

    def _valid_coverage(self) -> int:
        summary = self.state.summary
        if summary is not None and 0 < summary.covered <= len(self.body):
            return summary.covered
        return 0

    def _patch(self, call_id: str) -> None:
        """Render the (newly) decided result ``call_id`` as its marker."""
        self.decided_ids.add(call_id)
        pos = self.result_pos.get(call_id)
        if pos is None:
            return
        entry = self.body[pos]
        assert isinstance(entry, ToolResultEntry)
        marker = self.marker(entry)
        if marker is None:
            return
        self.patched[pos] = marker
        if pos >= self.covered:
            if self.view is None:
                self.view = self._summary_head() + self.body[self.covered :]
            self.view[len(self.sys) + (self.summary_obj is not None) + pos - self.covered] = marker
            self.view_sum += self.counter.count_entry(marker) - self.cost[pos]

    def refresh(self) -> None:
        """Recompute the rendered view and its estimate from scratch (O(n), C-level mostly)."""
        state = self.state
        self.patched = {}
        self.decided_ids = set()
        self.view = None
        self._set_summary(self._valid_coverage())
        self.view_sum = sum(self.cost[self.covered :])
        if self.covered:
            self.view = self._summary_head() + self.body[self.covered :]
        offloaded = state.offloaded
        for cid in offloaded:
            self._patch(cid)
        for cid in state.cleared:
            if cid not in offloaded:
                self._patch(cid)

    def apply_new_decisions(self) -> None:
        """Fold decisions a stage just added into the view: O(new decisions + new coverage).

        Stages only add decisions and only move the summary coverage forward; anything else
        falls back to ``refresh``.
        """
        state = self.state
        fresh = (state.cleared | state.offloaded.keys()) - self.decided_ids
        for cid in fresh:
            if cid in state.offloaded or cid in state.cleared:
                self._patch(cid)
        covered = self._valid_coverage()
        old = self.covered
        if covered == old and (covered == 0 or self.summary_text == state.summary.text):  # type: ignore[union-attr]
            return
        if covered < old:
            self.refresh()
            return
        # the summary now also covers body[old:covered]: drop them from the view
        count = self.counter.count_entry
        patched = self.patched
        cost = self.cost
        removed = 0
        for i in range(old, covered):
            marker = patched.get(i)
            removed += count(marker) if marker is not None else cost[i]
        self.view_sum -= removed
        head_len = len(self.sys) + (self.summary_obj is not None)
        tail = (
            self.view[head_len + covered - old :] if self.view is not None else self.body[covered:]
        )
        self._set_summary(covered)
        self.view = self._summary_head() + tail

    def rendered(self) -> _RenderedBody:
        """``render_entries(body, state)`` as a lazy sequence (markers from the cache)."""
        return _RenderedBody(self.body, self.patched)

    def prefix_fingerprint(self, k: int) -> str:
        """``fingerprint(body[:k])``, extended incrementally as ``k`` grows."""
        if self.fp_hash is None or k < self.fp_len:
            h = hashlib.sha1()
            start = 0
        else:
            h = self.fp_hash.copy()
            start = self.fp_len
        for e in self.body[start:k]:
            h.update(entry_signature(e).encode("utf-8", "surrogatepass"))
            h.update(b"\x00")
        self.fp_hash = h.copy()
        self.fp_len = k
        return h.hexdigest()[:16]

    def set_recall(self, recall: bool) -> None:
        if recall != self.recall:
            self.recall = recall
            self.markers.clear()
            if self.state.cleared or self.state.offloaded:
                self.refresh()

    @property
    def view_raw(self) -> int:
        return self.sys_cost + self.summary_cost + self.view_sum

    @property
    def raw_total(self) -> int:
        return self.sys_cost + self.raw_sum

    # ------------------------------------------------------------------ persistence

    def commit(self) -> None:
        """Write the state into the run's scratch (scalars patched in place when possible)."""
        state = self.state
        saved = self.saved
        current: object = self.scratch.get(SCRATCH_KEY)
        if saved is not None and not self.dirty and current is saved:
            saved["ratio"] = state.ratio
            saved["last_view_estimate"] = state.last_view_estimate
            return
        self.saved = state.save(self.scratch)
        self.dirty = False


class _RenderedBody(Sequence[TranscriptEntry]):
    """The rendered body, read lazily: ``body[i]`` or its cached marker."""

    __slots__ = ("body", "patched")

    def __init__(self, body: list[TranscriptEntry], patched: dict[int, ToolResultEntry]):
        self.body = body
        self.patched = patched

    def __len__(self) -> int:
        return len(self.body)

    @overload
    def __getitem__(self, i: int) -> TranscriptEntry: ...

    @overload
    def __getitem__(self, i: slice) -> list[TranscriptEntry]: ...

    def __getitem__(self, i: int | slice) -> TranscriptEntry | list[TranscriptEntry]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self.body)))]
        if i < 0:
            i += len(self.body)
        marker = self.patched.get(i)
        return marker if marker is not None else self.body[i]


def _system_count(entries: Sequence[TranscriptEntry]) -> int:
    ns = 0
    for e in entries:
        if isinstance(e, InputEntry) and e.role == "system":
            ns += 1
        else:
            break
    return ns


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
        self._tracks: dict[int, _Track] = {}
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

    def _track_for(self, req: CompactionRequest, counter: TokenCounter) -> _Track:
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
        track = _Track(scratch, self._initial_state(req), counter, req.session_id)
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

    def _window(self, req: CompactionRequest, track: _Track, window: int | None) -> int | None:
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
            ctx = StageContext(
                request=req,
                state=state,
                counter=counter,
                budget=budget,
                current_tokens=tokens,
                protected_from=protected_from,
                aggressive=overflow,
                store=self.store,
                model_window=model_window,
                recall=track.recall,
                result_counts=track.result_count,
                called=track.call_pos,
                prefix_fingerprint=track.prefix_fingerprint,
            )
            try:
                decided = await stage.plan(body, ctx)
            except BaseException:
                track.dirty = True
                state.last_view_estimate = track.view_raw + overhead
                track.commit()
                raise
            track.dirty = True
            if decided:
                reasons.append(stage.name)
                track.apply_new_decisions()
                tokens = int((track.view_raw + overhead) * ratio)
            if tokens <= budget.target_tokens:
                break
        return self._finish(req, track, reasons, budget, start_tokens, tokens, tokens_before)

    def _finish(
        self,
        req: CompactionRequest,
        track: _Track,
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
            reason = ("reactive_" if req.overflow else "") + "+".join(reasons)
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
