"""The "keep the lead" guards, ours beside the reference implementation (not a test).

    .venv/bin/python bench/guards.py [--reference /tmp/refvenv/bin/python] [--repeat 5]

The reference is PyPI's ``lovia`` 0.9.x in a venv of its own (see ``bench/import_bench.py``).
The same worker (this file with ``--worker``) runs under both interpreters, from an empty
directory so this checkout cannot shadow the reference, using only API both share:

1. per-turn overhead: a 200-turn tool loop on ``ScriptedProvider`` with a trivial tool, mean
   wall time per turn between ``TurnStarted`` events (per turn the median over ``--repeat``);
2. growth: an 800-turn loop with 2 KB tool results, last 50 turns over first 50 (<= 1.3);
3. HTTP client CPU per turn: a 50-turn tool loop straight through ``OpenAIChatProvider.stream``
   against a fake OpenAI server in another process; CPU of the worker per turn, per turn the
   least over 3 loops, then the median over turns;
4. TCP connections per run: a 10-turn ``Runner.run`` on ``OpenAIChatProvider`` (window probe
   included) counted at the fake server: 1 is the target;
5. resume of a 1,000-entry checkpoint (load + rebuild + one model turn), cold and warm,
   ours only (``bench/persistence_bench.py``): < 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REFERENCE = "/tmp/refvenv/bin/python"
RESULT = "def handler(request):\n    return process(request)  # line of code\n" * 30
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ')} in the workspace. " * 3,
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["path"],
            },
        },
    }
    for name in ("read_file", "write_file", "list_dir", "grep", "run_command", "edit_file")
]


# --------------------------------------------------------------------------- worker side


async def loop_per_turn(turns: int, payload: int) -> list[float]:
    from lovia import Agent, Runner, events, tool
    from lovia.testing import ScriptedProvider, call, text

    blob = "x" * payload

    @tool
    async def step(i: int) -> str:
        """Do one step."""
        return blob or "ok"

    script = [call("step", {"i": i}, call_id=f"c{i}") for i in range(turns - 1)]
    script.append(text("done"))
    try:  # ours can skip recording the requests it was sent (the reference never records)
        provider = ScriptedProvider(script, record=False)
    except TypeError:
        provider = ScriptedProvider(script)
    agent = Agent(name="bench", instructions="Benchmark.", model=provider, tools=[step])
    stamps: list[float] = []
    async for ev in Runner.stream(agent, "go", max_turns=turns + 1):
        if isinstance(ev, (events.TurnStarted, events.RunCompleted)):
            stamps.append(time.perf_counter())
    return [(b - a) * 1e6 for a, b in itertools.pairwise(stamps)]


async def loop_figures(turns: int, payload: int, repeat: int) -> list[float]:
    for _ in range(2):
        await loop_per_turn(turns, payload)
    runs = [await loop_per_turn(turns, payload) for _ in range(repeat)]
    return [statistics.median(samples) for samples in zip(*runs, strict=False)]


async def http_cpu(base_url: str, turns: int) -> list[float]:
    from lovia.providers.openai_chat import OpenAIChatProvider  # reference 0.9

    from lovia.transcript import InputEntry, ToolCallEntry, ToolResultEntry

    best: list[float] = []
    for _ in range(3):
        provider = OpenAIChatProvider("fake-model", base_url=base_url, api_key="k")
        entries: list[Any] = [
            InputEntry("system", "You are a coding agent. " * 40),
            InputEntry("user", "Refactor the request handlers in src/."),
        ]
        async for _ in provider.stream(entries, tools=TOOLS):  # warm-up: client, connection
            pass
        cpu = []
        for _ in range(turns):
            start = time.process_time()
            call: dict[str, str] = {}
            async for delta in provider.stream(entries, tools=TOOLS):
                if delta.type == "tool_call_delta":
                    call["id"] = delta.call_id or call.get("id", "")
                    call["name"] = delta.name or call.get("name", "")
                    call["arguments"] = call.get("arguments", "") + delta.arguments
            cpu.append((time.process_time() - start) * 1000)
            entries.append(ToolCallEntry(call["id"], call["name"], call["arguments"]))
            entries.append(ToolResultEntry(call["id"], RESULT))
        best = cpu if not best else [min(a, b) for a, b in zip(best, cpu, strict=True)]
        close = getattr(provider, "aclose", None)
        if close is not None:
            await close()
    return best


async def one_run(base_url: str, turns: int) -> None:
    from lovia.providers.openai_chat import OpenAIChatProvider

    from lovia import Agent, Runner, tool

    @tool
    async def read_file(path: str) -> str:
        """Read a file."""
        return RESULT

    provider = OpenAIChatProvider("fake-model", base_url=base_url, api_key="k")
    agent = Agent(name="bench", instructions="Benchmark.", model=provider, tools=[read_file])
    result = await Runner.run(agent, f"CONNECTIONS {turns}", max_turns=turns + 2)
    assert result.output, result


def _openai_module_alias() -> None:
    """Ours keeps the provider in ``lovia.providers.openai``; the reference in ``openai_chat``."""
    try:
        import lovia.providers.openai_chat  # noqa: F401
    except ImportError:
        import lovia.providers.openai as ours

        sys.modules["lovia.providers.openai_chat"] = ours


async def worker(task: str, base_url: str, repeat: int) -> dict[str, Any]:
    _openai_module_alias()
    if task == "loop":
        trivial = await loop_figures(200, 0, repeat)
        grown = await loop_figures(800, 2048, max(1, repeat // 2))
        return {
            "per_turn_us": statistics.fmean(trivial),
            "growth_first50_us": statistics.fmean(grown[:50]),
            "growth_last50_us": statistics.fmean(grown[-50:]),
        }
    if task == "http":
        cpu = await http_cpu(base_url, 50)
        return {
            "http_cpu_ms": statistics.median(cpu),
            "http_cpu_last5_ms": statistics.fmean(cpu[-5:]),
        }
    if task == "run":
        await one_run(base_url, 10)
        return {}
    raise SystemExit(f"unknown task {task}")


# --------------------------------------------------------------------------- orchestrator


def fake_server() -> Any:
    sys.path.insert(0, str(ROOT))
    from tests.support import fake_openai as oai

    def responder(request: Any) -> Any:
        body = request.json or {}
        messages = body.get("messages") or []
        turn = sum(1 for m in messages if m.get("role") == "tool")
        first = next((m for m in messages if m.get("role") == "user"), {})
        limit = 10**9
        if str(first.get("content", "")).startswith("CONNECTIONS"):
            limit = int(str(first["content"]).split()[1]) - 1
        if body.get("tools") and turn < limit:
            return oai.tool_calls(
                oai.call("read_file", {"path": f"src/module_{turn}.py"}, id=f"call_{turn}")
            )
        return oai.text("done")

    server = oai.FakeOpenAI(responder=responder)
    server.models = [{"id": "fake-model", "max_model_len": 131072}]
    server.start()
    # the reference drops its connections without closing them: not worth a traceback each
    server._httpd.handle_error = lambda request, address: None
    return server


def run_worker(python: str, task: str, base_url: str, repeat: int, cwd: str) -> dict[str, Any]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")
    }
    env["PYTHONPYCACHEPREFIX"] = str(Path(cwd) / "pycache")
    out = subprocess.run(
        [python, str(Path(__file__).resolve()), "--worker", task, base_url, str(repeat)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"{python} {task} failed:\n{out.stderr.strip()[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def resume_figures() -> str:
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "persistence_bench.py"), "--entries", "1000"],
        capture_output=True,
        text=True,
        check=True,
    )
    return next(line for line in out.stdout.splitlines() if line.startswith("resume"))


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        task, base_url, repeat = sys.argv[2], sys.argv[3], int(sys.argv[4])
        print(json.dumps(asyncio.run(worker(task, base_url, repeat))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reference", default=os.environ.get("LOVIA_REFERENCE_PYTHON"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    reference = args.reference or DEFAULT_REFERENCE
    sides = {"ours": sys.executable}
    if Path(reference).exists():
        sides["reference"] = reference
    else:
        print(f"reference skipped: no interpreter at {reference}")
    server = fake_server()
    figures: dict[str, dict[str, Any]] = {name: {} for name in sides}
    try:
        with tempfile.TemporaryDirectory() as cwd:
            for python in sides.values():  # warm-up: bytecode for both sides
                run_worker(python, "run", server.base_url, 1, cwd)
            for task in ("loop", "http"):
                for name, python in sides.items():
                    figures[name].update(
                        run_worker(python, task, server.base_url, args.repeat, cwd)
                    )
            for name, python in sides.items():
                before = server.connections
                run_worker(python, "run", server.base_url, 1, cwd)
                figures[name]["connections"] = server.connections - before
    finally:
        server.stop()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    ours = figures["ours"]
    ref = figures.get("reference")

    def versus(key: str, unit: str, fmt: str = ".1f") -> str:
        text = f"{format(ours[key], fmt)} {unit}"
        if ref is not None:
            text += f" (reference {format(ref[key], fmt)} {unit}: {ours[key] / ref[key]:.2f}x)"
        return text

    growth = ours["growth_last50_us"] / ours["growth_first50_us"]
    print(f"per-turn overhead, 200 trivial turns: {versus('per_turn_us', 'µs/turn')}")
    ref_growth = (
        f" (reference {ref['growth_last50_us'] / ref['growth_first50_us']:.2f})" if ref else ""
    )
    print(
        f"growth at 800 turns, last 50 / first 50: {growth:.2f}{ref_growth}  "
        f"[{'ok' if growth <= 1.3 else 'OVER TARGET'}: <= 1.3]"
    )
    print(f"HTTP client CPU per turn, 50-turn tool loop: {versus('http_cpu_ms', 'ms', '.2f')}")
    conns = ours["connections"]
    ref_conns = f" (reference {ref['connections']})" if ref else ""
    print(
        f"TCP connections in one 10-turn run: {conns}{ref_conns}  "
        f"[{'ok' if conns == 1 else 'OVER TARGET'}: 1]"
    )
    print(resume_figures())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
