"""Language-server benchmarks (not a test).

    python bench/server_bench.py

1. spawn -> ``initialize`` result, and -> first ``lovia/status`` answer (runtime ready);
2. a 10,000-delta answer from an in-process provider: events/s at the client and p50/p99 latency
   from the provider yielding a delta to the client receiving the notification that carries
   it, deltas paced at ``--rate`` per second, then as fast as they come (deltas merge only while
   a write is pending; ``bench/e2e_latency.py`` and ``bench/e2e_clients.py`` measure the same
   over real HTTP);
3. resident memory of the server with 20 concurrent live runs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lovia_server.chat.client import StdioClient

AGENT = textwrap.dedent(
    """
    import asyncio, os, time
    from pathlib import Path
    from lovia import Agent, tool
    from lovia.messages import Usage
    from lovia.testing import ScriptedProvider, call, text
    from lovia.transcript import FinishDelta, TextDelta, UsageDelta

    N = int(os.environ.get("BENCH_DELTAS", "10000"))
    RATE = float(os.environ.get("BENCH_RATE", "2000"))

    class Stamping:
        name = "stamping"
        model = "stamping"
        supports_json_schema = False

        async def stream(self, entries, **kw):
            gap = 1.0 / RATE if RATE > 0 else 0.0
            start = time.monotonic()
            for i in range(N):
                if gap:
                    wait = start + i * gap - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                yield TextDelta(f"{time.monotonic_ns()};")
            yield UsageDelta(Usage(1, N))
            yield FinishDelta("stop")

    stream = Agent(name="stream", model=Stamping())

    @tool
    async def hold() -> str:
        "Wait until released."
        root = Path(__file__).parent
        while not (root / "release").exists():
            await asyncio.sleep(0.05)
        return "released"

    def held():
        return Agent(name="held", model=ScriptedProvider([call("hold", {}), text("ok")]), tools=[hold])
    """
)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def start(
    root: Path, state: Path, env: dict[str, str], sink: Any
) -> tuple[StdioClient, float, float]:
    client = StdioClient(on_event=sink, settings={"agent": "agent.py:stream"}, env=env)
    t0 = time.perf_counter()
    await client.start(root, {"client": "bench", "approvals": "events", "stateDir": str(state)})
    t_init = time.perf_counter() - t0
    await client.request("lovia/status", {})
    t_ready = time.perf_counter() - t0
    return client, t_init, t_ready


async def startup(root: Path, repeat: int) -> None:
    inits, readies = [], []
    for i in range(repeat):
        client, t_init, t_ready = await start(root, root / f".state-start-{i}", {}, lambda e: None)
        inits.append(t_init * 1000)
        readies.append(t_ready * 1000)
        await client.close()
    print(
        f"spawn -> initialize result: median {statistics.median(inits):.0f} ms "
        f"(min {min(inits):.0f}); -> runtime ready: median {statistics.median(readies):.0f} ms"
    )


async def stream_answer(root: Path, deltas: int, rate: float) -> None:
    latencies: list[float] = []
    received = 0
    first = last = 0.0
    done = asyncio.Event()

    def sink(event: dict[str, Any]) -> None:
        nonlocal received, first, last
        now = time.monotonic_ns()
        if event["kind"] == "message.delta":
            stamps = [int(s) for s in event["text"].split(";") if s]
            latencies.extend((now - s) / 1e6 for s in stamps)
            received += 1
            last = time.perf_counter()
            if received == 1:
                first = last
        elif event["kind"] == "run.finished":
            done.set()

    env = {"BENCH_DELTAS": str(deltas), "BENCH_RATE": str(rate)}
    client, _, _ = await start(root, root / f".state-stream-{rate:g}", env, sink)
    await client.request("lovia/run", {"prompt": "stream", "agent": "agent.py:stream"})
    await asyncio.wait_for(done.wait(), 300)
    await client.close()
    latencies.sort()
    span = max(last - first, 1e-3)
    label = f"at {rate:.0f}/s" if rate else "as fast as they come"
    print(
        f"{deltas} deltas {label:<20}: {received:5d} notifications "
        f"({received / span:7.0f} events/s), deltas delivered {len(latencies)}, "
        f"latency p50 {latencies[len(latencies) // 2]:6.1f} ms, "
        f"p99 {latencies[int(len(latencies) * 0.99)]:6.1f} ms"
    )


async def memory(root: Path, runs: int) -> None:
    client, _, _ = await start(root, root / ".state-mem", {}, lambda e: None)
    assert client.proc is not None
    base = rss_kib(client.proc.pid)
    for _ in range(runs):
        await client.request("lovia/run", {"prompt": "hold", "agent": "agent.py:held"})
    status: dict[str, Any] = {}
    for _ in range(200):
        status = await client.request("lovia/status", {})
        if len(status["liveRuns"]) == runs:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)
    live = rss_kib(client.proc.pid)
    (root / "release").write_text("go")
    await client.close()
    print(
        f"server RSS: idle {base / 1024:.1f} MiB, with {len(status['liveRuns'])} live runs "
        f"{live / 1024:.1f} MiB (+{(live - base) / runs:.0f} KiB per run)"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=2000.0, help="deltas per second (0 = burst)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        (root / "agent.py").write_text(AGENT)
        await startup(root, args.repeat)
        await stream_answer(root, args.deltas, args.rate)
        await stream_answer(root, args.deltas, 0)  # burst: notification throughput
        await memory(root, 20)


if __name__ == "__main__":
    asyncio.run(main())
