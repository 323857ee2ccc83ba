"""Persistence benchmark (not a test): SQLite append cost as a run grows, load and resume times.

    python bench/persistence_bench.py [--entries 1000] [--dir DIR]

Prints:
- the checkpoint append cost per turn (one model output + one tool result per turn, as the loop
  saves them) in buckets while a run grows to ``--entries`` entries: it should stay flat, since an
  append writes only the new entries;
- the session append cost per run as a session grows;
- the time to load a session holding ``--entries`` entries and to resume a checkpoint holding
  ``--entries`` entries (load + rebuild + one scripted model turn to finish), cold (new store,
  connection and schema check included) and warm. Target: < 100 ms each.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from lovia import (
    Agent,
    CheckpointOptions,
    RunHead,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    Usage,
)
from lovia.testing import ScriptedProvider, text
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)

RESULT_TEXT = ("line of tool output with some numbers 12345 and words; " * 9)[:500]


def turn(i: int) -> tuple[list[TranscriptEntry], list[TranscriptEntry]]:
    """One tool turn as the loop saves it: the model output, then the tool result."""
    call_id = f"call_{i}"
    output: list[TranscriptEntry] = [
        ToolCallEntry(call_id, "read_file", f'{{"path": "src/module_{i}.py", "limit": 200}}')
    ]
    result: list[TranscriptEntry] = [ToolResultEntry(call_id, RESULT_TEXT, raw=None)]
    return output, result


def head(turns: int) -> RunHead:
    return RunHead(
        agent_name="bench",
        usage=Usage(100 * turns, 10 * turns),
        turns=turns,
        last_input_tokens=100 * turns,
        context_state={"ratio": 1.1, "cleared": [f"call_{i}" for i in range(min(turns, 20))]},
    )


def ms(seconds: float) -> str:
    return f"{seconds * 1000:7.2f} ms"


async def bench_checkpoint_appends(db: Path, entries: int) -> str:
    async with SQLiteCheckpointer(db) as store:
        await store.append("grow", [InputEntry("user", "start")], head(0))
        costs: list[tuple[int, float]] = []
        stored = 1
        i = 0
        while stored < entries:
            i += 1
            for batch in turn(i):
                t = time.perf_counter()
                await store.append("grow", batch, head(i))
                costs.append((stored, time.perf_counter() - t))
                stored += len(batch)
    lines = ["checkpoint append cost per save, by run size (median / p95):"]
    bucket = max(entries // 5, 1)
    for lo in range(0, entries, bucket):
        sample = [c for n, c in costs if lo <= n < lo + bucket]
        if sample:
            p95 = sorted(sample)[int(len(sample) * 0.95) - 1 if len(sample) > 1 else 0]
            lines.append(
                f"  entries {lo:5d}-{lo + bucket - 1:5d}: {ms(statistics.median(sample))}"
                f" / {ms(p95)}  ({len(sample)} saves)"
            )
    return "\n".join(lines)


async def bench_session_appends(db: Path, runs: int) -> str:
    async with SQLiteSession(db) as store:
        costs: list[float] = []
        for r in range(runs):
            entries: list[TranscriptEntry] = [InputEntry("user", f"question {r}")]
            for i in range(4):
                output, result = turn(r * 10 + i)
                entries += output + result
            entries.append(AssistantTextEntry(f"answer {r}"))
            t = time.perf_counter()
            await store.append("grow", entries, run_id=f"run-{r}")
            costs.append(time.perf_counter() - t)
    first, last = costs[: runs // 5], costs[-(runs // 5) :]
    return (
        f"session append cost per run (10 entries): first {runs // 5} runs "
        f"{ms(statistics.median(first))}, last {runs // 5} runs {ms(statistics.median(last))}"
    )


async def build_session(db: Path, entries: int) -> None:
    async with SQLiteSession(db) as store:
        r = 0
        total = 0
        while total < entries:
            seg: list[TranscriptEntry] = [InputEntry("user", f"question {r}")]
            for i in range(9):
                output, result = turn(r * 10 + i)
                seg += output + result
            seg.append(AssistantTextEntry(f"answer {r}"))
            seg = seg[: entries - total]
            await store.append("big", seg, run_id=f"run-{r}")
            total += len(seg)
            r += 1


async def build_checkpoint(db: Path, entries: int) -> None:
    async with SQLiteCheckpointer(db) as store:
        await store.append("big", [InputEntry("user", "do the big job")], head(0))
        stored, i = 1, 0
        while stored < entries:
            i += 1
            for batch in turn(i):
                batch = batch[: entries - stored]
                if batch:
                    await store.append("big", batch, head(i))
                    stored += len(batch)


async def timed(fn: Any, repeat: int = 5) -> tuple[float, float]:
    """(cold, warm median): cold = first call on a new store."""
    cold = await fn(True)
    warm = statistics.median([await fn(False) for _ in range(repeat)])
    return cold, warm


async def bench_loads(base: Path, entries: int) -> list[str]:
    session_db = base / "session.db"
    checkpoint_db = base / "checkpoint.db"
    await build_session(session_db, entries)
    await build_checkpoint(checkpoint_db, entries)
    shared_session = SQLiteSession(session_db)
    shared_checkpointer = SQLiteCheckpointer(checkpoint_db)

    async def load_session(cold: bool) -> float:
        store = SQLiteSession(session_db) if cold else shared_session
        t = time.perf_counter()
        loaded = await store.load("big")
        took = time.perf_counter() - t
        assert len(loaded) == entries
        if cold:
            await store.aclose()
        return took

    async def load_checkpoint(cold: bool) -> float:
        store = SQLiteCheckpointer(checkpoint_db) if cold else shared_checkpointer
        t = time.perf_counter()
        snap = await store.load("big")
        took = time.perf_counter() - t
        assert snap is not None and len(snap.entries) == entries
        if cold:
            await store.aclose()
        return took

    async def resume(cold: bool) -> float:
        store = SQLiteCheckpointer(checkpoint_db) if cold else shared_checkpointer
        provider = ScriptedProvider([text("finished")])
        agent = Agent(name="bench", instructions="Benchmark agent.", model=provider)
        t = time.perf_counter()
        result = await Runner.run(
            agent,
            "ignored",
            max_turns=10 * entries,
            checkpoint=CheckpointOptions(checkpointer=store, run_id="big"),
        )
        took = time.perf_counter() - t
        assert len(result.entries) > entries and result.output == "finished"
        # drop the completed run again so every repetition resumes the same checkpoint
        if cold:
            await store.aclose()
        await rebuild()
        return took

    async def rebuild() -> None:
        await shared_checkpointer.delete("big")
        await build_checkpoint(checkpoint_db, entries)

    out = []
    for label, fn in (
        (f"load a {entries}-entry session", load_session),
        (f"load a {entries}-entry checkpoint", load_checkpoint),
        (f"resume a {entries}-entry checkpoint (load + rebuild + 1 model turn)", resume),
    ):
        cold, warm = await timed(fn)
        verdict = "ok" if max(cold, warm) < 0.1 else "OVER TARGET"
        out.append(f"{label}: cold {ms(cold)}, warm {ms(warm)}  [{verdict}: < 100 ms]")
    await shared_session.aclose()
    await shared_checkpointer.aclose()
    return out


async def main(entries: int, directory: Path | None) -> None:
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        base = Path(tmp)
        print(f"lovia persistence benchmark: SQLite files in {base} (WAL)\n")
        print(await bench_checkpoint_appends(base / "grow.db", entries))
        print(await bench_session_appends(base / "session-grow.db", 100))
        print()
        for line in await bench_loads(base, entries):
            print(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--dir", type=Path, default=None, help="where to put the database files")
    args = parser.parse_args()
    asyncio.run(main(args.entries, args.dir))
