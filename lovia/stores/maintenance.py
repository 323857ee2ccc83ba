"""Pure segment rewrites shared by the session stores (trim old tool results, rewind)."""

from __future__ import annotations

from lovia.session import Segment
from lovia.transcript import ToolResultEntry, drop_dangling_tool_calls

_ARCHIVED_SUFFIX = "archived to a result store]"


def _trim_marker(call_id: str, dropped: int) -> str:
    return (
        f"\n[... {dropped:,} chars trimmed from stored history; "
        f'recall_tool_result("{call_id}") returns the full output only if it was '
        f"{_ARCHIVED_SUFFIX}"
    )


def trim_segments(
    segments: list[Segment], *, keep_chars: int, keep_runs: int
) -> tuple[list[Segment], int]:
    """Shorten tool results in all but the last ``keep_runs`` segments."""
    if keep_chars < 0:
        raise ValueError("keep_chars must be >= 0")
    if keep_runs < 0:
        raise ValueError("keep_runs must be >= 0")
    cutoff = max(0, len(segments) - keep_runs)
    out: list[Segment] = []
    count = 0
    for i, seg in enumerate(segments):
        if i >= cutoff:
            out.append(seg)
            continue
        entries = []
        for e in seg.entries:
            if isinstance(e, ToolResultEntry) and not e.output.endswith(_ARCHIVED_SUFFIX):
                dropped = len(e.output) - keep_chars
                marker = _trim_marker(e.call_id, dropped)
                if dropped > len(marker):
                    e = ToolResultEntry(
                        e.call_id, e.output[:keep_chars] + marker, raw=None, is_error=e.is_error
                    )
                    count += 1
            entries.append(e)
        out.append(Segment(seg.run_id, entries, seg.meta))
    return out, count


def rewind_segments(segments: list[Segment], *, keep_entries: int) -> tuple[list[Segment], int]:
    """Keep the first ``keep_entries`` entries of the flat view; returns the removed count."""
    if keep_entries < 0:
        raise ValueError("keep_entries must be >= 0")
    total = sum(len(s.entries) for s in segments)
    if keep_entries >= total:
        return segments, 0
    out: list[Segment] = []
    seen = 0
    for seg in segments:
        if seen + len(seg.entries) <= keep_entries:
            out.append(seg)
            seen += len(seg.entries)
            continue
        room = keep_entries - seen
        if room > 0:
            kept = drop_dangling_tool_calls(seg.entries[:room])
            if kept:
                out.append(Segment(seg.run_id, kept, None))
        break
    remaining = sum(len(s.entries) for s in out)
    return out, total - remaining


__all__ = ["rewind_segments", "trim_segments"]
