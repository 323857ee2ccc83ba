"""Sticky compaction state and the helpers that key it.

``CompactionState`` records *decisions* (cleared call ids, offloaded results, the running
summary and its coverage) plus the calibration ratio and learned windows. It serialises to a
JSON-safe dict under ``scratch["context"]``, which the runner persists in checkpoints and
session segment metadata. Decisions are monotonic: stages add to them, never undo them, so the
rendered prefix of the view stays byte-stable across turns.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lovia.parts import TextPart
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)

SCRATCH_KEY = "context"
SCHEMA_VERSION = 3
RATIO_MIN, RATIO_MAX = 0.5, 2.5
WINDOW_MIN, WINDOW_MAX = 1024, 20_000_000


def plausible_window(value: object) -> bool:
    """A context window worth believing when it arrives from outside (errors, scratch)."""
    return (
        isinstance(value, int) and not isinstance(value, bool) and WINDOW_MIN <= value <= WINDOW_MAX
    )


def clamp_ratio(value: float) -> float:
    return min(RATIO_MAX, max(RATIO_MIN, value))


@dataclass
class OffloadRecord:
    """An offloaded tool result: preview text, original length, and the recall/store key."""

    preview: str
    chars: int
    digest: str


@dataclass
class SummaryState:
    """The running summary: it replaces the first ``covered`` body entries."""

    text: str
    covered: int
    fingerprint: str


@dataclass
class CompactionState:
    cleared: set[str] = field(default_factory=set)
    offloaded: dict[str, OffloadRecord] = field(default_factory=dict)
    summary: SummaryState | None = None
    ratio: float = 1.0
    last_view_estimate: int | None = None
    summary_failures: int = 0
    learned_windows: dict[str, int] = field(default_factory=dict)

    def decided(self, call_id: str) -> bool:
        return call_id in self.cleared or call_id in self.offloaded

    @property
    def has_decisions(self) -> bool:
        return bool(self.cleared or self.offloaded or self.summary)

    def prune(self, referable: set[str]) -> bool:
        """Keep only decisions about call ids in ``referable``; True if anything was dropped."""
        dropped = False
        stale = [cid for cid in self.cleared if cid not in referable]
        if stale:
            self.cleared.difference_update(stale)
            dropped = True
        gone = [cid for cid in self.offloaded if cid not in referable]
        for cid in gone:
            del self.offloaded[cid]
            dropped = True
        return dropped

    # ------------------------------------------------------------------ serialisation

    def to_dict(self) -> dict[str, Any]:
        summary = self.summary
        return {
            "version": SCHEMA_VERSION,
            "cleared": sorted(self.cleared),
            "offloaded": {
                cid: {"preview": r.preview, "chars": r.chars, "digest": r.digest}
                for cid, r in self.offloaded.items()
            },
            "summary": (
                {
                    "text": summary.text,
                    "covered": summary.covered,
                    "fingerprint": summary.fingerprint,
                }
                if summary is not None
                else None
            ),
            "ratio": self.ratio,
            "last_view_estimate": self.last_view_estimate,
            "summary_failures": self.summary_failures,
            "learned_windows": dict(self.learned_windows),
        }

    def save(self, scratch: dict[str, Any]) -> dict[str, Any]:
        """Write the state into ``scratch[SCRATCH_KEY]``; returns the stored dict."""
        data = self.to_dict()
        scratch[SCRATCH_KEY] = data
        return data

    @classmethod
    def load(cls, scratch: Mapping[str, Any] | None) -> CompactionState:
        """Forgiving load: anything malformed is dropped field by field, never raised."""
        raw = scratch.get(SCRATCH_KEY) if isinstance(scratch, Mapping) else None
        if not isinstance(raw, Mapping) or raw.get("version") != SCHEMA_VERSION:
            return cls()
        return cls.from_dict(raw)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> CompactionState:
        state = cls()
        cleared = raw.get("cleared")
        if isinstance(cleared, (list, set, tuple, frozenset)):
            state.cleared = {c for c in cleared if isinstance(c, str)}
        offloaded = raw.get("offloaded")
        if isinstance(offloaded, Mapping):
            for cid, rec in offloaded.items():
                if not (isinstance(cid, str) and isinstance(rec, Mapping)):
                    continue
                preview, chars, digest = rec.get("preview"), rec.get("chars"), rec.get("digest")
                if (
                    isinstance(preview, str)
                    and isinstance(chars, int)
                    and not isinstance(chars, bool)
                    and isinstance(digest, str)
                ):
                    state.offloaded[cid] = OffloadRecord(preview, chars, digest)
        summary = raw.get("summary")
        if isinstance(summary, Mapping):
            text, covered = summary.get("text"), summary.get("covered")
            fp = summary.get("fingerprint")
            if (
                isinstance(text, str)
                and isinstance(covered, int)
                and not isinstance(covered, bool)
                and covered > 0
                and isinstance(fp, str)
            ):
                state.summary = SummaryState(text, covered, fp)
        ratio = raw.get("ratio")
        if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and ratio == ratio:
            state.ratio = clamp_ratio(float(ratio))
        estimate = raw.get("last_view_estimate")
        if isinstance(estimate, int) and not isinstance(estimate, bool):
            state.last_view_estimate = estimate
        failures = raw.get("summary_failures")
        if isinstance(failures, int) and not isinstance(failures, bool):
            state.summary_failures = failures
        windows = raw.get("learned_windows")
        if isinstance(windows, Mapping):
            state.learned_windows = {
                k: v for k, v in windows.items() if isinstance(k, str) and plausible_window(v)
            }
        return state

    def copy(self) -> CompactionState:
        return CompactionState.from_dict(self.to_dict())


# --------------------------------------------------------------------------- helpers


def result_digest(output: str) -> str:
    """Content key of a tool output: shared by the offload stage, result stores and recall."""
    return hashlib.sha1(output.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _size(content: str | list[Any]) -> int:
    if isinstance(content, str):
        return len(content)
    return sum(len(p.text) if isinstance(p, TextPart) else 1 for p in content)


def entry_signature(entry: TranscriptEntry) -> str:
    """Structural signature of one entry; tool-result length is deliberately left out."""
    if isinstance(entry, ToolResultEntry):
        return f"result:{entry.call_id}"
    if isinstance(entry, ToolCallEntry):
        return f"call:{entry.call_id}:{len(entry.arguments)}"
    if isinstance(entry, InputEntry):
        return f"input:{entry.role}:{_size(entry.content)}"
    if isinstance(entry, AssistantTextEntry):
        return f"assistant:{len(entry.content)}"
    if isinstance(entry, ReasoningEntry):
        return f"reasoning:{len(entry.content)}"
    return type(entry).__name__  # pragma: no cover - exhaustive above


def fingerprint(entries: Iterable[TranscriptEntry]) -> str:
    """Structural hash of a transcript prefix (detects a rewritten summary-covered prefix)."""
    h = hashlib.sha1()
    for e in entries:
        h.update(entry_signature(e).encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def window_key(provider: object, model: str | None) -> str:
    """Key of a learned window: endpoint and model."""
    base_url = getattr(provider, "base_url", "") or ""
    return f"{base_url}\x00{model or ''}"


def unique_result_ids(entries: Iterable[TranscriptEntry]) -> set[str]:
    """Call ids carried by exactly one tool result (the only ones decisions may target)."""
    seen: dict[str, int] = {}
    for e in entries:
        if isinstance(e, ToolResultEntry):
            seen[e.call_id] = seen.get(e.call_id, 0) + 1
    return {cid for cid, n in seen.items() if n == 1}


__all__ = [
    "RATIO_MAX",
    "RATIO_MIN",
    "SCHEMA_VERSION",
    "SCRATCH_KEY",
    "CompactionState",
    "OffloadRecord",
    "SummaryState",
    "clamp_ratio",
    "entry_signature",
    "fingerprint",
    "plausible_window",
    "result_digest",
    "unique_result_ids",
    "window_key",
]
