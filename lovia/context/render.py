"""Pure rendering: transcript + sticky state -> the per-call view.

Nothing here mutates its inputs. With an empty state ``render_view`` returns a new list of the
same entry objects; decisions replace tool results with markers that keep ``call_id`` and
``is_error`` (so call/result pairing stays valid) and a summary replaces the covered prefix of
the body.
"""

from __future__ import annotations

from collections.abc import Container, Sequence

from lovia.context.prompts import SUMMARY_WRAPPER
from lovia.context.state import CompactionState, OffloadRecord
from lovia.context.tokens import TokenCounter
from lovia.transcript import (
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    split_system,
)

RECALL_TOOL_NAME = "recall_tool_result"


def clear_marker(call_id: str, *, recall: bool = True) -> str:
    """Marker for a cleared result (one line)."""
    if not recall:
        return "[Earlier tool result cleared to save context.]"
    return (
        "[Earlier tool result cleared to save context. "
        f'Call {RECALL_TOOL_NAME}("{call_id}") to retrieve the full output.]'
    )


def offload_marker(record: OffloadRecord, *, recall: bool = True) -> str:
    """Marker for an offloaded result: size, preview and the digest reference (not the call id)."""
    head = f"[Tool result ({record.chars:,} chars) trimmed to a preview to save context."
    if not recall:
        return f"{head}\nPreview:\n{record.preview}]"
    ref = f'{RECALL_TOOL_NAME}("{record.digest}")'
    return f"{head}\nPreview:\n{record.preview}\nCall {ref} for the full output.]"


def summary_entry(text: str) -> InputEntry:
    """The user message that carries the running summary in place of the covered prefix."""
    return InputEntry(role="user", content=SUMMARY_WRAPPER.format(summary=text))


def marker_entry(
    entry: ToolResultEntry, state: CompactionState, *, recall: bool = True
) -> ToolResultEntry | None:
    """The replacement for ``entry`` under ``state``, or None when it renders verbatim."""
    record = state.offloaded.get(entry.call_id)
    if record is not None:
        text = offload_marker(record, recall=recall)
    elif entry.call_id in state.cleared:
        text = clear_marker(entry.call_id, recall=recall)
    else:
        return None
    return ToolResultEntry(call_id=entry.call_id, output=text, raw=None, is_error=entry.is_error)


def render_entries(
    entries: Sequence[TranscriptEntry], state: CompactionState, *, recall: bool = True
) -> list[TranscriptEntry]:
    """Entries with decided tool results replaced by markers (offload wins over clear)."""
    if not state.cleared and not state.offloaded:
        return list(entries)
    out: list[TranscriptEntry] = []
    for e in entries:
        if isinstance(e, ToolResultEntry):
            marker = marker_entry(e, state, recall=recall)
            out.append(marker if marker is not None else e)
        else:
            out.append(e)
    return out


def render_view(
    entries: Sequence[TranscriptEntry], state: CompactionState, *, recall: bool = True
) -> list[TranscriptEntry]:
    """The full per-call view: system run, optional summary, rendered remainder."""
    systems, body = split_system(entries)
    summary = state.summary
    if summary is not None and 0 < summary.covered <= len(body):
        return [
            *systems,
            summary_entry(summary.text),
            *render_entries(body[summary.covered :], state, recall=recall),
        ]
    return [*systems, *render_entries(body, state, recall=recall)]


def _called_ids(entries: Sequence[TranscriptEntry]) -> set[str]:
    return {e.call_id for e in entries if isinstance(e, ToolCallEntry)}


def safe_cuts_from(
    entries: Sequence[TranscriptEntry], lo: int = 0, *, called: Container[str] | None = None
) -> list[bool]:
    """``pair_safe_cuts(entries)[lo:]`` computed with a backward scan that stops at ``lo``.

    ``called`` (the call ids present in ``entries``) can be supplied by a caller that already
    knows it, which makes the cost O(len(entries) - lo).
    """
    n = len(entries)
    if called is None:
        called = _called_ids(entries)
    lo = max(0, min(lo, n))
    safe = [True] * (n + 1 - lo)
    open_results: dict[str, int] = {}
    outstanding = 0
    for i in range(n - 1, lo - 1, -1):
        e = entries[i]
        if isinstance(e, ToolResultEntry):
            if e.call_id in called:
                open_results[e.call_id] = open_results.get(e.call_id, 0) + 1
                outstanding += 1
        elif isinstance(e, ToolCallEntry):
            pending = open_results.get(e.call_id, 0)
            if pending:
                open_results[e.call_id] = pending - 1
                outstanding -= 1
        safe[i - lo] = outstanding == 0
    return safe


def pair_safe_cuts(entries: Sequence[TranscriptEntry]) -> list[bool]:
    """``safe[i]`` is True iff cutting before index ``i`` strands no tool result from its call.

    Only results whose call id appears on some call in ``entries`` constrain a cut; results
    are matched to calls per id (so duplicated ids nest correctly).
    """
    return safe_cuts_from(entries, 0)


def _safe_at_or_below(
    entries: Sequence[TranscriptEntry], cut: int, called: Container[str] | None
) -> int:
    """The largest pair-safe cut ``<= cut`` (O(len - result))."""
    n = len(entries)
    if cut >= n:
        return n
    if called is None:
        called = _called_ids(entries)
    open_results: dict[str, int] = {}
    outstanding = 0
    for i in range(n - 1, 0, -1):
        e = entries[i]
        if isinstance(e, ToolResultEntry):
            if e.call_id in called:
                open_results[e.call_id] = open_results.get(e.call_id, 0) + 1
                outstanding += 1
        elif isinstance(e, ToolCallEntry):
            pending = open_results.get(e.call_id, 0)
            if pending:
                open_results[e.call_id] = pending - 1
                outstanding -= 1
        if i <= cut and outstanding == 0:
            return i
    return 0


def protected_tail_start(
    body: Sequence[TranscriptEntry],
    counter: TokenCounter,
    ratio: float,
    tail_tokens: int,
    *,
    called: Container[str] | None = None,
) -> int:
    """Index of the first body entry of the verbatim tail every stage must leave alone.

    The tail is token-budgeted (``tail_tokens`` calibrated tokens), always keeps the latest
    entry, reaches back to the most recent user message when that costs at most twice the
    budget, and never starts between a tool call and its result. Only the tail (and the
    stretch back to an affordable user message) is visited, plus one O(n) pass for the call
    ids unless ``called`` is given.
    """
    n = len(body)
    if n == 0:
        return 0
    count = counter.count_entry
    budget_raw = max(1, int(tail_tokens / max(ratio, 0.01)))
    cut = n
    acc = 0
    for i in range(n - 1, -1, -1):
        c = count(body[i])
        if acc + c > budget_raw:
            break
        acc += c
        cut = i
    if cut == n:  # the latest entry alone is over budget: it is still protected
        cut = n - 1
        acc = count(body[cut])
    user_in_tail = False
    for i in range(n - 1, cut - 1, -1):
        e = body[i]
        if isinstance(e, InputEntry) and e.role == "user":
            user_in_tail = True
            break
    if not user_in_tail:
        # anchor the most recent user message if the stretch from it costs <= 2x the budget
        limit = 2 * budget_raw
        cost = acc
        for i in range(cut - 1, -1, -1):
            e = body[i]
            cost += count(e)
            if cost > limit:
                break
            if isinstance(e, InputEntry) and e.role == "user":
                cut = i
                break
    return _safe_at_or_below(body, cut, called)


__all__ = [
    "RECALL_TOOL_NAME",
    "clear_marker",
    "marker_entry",
    "offload_marker",
    "pair_safe_cuts",
    "protected_tail_start",
    "render_entries",
    "render_view",
    "safe_cuts_from",
    "summary_entry",
]
