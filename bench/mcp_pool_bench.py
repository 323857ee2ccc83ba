"""Run start-up with one Python MCP server configured: a cold server per run vs the pool.

Drives the real language server (the test harness) with a fake OpenAI endpoint that answers
every turn with text. Each run is timed from ``lovia/run`` to its ``run.finished``; the model
call costs the same in both modes, so the difference is the server start a run no longer pays.

- ``cold``: ``mcpIdleTimeoutSeconds`` is tiny and the bench waits for the server to stop
  between runs, so every run starts the server, as before the pool (one start per run);
- ``pooled``: the default; the first run starts the server, later runs reuse it.

    python bench/mcp_pool_bench.py [--runs 6]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.server.harness import Harness  # noqa: E402
from tests.support import fake_openai as oai  # noqa: E402

SERVER = str(ROOT / "tests" / "support" / "mcp_stdio_server.py")


async def _idle(h: Harness) -> None:
    for _ in range(200):
        status = await h.request("lovia/status", {})
        if status["mcpServers"][0]["state"] == "idle":
            return
        await asyncio.sleep(0.05)
    raise RuntimeError("the server did not stop")


async def measure(mode: str, runs: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp, oai.FakeOpenAI() as fake:
        fake.responder = lambda request: oai.text("ok")
        root = Path(tmp) / "ws"
        root.mkdir()
        h = Harness(root.resolve(), Path(tmp) / "state")
        settings: dict[str, Any] = {
            "model": "openai:fake-model",
            "mcpServers": {"local": {"command": sys.executable, "args": [SERVER]}},
        }
        if mode == "cold":
            settings["mcpIdleTimeoutSeconds"] = 0.01
        await h.start(settings=settings, env=fake.env())
        try:
            times = []
            for _ in range(runs):
                began = time.perf_counter()
                run = await h.run("hello")
                done = await h.finished(run["runId"])
                times.append(time.perf_counter() - began)
                assert done["status"] == "completed", done
                if mode == "cold":
                    await _idle(h)
            starts = (await h.request("lovia/status", {}))["mcpServers"][0]["starts"]
            print(f"{mode:>6}: server starts {starts} over {runs} runs")
            return times
        finally:
            await h.stop()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=6)
    opts = parser.parse_args()
    results = {mode: await measure(mode, opts.runs) for mode in ("cold", "pooled")}
    for mode, times in results.items():
        later = times[1:]
        print(
            f"{mode:>6}: first run {times[0] * 1000:7.0f} ms, later runs median "
            f"{statistics.median(later) * 1000:7.0f} ms (min {min(later) * 1000:.0f})"
        )
    saved = statistics.median(results["cold"][1:]) - statistics.median(results["pooled"][1:])
    print(f"saved per run after the first: {saved * 1000:.0f} ms")


if __name__ == "__main__":
    asyncio.run(main())
