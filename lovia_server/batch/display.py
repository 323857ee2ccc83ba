"""What a batch shows while it runs (one redrawn status line) and when it ends (a table).

Pure formatting over :class:`BatchTally`; the runner owns the tally and decides when to draw.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TextIO

from lovia_server.batch.results import TaskResult

_WIDTH = 24


@dataclass
class BatchTally:
    """Counts of one batch run (skipped tasks are the ones a resume found already settled)."""

    total: int
    skipped: int = 0
    statuses: Counter[str] = field(default_factory=Counter)
    retried: int = 0
    tokens: int = 0
    cost: float = 0.0
    priced: bool = False
    started: float = field(default_factory=time.monotonic)
    results: list[TaskResult] = field(default_factory=list)

    @property
    def finished(self) -> int:
        return sum(self.statuses.values())

    @property
    def todo(self) -> int:
        return self.total - self.skipped

    def add(self, result: TaskResult) -> None:
        self.statuses[result.status] += 1
        self.retried += result.attempts > 1
        self.tokens += result.usage.total
        if result.cost is not None:
            self.cost += result.cost
            self.priced = True
        self.results.append(result)

    def eta(self) -> float | None:
        if not self.finished:
            return None
        rate = (time.monotonic() - self.started) / self.finished
        return rate * (self.todo - self.finished)


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def status_line(tally: BatchTally, running: int) -> str:
    """``[######----] 12/40 done · 4 running · 1 failed · 12,345 tokens · $0.12 · ETA 03:10``"""
    todo = max(tally.todo, 1)
    filled = int(_WIDTH * tally.finished / todo)
    bar = "#" * filled + "-" * (_WIDTH - filled)
    failed = tally.statuses["failed"] + tally.statuses["lost"]
    parts = [
        f"[{bar}] {tally.finished}/{tally.todo} done",
        f"{running} running",
        f"{failed} failed",
        f"{tally.tokens:,} tokens",
    ]
    if tally.priced:
        parts.append(f"${tally.cost:.4f}")
    parts.append(f"ETA {_clock(tally.eta())}")
    return " · ".join(parts)


def summary_table(tally: BatchTally) -> str:
    """The closing table: one row per task of this run, then the totals."""
    width = max([len(r.id) for r in tally.results] + [4])
    lines = [f"{'task':<{width}}  {'status':<6}  {'tries':>5}  {'tokens':>9}  {'secs':>7}  error"]
    for r in tally.results:
        error = (r.error or "").splitlines()[0][:60] if r.error else ""
        lines.append(
            f"{r.id:<{width}}  {r.status:<6}  {r.attempts:>5}  {r.usage.total:>9,}  "
            f"{r.duration:>7.1f}  {error}".rstrip()
        )
    counts = ", ".join(f"{n} {s}" for s, n in sorted(tally.statuses.items())) or "nothing run"
    total = f"{counts}; {tally.skipped} skipped (already in results); {tally.retried} retried"
    total += f"; {tally.tokens:,} tokens"
    if tally.priced:
        total += f"; ${tally.cost:.4f}"
    total += f"; {_clock(time.monotonic() - tally.started)} wall"
    return "\n".join([*lines, "", total]) if tally.results else total


class Progress:
    """Redraws the status line on a terminal (at most every ``interval`` seconds); writes
    nothing while running when the stream is not a terminal."""

    def __init__(self, stream: TextIO | None = None, *, interval: float = 0.5) -> None:
        self.stream = stream or sys.stderr
        self.interval = interval
        self.live = self.stream.isatty()
        self._last = 0.0

    def update(self, tally: BatchTally, running: int, *, force: bool = False) -> None:
        now = time.monotonic()
        if not self.live or (not force and now - self._last < self.interval):
            return
        self._last = now
        self.stream.write("\r\x1b[2K" + status_line(tally, running))
        self.stream.flush()

    def close(self, tally: BatchTally) -> None:
        if self.live:
            self.stream.write("\r\x1b[2K")
        self.stream.write(summary_table(tally) + "\n")
        self.stream.flush()


__all__ = ["BatchTally", "Progress", "status_line", "summary_table"]
