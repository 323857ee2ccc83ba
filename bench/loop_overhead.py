"""Framework overhead per turn of the run loop (not a test).

Runs an N-turn tool loop on ``ScriptedProvider`` with a trivial async tool and reports the
mean time per turn for the first and the last 50 turns, measured between consecutive
``TurnStarted`` events as a stream consumer sees them: wall time, or with ``--cpu`` the
thread's CPU time (steadier when a virtual machine's host is busy).

    python bench/loop_overhead.py            # 200 trivial turns + 800 turns of 2 KB results
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import statistics
import time

from lovia import Agent, Runner, events, tool
from lovia.testing import ScriptedProvider, call, text

CPU = False


def build(turns: int, payload: int) -> Agent:
    blob = "x" * payload

    @tool
    async def step(i: int) -> str:
        """Do one step."""
        return blob or "ok"

    script = [call("step", {"i": i}, call_id=f"c{i}") for i in range(turns - 1)]
    script.append(text("done"))
    return Agent(
        name="bench",
        instructions="Benchmark.",
        model=ScriptedProvider(script, record=False),
        tools=[step],
    )


async def measure(turns: int, payload: int) -> list[float]:
    agent = build(turns, payload)
    stamps: list[float] = []
    clock = time.thread_time if CPU else time.perf_counter
    async for ev in Runner.stream(agent, "go", max_turns=turns + 1):
        if isinstance(ev, (events.TurnStarted, events.RunCompleted)):
            stamps.append(clock())
    return [(b - a) * 1e6 for a, b in itertools.pairwise(stamps)]


def report(label: str, per_turn: list[float]) -> tuple[float, float]:
    first = statistics.fmean(per_turn[:50])
    last = statistics.fmean(per_turn[-50:])
    print(
        f"{label:<34} first 50: {first:8.1f} µs/turn   last 50: {last:8.1f} µs/turn   "
        f"last/first: {last / first:4.2f}"
    )
    return first, last


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="measure CPU time of this thread instead of wall time (steadier on a shared VM)",
    )
    args = parser.parse_args()
    global CPU
    CPU = args.cpu
    gc.collect()
    for label, turns, payload in (
        ("200 turns, trivial tool", 200, 0),
        ("800 turns, 2 KB tool results", 800, 2048),
    ):
        for _ in range(3):  # warm up: imports, caches, the allocator's arenas
            await measure(turns, payload)
        runs = [await measure(turns, payload) for _ in range(args.repeat)]
        # per-turn median across repeats damps scheduler noise on a shared machine
        per_turn = [statistics.median(samples) for samples in zip(*runs, strict=False)]
        report(label, per_turn)


if __name__ == "__main__":
    asyncio.run(main())
