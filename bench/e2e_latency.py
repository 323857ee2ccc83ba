"""End-to-end streaming latency: model server -> OpenAI SDK -> lovia server -> client (not a test).

    .venv/bin/python bench/e2e_latency.py [--repeat 3] [--paced-rate 2000] [--deltas 10000]

Three processes, as in the editor: ``bench/stamp_model.py`` (a fake OpenAI server) streams
deltas whose text is the ``time.monotonic_ns()`` of their sending; the real lovia server
(``bench/traced_server.py``: the server, plus a note of when each stamp reached the provider's
SSE parser) runs the built-in coding agent on ``openai:bench`` through the real OpenAI SDK; this
client reads the server's stdout and stamps every frame with the moment its bytes were read.
Each repeat starts a fresh server and measures:

- cold start: a ``lovia/run`` sent right after ``initialized`` (it waits for the runtime), and
  on a second fresh server the first run ``--idle`` seconds after start (the editor's usual
  case: the server warmed up meanwhile);
- TTFT overhead: the first delta's arrival at the client minus its arrival at the provider
  (and minus its sending by the model server), and ``lovia/run`` -> the model server receiving
  the chat request (agent build, session load, view render, request encoding; a first run
  also pays a context-window probe unless the server warmed it);
- paced: ``--deltas`` deltas at ``--paced-rate``/s: latency p50, p99, max from the model
  server's send (loopback and the HTTP stack included) and from the provider's arrival;
- burst: ``--deltas`` deltas as fast as the socket takes them: deltas/s end to end (first
  sending to last arrival) and the median wait, from the provider's arrival (lovia's own
  share) and from the model's send (which also counts the time deltas queue in the kernel's
  socket buffers while the server works through the burst);
- TCP connections the server opened to the model server during each run.

Targets (issue 17), on a quiet machine: paced p99 <= 5 ms, burst >= 20,000 deltas/s with a
median wait <= 50 ms, TTFT overhead <= 10 ms.

This client reads the pipe in 1 MB chunks, the kindest reader a transport can have; the paced
and burst streams as the extension's ``vscode-jsonrpc``, a plain asyncio client and Neovim see
them are ``bench/e2e_clients.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lovia_server.chat.client import StdioClient  # noqa: E402
from tests.support.raw_lsp import split_frames  # noqa: E402


class StampingClient(StdioClient):
    """``StdioClient`` whose reader notes when each frame's bytes were read (``arrival``)."""

    arrival = 0

    async def start(self, root: Path, init_options: dict[str, Any]) -> dict[str, Any]:
        """``StdioClient.start``, but the server is ``bench/traced_server.py``."""
        self.proc = await asyncio.create_subprocess_exec(
            self.python,
            str(ROOT / "bench" / "traced_server.py"),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, **(self.env or {})},
            start_new_session=True,
        )
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())
        result = await self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root.as_uri(),
                "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
                "capabilities": {"workspace": {"configuration": True}},
                "initializationOptions": {"lovia": init_options},
            },
        )
        self.notify("initialized", {})
        return dict(result)

    async def _read_loop(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        buffer = b""
        try:
            while True:
                data = await stdout.read(1 << 20)
                if not data:
                    raise EOFError
                self.arrival = time.monotonic_ns()
                bodies, buffer = split_frames(buffer + data)
                for body in bodies:
                    await self._dispatch(json.loads(body))
        except (EOFError, ConnectionError):
            pass
        finally:
            self._gone = True
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("the lovia server exited"))


@dataclass
class Run:
    """One ``lovia/run`` as the client saw it: (stamp, arrival at the client) per delta."""

    sent_ns: int
    pairs: list[tuple[int, int]] = field(default_factory=list)
    notifications: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)
    status: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    def waits_ms(self, provider: dict[str, int] | None = None) -> list[float]:
        """Client arrival minus the model's send, or minus the provider's arrival."""
        if provider is None:
            return [(arrival - stamp) / 1e6 for stamp, arrival in self.pairs]
        return [(arrival - provider[f"{stamp};"]) / 1e6 for stamp, arrival in self.pairs]


class Bench:
    def __init__(self, root: Path, base_url: str) -> None:
        self.root = root
        self.base_url = base_url
        self.client: StampingClient | None = None
        self.current: Run | None = None
        self._stats: http.client.HTTPConnection | None = None
        self._stats_connections = 0

    def stats(self) -> dict[str, Any]:
        """The model server's counters, over one kept-alive connection of our own."""
        if self._stats is None:
            url = urllib.parse.urlsplit(self.base_url)
            self._stats = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
            self._stats.request("GET", "/stats")
            self._stats.getresponse().read()
            self._stats_connections = 1
        self._stats.request("GET", "/stats")
        stats: dict[str, Any] = json.loads(self._stats.getresponse().read())
        stats["connections"] -= self._stats_connections
        return stats

    def on_event(self, event: dict[str, Any]) -> None:
        run = self.current
        assert self.client is not None
        if run is None:
            return
        arrival = self.client.arrival
        if event["kind"] == "message.delta":
            run.pairs.extend((int(s), arrival) for s in event["text"].split(";") if s)
            run.notifications += 1
        elif event["kind"] == "run.finished":
            run.status = event["status"]
            run.done.set()

    async def start(self, state: Path, trace: Path) -> float:
        env = {
            "OPENAI_BASE_URL": self.base_url,
            "OPENAI_API_KEY": "bench",
            "LOVIA_TRACE_FILE": str(trace),
        }
        self.client = StampingClient(
            on_event=self.on_event,
            settings={"model": "openai:bench"},
            env=env,
        )
        start = time.perf_counter()
        await self.client.start(
            self.root, {"client": "bench", "approvals": "events", "stateDir": str(state)}
        )
        return time.perf_counter() - start

    async def run(self, prompt: str) -> Run:
        assert self.client is not None
        before = self.stats()
        run = self.current = Run(sent_ns=time.monotonic_ns())
        await self.client.request("lovia/run", {"prompt": prompt})
        await asyncio.wait_for(run.done.wait(), 300)
        self.current = None
        after = self.stats()
        if run.status != "completed":
            raise SystemExit(f"the run ended {run.status}")
        new = after["requests"][len(before["requests"]) :]
        chat = next(r for r in new if r["method"] == "POST")
        run.info = {
            "run_to_request_ms": (chat["arrivedNs"] - run.sent_ns) / 1e6,
            "probe": any(r["method"] == "GET" for r in new),
            "connections": after["connections"] - before["connections"],
        }
        return run

    async def close(self) -> None:
        if self.client is not None:
            await self.client.close()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def ttft(run: Run, provider: dict[str, int]) -> tuple[float, float]:
    """(first delta: client arrival - provider arrival, client arrival - model send) in ms."""
    stamp, arrival = run.pairs[0]
    return (arrival - provider[f"{stamp};"]) / 1e6, (arrival - stamp) / 1e6


async def repeat_once(root: Path, base_url: str, index: int, args: argparse.Namespace) -> dict:
    bench = Bench(root, base_url)
    trace = root / f"trace-{index}.json"
    try:
        await bench.start(root / f".state-{index}", trace)
        cold = await bench.run("hello")
        warm = [await bench.run("hello") for _ in range(args.ttft_runs)]
        paced = await bench.run(f"paced {args.paced_rate:g} {args.deltas}")
        burst = await bench.run(f"burst {args.deltas}")
    finally:
        await bench.close()
    # The editor's usual first run: the user types a prompt a moment after the server started.
    later = Bench(root, base_url)
    later_trace = root / f"trace-idle-{index}.json"
    try:
        await later.start(root / f".state-idle-{index}", later_trace)
        await asyncio.sleep(args.idle)
        idle = await later.run("hello")
    finally:
        await later.close()
    provider: dict[str, int] = json.loads(trace.read_text())
    out: dict[str, Any] = {}
    idle_provider: dict[str, int] = json.loads(later_trace.read_text())
    out["idle_ttft_ms"], out["idle_ttft_from_send_ms"] = ttft(idle, idle_provider)
    out["idle_run_to_request_ms"] = idle.info["run_to_request_ms"]
    out["idle_probe_in_run"] = idle.info["probe"]
    out["idle_connections"] = idle.info["connections"]
    out["cold_ttft_ms"], out["cold_ttft_from_send_ms"] = ttft(cold, provider)
    out["cold_run_to_request_ms"] = cold.info["run_to_request_ms"]
    out["cold_probe_in_run"] = cold.info["probe"]
    firsts = [ttft(run, provider) for run in warm]
    out["ttft_ms"] = statistics.median(f[0] for f in firsts)
    out["ttft_from_send_ms"] = statistics.median(f[1] for f in firsts)
    out["run_to_request_ms"] = statistics.median(r.info["run_to_request_ms"] for r in warm)
    out["connections"] = [r.info["connections"] for r in (cold, *warm, paced, burst)]
    for run in (paced, burst):
        assert len(run.pairs) == args.deltas, len(run.pairs)
    sent, inside = paced.waits_ms(), paced.waits_ms(provider)
    out["paced_p50_ms"], out["paced_p99_ms"] = pct(sent, 0.5), pct(sent, 0.99)
    out["paced_max_ms"] = max(sent)
    out["paced_inside_p50_ms"], out["paced_inside_p99_ms"] = pct(inside, 0.5), pct(inside, 0.99)
    out["paced_notifications"] = paced.notifications
    span = (burst.pairs[-1][1] - burst.pairs[0][0]) / 1e9
    out["burst_rate"] = args.deltas / span
    out["burst_wait_ms"] = statistics.median(burst.waits_ms(provider))
    out["burst_wait_from_send_ms"] = statistics.median(burst.waits_ms())
    out["burst_notifications"] = burst.notifications
    return out


def spread(rows: list[dict[str, Any]], key: str, fmt: str) -> str:
    values = [row[key] for row in rows]
    if len(values) == 1:
        return format(values[0], fmt)
    return f"{format(min(values), fmt)} .. {format(max(values), fmt)}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="fresh servers, one after another")
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--paced-rate", type=float, default=2000.0)
    parser.add_argument("--ttft-runs", type=int, default=5)
    parser.add_argument(
        "--idle", type=float, default=3.0, help="seconds a second server idles before its first run"
    )
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    model = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "stamp_model.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert model.stdout is not None and model.stdin is not None
    base_url = model.stdout.readline().strip()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp).resolve()
            for index in range(args.repeat):
                rows.append(await repeat_once(root, base_url, index, args))
    finally:
        model.stdin.close()
        model.wait(timeout=10)
    load = os.getloadavg()

    def r(key: str, fmt: str = ".2f") -> str:
        return spread(rows, key, fmt)

    print(
        f"{args.repeat} fresh servers; {args.deltas} deltas per stream; "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (ranges: min .. max)"
    )
    print(
        f"paced {args.paced_rate:g}/s, from the model's send: p50 {r('paced_p50_ms')} ms, "
        f"p99 {r('paced_p99_ms')} ms, max {r('paced_max_ms', '.1f')} ms; "
        f"{r('paced_notifications', 'd')} notifications"
    )
    print(
        f"  from the provider's arrival: p50 {r('paced_inside_p50_ms')} ms, "
        f"p99 {r('paced_inside_p99_ms')} ms"
    )
    print(
        f"burst: {r('burst_rate', ',.0f')} deltas/s end to end; median wait from the provider's "
        f"arrival {r('burst_wait_ms', '.1f')} ms (from the model's send "
        f"{r('burst_wait_from_send_ms', '.1f')} ms); {r('burst_notifications', 'd')} notifications"
    )
    print(
        f"TTFT overhead (first delta at the client - at the provider): warm {r('ttft_ms')} ms, "
        f"first run {r('cold_ttft_ms')} ms (from the model's send: warm "
        f"{r('ttft_from_send_ms')} ms, first run {r('cold_ttft_from_send_ms')} ms)"
    )
    probes = [row["cold_probe_in_run"] for row in rows]
    print(
        f"lovia/run -> chat request at the model server: warm {r('run_to_request_ms', '.1f')} ms,"
        f" first run sent right after initialized {r('cold_run_to_request_ms', '.1f')} ms "
        f"(window probe inside that run: {probes})"
    )
    idle_probes = [row["idle_probe_in_run"] for row in rows]
    print(
        f"first run {args.idle:g} s after start: lovia/run -> chat request "
        f"{r('idle_run_to_request_ms', '.1f')} ms, TTFT overhead {r('idle_ttft_ms')} ms; "
        f"window probe inside it: {idle_probes}; new TCP connections in it: "
        f"{[row['idle_connections'] for row in rows]}"
    )
    print(f"TCP connections opened per run: {[row['connections'] for row in rows]}")
    if args.json:
        Path(args.json).write_text(json.dumps({"load": load, "rows": rows}, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
