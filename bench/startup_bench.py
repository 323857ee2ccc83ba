"""Server start-up as a ratio to the floor (not a test).

    .venv/bin/python bench/startup_bench.py [--runs 9]

The floor is what any pygls server pays before it can answer: a fresh interpreter importing
pygls and lsprotocol (``python -c 'import pygls.lsp.server, lsprotocol.types'``), timed from
the spawn to the line it prints once the imports are done. The server is timed from its
spawn to the ``initialize`` result, and to the answer of a ``lovia/status`` request sent right
after ``initialized`` (the runtime is ready: runs can start). Floor and server samples
alternate, so both see the same machine load; medians count.

"Ready" must not hide cost the first run then pays, so two more server samples time the answer
of a ``lovia/run`` sent right after ``initialized``: one with the built-in coding agent on an
``openai:`` model (the real openai SDK, pointed at a local fake server, so nothing leaves the
machine), one with an in-process agent file (``agent.py:fast``, no vendor SDK at all). Each
also reports the run's ``run.finished``.

Bytecode: the floor's packages are installed with ``.pyc`` files, a checkout may have none (and
``PYTHONDONTWRITEBYTECODE`` may be set), which would time the compiler on the server's side
only. So every child runs with bytecode writing on and ``PYTHONPYCACHEPREFIX`` in a temporary
directory, and one warm-up sample of each kind compiles everything before any sample is taken
(as in ``bench/import_bench.py``). Nothing is written into the checkout.

Targets: ``initialize`` <= 1.5x the floor (issue 24: with no cache of generated code and no
garbage-collector or interpreter switches, which the server no longer has), ready <= 1.5x (issue
17's, met then with those tricks; about 1.8x without them).
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
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lovia_server.chat.client import StdioClient  # noqa: E402
from tests.support import fake_openai as oai  # noqa: E402

FLOOR = "import pygls.lsp.server, lsprotocol.types, sys; sys.stdout.write('ok\\n')"
INIT_TARGET = 1.5
READY_TARGET = 1.5
AGENT = """
from lovia import Agent
from lovia.messages import Usage
from lovia.transcript import FinishDelta, TextDelta, UsageDelta


class Fast:
    name = "fast"
    model = "fast"
    supports_json_schema = False

    async def stream(self, entries, **kw):
        yield TextDelta("done")
        yield UsageDelta(Usage(1, 1))
        yield FinishDelta("stop")


fast = Agent(name="fast", model=Fast())
"""


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


async def run_sample(
    root: Path, state: Path, settings: dict[str, Any], env: dict[str, str]
) -> tuple[float, float]:
    """Spawn -> the answer of a ``lovia/run`` sent right after ``initialized``, and -> its
    ``run.finished``."""
    finished = asyncio.Event()

    def on_event(event: dict[str, Any]) -> None:
        if event.get("kind") == "run.finished":
            finished.set()

    client = StdioClient(on_event=on_event, settings=settings, env=env)
    start = time.perf_counter()
    await client.start(root, {"client": "bench", "approvals": "events", "stateDir": str(state)})
    await client.request("lovia/run", {"prompt": "hello"})
    answered = time.perf_counter() - start
    await asyncio.wait_for(finished.wait(), 60)
    done = time.perf_counter() - start
    await client.close()
    return answered, done


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.setdefault("OPENAI_API_KEY", "bench")
    os.environ.setdefault("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    fake = oai.FakeOpenAI(responder=lambda request: oai.text("done")).start()
    builtin = ({"model": f"openai:{oai.MODEL}"}, fake.env())
    agent_file = ({"agent": "agent.py:fast"}, {"LOVIA_MODEL": ""})
    try:
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp).resolve()
            root = base / "ws"  # the state directories stay outside the workspace
            root.mkdir()
            os.environ["PYTHONPYCACHEPREFIX"] = str(base / "pycache")  # the children inherit it
            (root / "agent.py").write_text(AGENT)
            await floor_sample(root)  # warm-up: the page cache, bytecode
            await server_sample(root, base / "state-warm")
            await run_sample(root, base / "state-warm-run", *builtin)
            await run_sample(root, base / "state-warm-agent", *agent_file)
            floors, inits, readies = [], [], []
            builtin_runs: list[tuple[float, float]] = []
            file_runs: list[tuple[float, float]] = []
            for i in range(args.runs):
                floors.append(await floor_sample(root))
                init, ready = await server_sample(root, base / f"state-{i}")
                inits.append(init)
                readies.append(ready)
                builtin_runs.append(await run_sample(root, base / f"state-run-{i}", *builtin))
                file_runs.append(await run_sample(root, base / f"state-agent-{i}", *agent_file))
    finally:
        fake.stop()
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
    rows = [
        ("floor (import pygls + lsprotocol)", floors),
        ("spawn -> initialize result", inits),
        ("spawn -> runtime ready (lovia/status)", readies),
        ("spawn -> 1st run answered, built-in agent", [a for a, _ in builtin_runs]),
        ("spawn -> 1st run finished, built-in agent", [d for _, d in builtin_runs]),
        ("spawn -> 1st run answered, agent file", [a for a, _ in file_runs]),
        ("spawn -> 1st run finished, agent file", [d for _, d in file_runs]),
    ]
    for label, values in rows:
        print(f"{label + ':':<43} {ms(values)}")
    for label, value, target in (
        ("initialize", init, INIT_TARGET),
        ("ready", ready, READY_TARGET),
    ):
        verdict = "meets" if value / floor <= target else "misses"
        print(f"  {label:<10} {value / floor:5.2f}x the floor  {verdict} the {target}x target")
    for label, runs in (("built-in", builtin_runs), ("agent file", file_runs)):
        answered = statistics.median(a for a, _ in runs)
        print(f"  1st run answered ({label}) {answered / floor:5.2f}x the floor")


if __name__ == "__main__":
    asyncio.run(main())
