"""Per-turn cost of the default context policy (not a test).

Runs the loop benchmark's 800-turn tool loop (2 KB results) on a ``ScriptedProvider`` that
advertises a context window, so ``Compaction`` does its full accounting every turn:

- ``window 10M``: accounting only, the watermark is never reached;
- ``window 64k``: compaction bursts every few dozen turns (clear, then summaries from an
  instant fake summarizer), so most turns replay sticky decisions.

Also runs the no-window case (the ``ScriptedProvider`` default) and ``NoopContextPolicy`` as
the baseline. Reports the median per-turn wall time of the first and last 50 turns.

    python bench/context_overhead.py
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import statistics
import time
from typing import Any

from lovia import Agent, Compaction, Runner, events, tool
from lovia.context import ContextPolicy, NoopContextPolicy
from lovia.testing import ScriptedProvider, call, text


class WindowedProvider(ScriptedProvider):
    def __init__(self, script: Any, window: int | None) -> None:
        super().__init__(script, record=False)
        self.window = window

    def context_window(self) -> int | None:
        return self.window


class InstantSummarizer:
    async def summarize(self, entries: Any, *, req: Any, prior_summary: str | None = None) -> str:
        return "## Session intent\nbenchmark\n## Next steps\nkeep going"


def build(turns: int, payload: int, window: int | None, policy: ContextPolicy) -> Agent[Any]:
    blob = "x" * payload

    @tool
    async def step(i: int) -> str:
        """Do one step."""
        return blob

    script = [call("step", {"i": i}, call_id=f"c{i}") for i in range(turns - 1)]
    script.append(text("done"))
    provider = (
        WindowedProvider(script, window) if window else ScriptedProvider(script, record=False)
    )
    return Agent(
        name="bench", instructions="Benchmark.", model=provider, tools=[step], context_policy=policy
    )


async def measure(
    turns: int, payload: int, window: int | None, policy: ContextPolicy
) -> list[float]:
    agent = build(turns, payload, window, policy)
    stamps: list[float] = []
    compactions = 0
    async for ev in Runner.stream(agent, "go", max_turns=turns + 1):
        if isinstance(ev, (events.TurnStarted, events.RunCompleted)):
            stamps.append(time.perf_counter())
        elif isinstance(ev, events.ContextCompacted):
            compactions += 1
    measure.compactions = compactions  # type: ignore[attr-defined]
    return [(b - a) * 1e6 for a, b in itertools.pairwise(stamps)]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--turns", type=int, default=800)
    args = parser.parse_args()
    scenarios: list[tuple[str, int | None, Any]] = [
        ("NoopContextPolicy", None, NoopContextPolicy),
        ("Compaction, no window", None, Compaction),
        ("Compaction, window 10M", 10_000_000, Compaction),
        ("Compaction, window 64k", 64_000, lambda: Compaction(summarizer=InstantSummarizer())),
    ]
    gc.collect()
    for label, window, factory in scenarios:
        await measure(50, 2048, window, factory())
        runs = [await measure(args.turns, 2048, window, factory()) for _ in range(args.repeat)]
        per_turn = [statistics.median(s) for s in zip(*runs, strict=False)]
        first = statistics.median(per_turn[:50])
        last = statistics.median(per_turn[-50:])
        print(
            f"{label:<24} first 50: {first:7.1f} µs/turn   last 50: {last:7.1f} µs/turn   "
            f"last/first: {last / first:4.2f}   compactions/run: {measure.compactions}"  # type: ignore[attr-defined]
        )


if __name__ == "__main__":
    asyncio.run(main())
