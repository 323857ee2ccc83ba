"""Load with a slow client: concurrent fast-streaming runs, stdout read at a set rate (not a test).

    .venv/bin/python bench/load_bench.py [--runs 20] [--deltas 4000] [--rate 20000] [--stall 0]

The real server runs ``--runs`` runs at once, each streaming ``--deltas`` deltas of ``--chars``
characters (60) as fast as the loop lets it (an in-process provider). The client reads the server's
stdout with plain ``os.read`` throttled to ``--rate`` bytes per second
(``tests/support/slow_client.py``); with ``--stall S`` it stops reading entirely for S seconds
once the runs are streaming. During the load it sends ``lovia/status`` 100 ms after each answer
(one at a time) and times the answer: to the response's first byte and to the whole response
read; ``--trace`` splits that into the server's own time, the writer's wait (the frames ahead of
it in the answer lane and the one being written) and the pipe.

The load phase ends when the client has seen every run's ``run.finished`` (or after
``--max-load`` seconds); the client then reads at full speed and replays every run. Printed as
JSON: the server's peak RSS (VmHWM), ``lovia/status`` p50/p99/max, for each run events stored
(rows in ``state.db``), delivered live, and replayed (and whether the replay is seq 1..N exactly
once, in order), events the server did not send (the client catches up through replay), and
runs that finished while the client was not reading.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.slow_client import SlowClient  # noqa: E402

AGENT = textwrap.dedent(
    """
    import asyncio, os
    from lovia import Agent
    from lovia.messages import Usage
    from lovia.transcript import FinishDelta, TextDelta, UsageDelta

    N = int(os.environ.get("BENCH_DELTAS", "4000"))
    CHUNK = "x" * (int(os.environ.get("BENCH_CHARS", "60")) - 1) + " "
    # Spread the stream over BENCH_SECONDS (0: as fast as the loop lets it).
    PAUSE = float(os.environ.get("BENCH_SECONDS", "0")) * 20 / max(N, 1)

    class Fast:
        name = "fast"
        model = "fast"
        supports_json_schema = False

        async def stream(self, entries, **kw):
            for i in range(N):
                if i % 20 == 0:
                    await asyncio.sleep(PAUSE)  # let the other runs (and requests) in
                yield TextDelta(CHUNK)
            yield UsageDelta(Usage(1, N))
            yield FinishDelta("stop")

    fast = Agent(name="fast", model=Fast())
    """
)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def stored(db: Path) -> dict[str, dict[str, Any]]:
    """Per run: stored event count and max seq, and whether run.finished is stored."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = con.execute(
            "SELECT run_id, COUNT(*), MAX(seq), "
            'SUM(CASE WHEN body LIKE \'%"kind":"run.finished"%\' THEN 1 ELSE 0 END) '
            "FROM server_run_events GROUP BY run_id"
        ).fetchall()
    finally:
        con.close()
    return {r[0]: {"count": r[1], "max_seq": r[2], "finished": bool(r[3])} for r in rows}


def _split_latency(trace: Path, sent_at: dict[str, tuple[float, float]]) -> dict[str, Any]:
    """Each traced lovia/status answer in three parts (ms, p50/p99): the server's own time (the
    request sent -> its answer handed to the writer), the writer's wait (-> taken to be written:
    the frame it was writing first), and the pipe (-> the answer's first byte at the client)."""
    try:
        stamps: dict[str, list[int]] = json.loads(trace.read_text())
    except (OSError, ValueError):
        return {"error": "no trace written"}
    parts: dict[str, list[float]] = {"server": [], "writer_wait": [], "pipe": []}
    for msg_id, (sent, first) in sent_at.items():
        queued, taken = stamps.get(msg_id, [0, 0])
        if not queued or not taken:
            continue
        parts["server"].append((queued / 1e9 - sent) * 1000)
        parts["writer_wait"].append((taken - queued) / 1e6)
        parts["pipe"].append(max(0.0, first - taken / 1e9) * 1000)
    return {
        name: {
            "samples": len(values),
            "p50_ms": round(percentile(values, 0.5), 1),
            "p99_ms": round(percentile(values, 0.99), 1),
            "max_ms": round(max(values, default=float("nan")), 1),
        }
        for name, values in parts.items()
    }


async def bench(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    state = root / ".state"
    env = {
        **os.environ,
        "BENCH_DELTAS": str(args.deltas),
        "BENCH_CHARS": str(args.chars),
        "BENCH_SECONDS": str(args.seconds),
        "LOVIA_CONFIG_TIMEOUT": "10",
        "LOVIA_LOG_LEVEL": "INFO",
    }
    for key in [k for k in env if k.endswith("_API_KEY")]:
        del env[key]
    settings = {"agent": "agent.py:fast"}
    trace = root / "trace.json"
    command = None
    if args.trace:
        env["LOVIA_TRACE_FILE"] = str(trace)
        command = [sys.executable, str(ROOT / "bench" / "traced_load_server.py")]
    client = SlowClient(
        settings=settings, env=env, stderr_path=root / "server.log", command=command
    )
    init = {"client": "bench", "approvals": "events", "stateDir": str(state)}
    await client.initialize(root, init)
    await client.request("lovia/status", {})
    client.rate = args.rate or None  # 0: as fast as it can

    finished: dict[str, str] = {}
    all_finished = asyncio.Event()
    live_seqs: dict[str, list[int]] = {}

    def on_event(event: dict[str, Any]) -> None:
        live_seqs.setdefault(event["runId"], []).append(event["seq"])
        if event["kind"] == "run.finished" and event["runId"] in run_ids:
            finished[event["runId"]] = event["status"]
            if len(finished) == len(run_ids):
                all_finished.set()

    client.on_event(on_event)
    run_ids: set[str] = set()
    started = time.monotonic()
    # Started together, as a client would; each answer may queue behind the others' events.
    answers = await asyncio.gather(
        *(
            client.request_frame(
                "lovia/run", {"prompt": f"go {i}", "agent": "agent.py:fast"}, within=900
            )
            for i in range(args.runs)
        )
    )
    run_ids.update(a.message["result"]["runId"] for a in answers)
    run_answer_ms = sorted((a.complete - started) * 1000 for a in answers)

    latencies: list[float] = []
    delivery: dict[str, Any] = {}
    first_bytes: list[float] = []
    sent_at: dict[str, tuple[float, float]] = {}  # answer id -> (sent, first byte), monotonic
    timeouts = 0
    sizes: list[int] = []
    peak_rss = 0

    async def one_status() -> None:
        nonlocal timeouts
        sent = time.monotonic()
        try:
            frame = await client.request_frame("lovia/status", {}, within=args.max_load + 60)
        except TimeoutError:
            timeouts += 1
            return
        latencies.append((frame.complete - sent) * 1000)
        first_bytes.append((max(frame.first_byte, sent) - sent) * 1000)
        sent_at[str(frame.message.get("id"))] = (sent, max(frame.first_byte, sent))
        sizes.append(len(json.dumps(frame.message)))
        delivery.update((frame.message.get("result") or {}).get("delivery") or {})

    async def sampler() -> None:
        # One status request at a time, the next 100 ms after the last answer, as an editor
        # polls: probes sent regardless of the answers would themselves fill a slow pipe.
        nonlocal peak_rss
        while not all_finished.is_set():
            await one_status()
            peak_rss = max(peak_rss, client.memory_kib().get("VmRSS", 0))
            await asyncio.sleep(0.1)

    stall: dict[str, Any] = {}

    async def staller() -> None:
        if args.stall <= 0:
            return
        await asyncio.sleep(1.0)
        client.pause()
        before = stored(state / "state.db")
        await asyncio.sleep(args.stall)
        after = stored(state / "state.db")
        stall.update(
            seconds=args.stall,
            events_stored_while_stopped=sum(r["count"] for r in after.values())
            - sum(r["count"] for r in before.values()),
            runs_finished_while_stopped=sum(
                1
                for k, r in after.items()
                if r["finished"] and not before.get(k, {}).get("finished")
            ),
            rss_kib_at_end_of_stall=client.memory_kib().get("VmRSS", 0),
        )
        client.resume()

    sampling = asyncio.create_task(sampler())
    stalling = asyncio.create_task(staller())
    try:
        await asyncio.wait_for(all_finished.wait(), args.max_load)
        load_complete = True
    except TimeoutError:
        load_complete = False
    load_seconds = time.monotonic() - started
    await stalling
    # Catch up: read at full speed, wait for the outstanding answers and every run.finished.
    client.rate = None
    await asyncio.wait_for(all_finished.wait(), 600)
    await sampling
    memory = client.memory_kib()

    db = stored(state / "state.db")
    runs: list[dict[str, Any]] = []
    for run_id in sorted(run_ids):
        replay = await client.request("lovia/replay", {"runId": run_id, "afterSeq": 0}, within=300)
        seqs = [e["seq"] for e in replay["events"]]
        n = db[run_id]["count"]
        live = live_seqs.get(run_id, [])
        runs.append(
            {
                "stored": n,
                "replayed": len(seqs),
                "replay_complete": seqs == list(range(1, n + 1)) and db[run_id]["max_seq"] == n,
                "delivered_live": len(live),
                "duplicates_live": len(live) - len(set(live)),
                "not_sent": n - len(set(live)),
                "status": finished.get(run_id),
            }
        )
    log = (root / "server.log").read_text(errors="replace")
    await client.close()
    split = _split_latency(trace, sent_at) if args.trace else None
    stored_total = sum(r["stored"] for r in runs)
    return {
        "runs": args.runs,
        "deltas_per_run": args.deltas,
        "chars_per_delta": args.chars,
        "stream_seconds": args.seconds,
        "read_rate_bytes_per_s": args.rate,
        "stall": stall or None,
        "load_seconds": round(load_seconds, 1),
        "load_complete": load_complete,
        "run_answers_ms": {"first": round(run_answer_ms[0]), "last": round(run_answer_ms[-1])},
        "peak_rss_mib": round(memory.get("VmHWM", 0) / 1024, 1),
        "peak_rss_sampled_mib": round(peak_rss / 1024, 1),
        "status": {
            "samples": len(latencies),
            "timeouts": timeouts,
            "p50_ms": round(percentile(latencies, 0.5), 1),
            "p99_ms": round(percentile(latencies, 0.99), 1),
            "max_ms": round(max(latencies, default=float("nan")), 1),
            "first_byte_p50_ms": round(percentile(first_bytes, 0.5), 1),
            "first_byte_p99_ms": round(percentile(first_bytes, 0.99), 1),
            "response_bytes": int(statistics.median(sizes)) if sizes else 0,
            "read_floor_ms": round(statistics.median(sizes) / args.rate * 1000, 1)
            if sizes and args.rate
            else 0,
        },
        "status_split": split,
        "delivery": delivery,
        "events_stored": stored_total,
        "events_replayed": sum(r["replayed"] for r in runs),
        "replay_complete_runs": sum(r["replay_complete"] for r in runs),
        "events_delivered_live": sum(r["delivered_live"] for r in runs),
        "events_not_sent": sum(r["not_sent"] for r in runs),
        "duplicates_live": sum(r["duplicates_live"] for r in runs),
        "runs_completed": sum(r["status"] == "completed" for r in runs),
        "writer_log": [
            line[line.find("writer.") :] for line in log.splitlines() if "writer." in line
        ][-5:],
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--deltas", type=int, default=4000)
    parser.add_argument("--chars", type=int, default=60, help="characters per delta")
    parser.add_argument(
        "--seconds", type=float, default=0, help="spread each run's stream over this long"
    )
    parser.add_argument("--rate", type=float, default=20_000, help="client read rate, bytes/s")
    parser.add_argument("--stall", type=float, default=0, help="seconds the client stops reading")
    parser.add_argument("--max-load", type=float, default=120, help="seconds before catching up")
    parser.add_argument(
        "--trace",
        action="store_true",
        help="split each lovia/status latency into server, writer wait and pipe (traced server)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        (root / "agent.py").write_text(AGENT)
        result = await bench(args, root)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
