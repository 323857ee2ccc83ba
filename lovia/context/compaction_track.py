"""The incremental track of one run's transcript under one ``CompactionState`` (the cost model
of :mod:`lovia.context.compaction`).

The loop calls ``Compaction.compact`` before every model turn, so the common case — below the
watermark — must not do work proportional to the transcript. The track mirrors the
transcript's body with per-entry token costs, running totals and the rendered view, and is
advanced by the entries appended since the previous call. The transcript is append-only apart
from the leading system run (replaced on handoff) and the newest tool calls (arguments
normalised in place); the track re-checks the system run and probes O(log n) positions of the
body by identity, and rebuilds itself from scratch (O(n), memoised per entry) whenever a probe
fails. The policy reads and advances the track's fields directly: they are its working state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, overload

from lovia.context.render import clear_marker, offload_marker, pair_safe_cuts, summary_entry
from lovia.context.state import SCRATCH_KEY, CompactionState, SummaryState, entry_signature
from lovia.context.tokens import TokenCounter
from lovia.transcript import InputEntry, ToolCallEntry, ToolResultEntry, TranscriptEntry


class CompactionTrack:
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

    def rendered(self) -> RenderedBody:
        """``render_entries(body, state)`` as a lazy sequence (markers from the cache)."""
        return RenderedBody(self.body, self.patched)

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


class RenderedBody(Sequence[TranscriptEntry]):
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


__all__ = ["CompactionTrack", "RenderedBody"]
