"""Server start-up as a ratio to the floor (not a test).

    .venv/bin/python bench/startup_bench.py [--runs 9]

The floor is what any pygls server pays before it can answer: a fresh interpreter importing
pygls and lsprotocol (``python -c 'import pygls.lsp.server, lsprotocol.types'``), timed from
the spawn to the line it prints once the imports are done. The server is timed from its
spawn to the ``initialize`` result, and to the answer of a ``lovia/status`` request sent right
after ``initialized`` (the runtime is ready: runs can start). Floor and server samples
alternate, so both see the same machine load; medians count.

Targets (issue 17): ``initialize`` <= 1.1x the floor, ready <= 1.5x the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lovia_server.client import StdioClient  # noqa: E402

FLOOR = "import pygls.lsp.server, lsprotocol.types, sys; sys.stdout.write('ok\\n')"
INIT_TARGET = 1.1
READY_TARGET = 1.5


async def floor_sample(cwd: Path) -> float:
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", FLOOR, cwd=cwd, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    line = await proc.stdout.readline()
    elapsed = time.perf_counter() - start
    await proc.wait()
    if line.strip() != b"ok":
        raise SystemExit("the floor process failed")
    return elapsed


async def server_sample(root: Path, state: Path) -> tuple[float, float]:
    client = StdioClient(on_event=lambda e: None, settings={"model": "openai:bench"})
    start = time.perf_counter()
    await client.start(root, {"client": "bench", "approvals": "events", "stateDir": str(state)})
    initialized = time.perf_counter() - start
    await client.request("lovia/status", {})
    ready = time.perf_counter() - start
    await client.close()
    return initialized, ready


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "bench")
    os.environ.setdefault("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        await floor_sample(root)  # warm-up: the page cache, bytecode
        await server_sample(root, root / "state-warm")
        floors, inits, readies = [], [], []
        for i in range(args.runs):
            floors.append(await floor_sample(root))
            init, ready = await server_sample(root, root / f"state-{i}")
            inits.append(init)
            readies.append(ready)
    load = os.getloadavg()
    floor = statistics.median(floors)
    init = statistics.median(inits)
    ready = statistics.median(readies)

    def ms(values: list[float]) -> str:
        return (
            f"median {statistics.median(values) * 1000:6.1f} ms "
            f"(min {min(values) * 1000:6.1f}, max {max(values) * 1000:6.1f})"
        )

    print(f"{args.runs} samples each; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"floor (import pygls + lsprotocol): {ms(floors)}")
    print(f"spawn -> initialize result:        {ms(inits)}")
    print(f"spawn -> runtime ready:            {ms(readies)}")
    for label, value, target in (
        ("initialize", init, INIT_TARGET),
        ("ready", ready, READY_TARGET),
    ):
        verdict = "meets" if value / floor <= target else "misses"
        print(f"  {label:<10} {value / floor:5.2f}x the floor  {verdict} the {target}x target")


if __name__ == "__main__":
    asyncio.run(main())
