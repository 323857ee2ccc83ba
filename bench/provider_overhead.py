"""Client CPU cost per model turn through ``OpenAIChatProvider`` (not a test).

    .venv/bin/python bench/provider_overhead.py [--turns 50] [--deltas 200] [--compare-sdk]

The fake OpenAI server (tests/support/fake_openai.py) runs in a *separate process*, so
``time.process_time()`` here counts only the client: building the request body, the SDK's
request machinery, HTTP, SSE parsing and delta objects. It includes kernel time for the
loopback sockets, printed separately (it depends on the machine, not on lovia). Per turn the
least of ``--repeat`` loops counts, which filters out other processes' noise on a shared
machine; a bare httpx2 request of the same body gives the HTTP stack's own floor.

Scenario 1, a tool loop: every turn the model asks for one tool call, the bench appends the
call and a ~1.5 KB tool result to the transcript (as the run loop does) and calls again, so
the request grows to ~100 messages. Scenario 2, the final answer: 200 text deltas.
``--compare-sdk`` runs the same tool loop through the SDK's typed
``client.chat.completions.create(...)`` for reference.

Targets (issue 4): <= 3 ms CPU per turn at 50 turns, no growth with transcript length.
Results are printed and written to bench/results/provider_overhead.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lovia.providers._clients import aclose_shared_clients  # noqa: E402
from lovia.providers._encoding import encode_body  # noqa: E402
from lovia.providers.openai import OpenAIChatProvider, entries_to_openai_messages  # noqa: E402
from lovia.transcript import (  # noqa: E402
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)

SERVER = """
import sys
from tests.support import fake_openai as oai

DELTAS = int(sys.argv[1])

def responder(request):
    body = request.json or {}
    if body.get("tools") and not str(body["messages"][-1].get("content", "")).startswith("FINAL"):
        turn = sum(1 for m in body["messages"] if m.get("role") == "tool")
        args = {"path": f"src/module_{turn}.py"}
        return oai.tool_calls(oai.call("read_file", args, id=f"call_{turn}"))
    return oai.text(*(["tok "] * DELTAS))

server = oai.FakeOpenAI(responder=responder).start()
print(server.base_url, flush=True)
sys.stdin.read()
server.stop()
"""

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name.replace('_', ' ')} in the workspace. " * 3,
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the root."},
                    "limit": {"type": "integer", "description": "Maximum lines."},
                },
                "required": ["path"],
            },
        },
    }
    for name in (
        "read_file",
        "write_file",
        "list_dir",
        "grep",
        "run_command",
        "edit_file",
        "glob",
        "todo_write",
    )
]
RESULT = "def handler(request):\n    return process(request)  # line of code\n" * 30  # ~1.5 KB


def start_server(deltas: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(deltas)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


async def lovia_turn(
    provider: OpenAIChatProvider, entries: list[TranscriptEntry]
) -> dict[str, Any]:
    call: dict[str, str] = {}
    deltas = 0
    async for delta in provider.stream(entries, tools=TOOLS):
        deltas += 1
        if delta.type == "tool_call_delta":
            call["id"] = delta.call_id or call.get("id", "")
            call["name"] = delta.name or call.get("name", "")
            call["arguments"] = call.get("arguments", "") + delta.arguments
    return {"call": call, "deltas": deltas}


def sdk_client(base_url: str) -> Any:
    import openai

    return openai.AsyncOpenAI(api_key="k", base_url=base_url, max_retries=0)


async def sdk_turn(client: Any, entries: list[TranscriptEntry]) -> dict[str, Any]:
    call: dict[str, str] = {}
    deltas = 0
    stream = await client.chat.completions.create(
        model="fake-model",
        messages=entries_to_openai_messages(entries),
        tools=TOOLS,
        stream=True,
        stream_options={"include_usage": True},
    )
    async for chunk in stream:
        deltas += 1
        for choice in chunk.choices:
            for tc in choice.delta.tool_calls or ():
                call["id"] = tc.id or call.get("id", "")
                call["name"] = (tc.function and tc.function.name) or call.get("name", "")
                args = (tc.function and tc.function.arguments) or ""
                call["arguments"] = call.get("arguments", "") + args
    return {"call": call, "deltas": deltas}


async def httpx2_floor(base_url: str, body: bytes) -> None:
    """The same request through a bare httpx2 client: the HTTP stack's own cost."""
    import httpx2

    global _FLOOR_CLIENT
    if _FLOOR_CLIENT is None:
        _FLOOR_CLIENT = httpx2.AsyncClient()
    headers = {"content-type": "application/json", "authorization": "Bearer k"}
    request = _FLOOR_CLIENT.build_request(
        "POST", base_url + "/chat/completions", content=body, headers=headers
    )
    response = await _FLOOR_CLIENT.send(request, stream=True)
    async for _ in response.aiter_raw():
        pass
    await response.aclose()


_FLOOR_CLIENT: Any = None


async def tool_loop(turns: int, base_url: str, mode: str) -> dict[str, list[float]]:
    """Per-turn CPU ms; ``mode`` is ``lovia`` (plus body-build and httpx2-floor figures)
    or ``sdk`` (the typed ``create()`` path)."""
    entries: list[TranscriptEntry] = [
        InputEntry("system", "You are a coding agent. " * 40),
        InputEntry("user", "Refactor the request handlers in src/."),
    ]
    provider = OpenAIChatProvider("fake-model", base_url=base_url, api_key="k")
    client = sdk_client(base_url) if mode == "sdk" else None
    # warm-up: SDK import, client and connection set-up are paid once per process, not per turn
    await (sdk_turn(client, entries) if client else lovia_turn(provider, entries))
    cpu: dict[str, list[float]] = {"turn": [], "user": [], "sys": [], "body": [], "floor": []}
    for _ in range(turns):
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.process_time()
        out = await (sdk_turn(client, entries) if client else lovia_turn(provider, entries))
        cpu["turn"].append((time.process_time() - start) * 1000)
        after = resource.getrusage(resource.RUSAGE_SELF)
        # tick-sampled split: only meaningful summed over many turns
        cpu["user"].append((after.ru_utime - before.ru_utime) * 1000)
        cpu["sys"].append((after.ru_stime - before.ru_stime) * 1000)
        if client is None:
            start = time.process_time()
            body = encode_body(provider._build_payload(entries, TOOLS, None, None))
            cpu["body"].append((time.process_time() - start) * 1000)
            start = time.process_time()
            await httpx2_floor(base_url, body)
            cpu["floor"].append((time.process_time() - start) * 1000)
        call = out["call"]
        entries.append(ToolCallEntry(call["id"], call["name"], call["arguments"]))
        entries.append(ToolResultEntry(call["id"], RESULT))
    if client is not None:
        await client.close()
    return cpu


async def best_of(repeat: int, turns: int, base_url: str, mode: str) -> dict[str, list[float]]:
    """Per turn index, the least CPU over ``repeat`` loops (filters other processes' noise)."""
    runs = [await tool_loop(turns, base_url, mode) for _ in range(repeat)]
    best = {
        key: [min(r[key][i] for r in runs) for i in range(len(runs[0][key]))]
        for key in ("turn", "body", "floor")
    }
    user = sum(sum(r["user"]) for r in runs)
    system = sum(sum(r["sys"]) for r in runs)
    best["kernel_share"] = [system / (user + system) if user + system else 0.0]
    return best


async def final_answer(base_url: str, repeats: int = 20) -> tuple[float, int]:
    provider = OpenAIChatProvider("fake-model", base_url=base_url, api_key="k")
    entries: list[TranscriptEntry] = [InputEntry("user", "FINAL: write the summary")]
    await lovia_turn(provider, entries)
    samples, deltas = [], 0
    for _ in range(repeats):
        start = time.process_time()
        out = await lovia_turn(provider, entries)
        samples.append((time.process_time() - start) * 1000)
        deltas = out["deltas"]
    return statistics.median(samples), deltas


def summary(cpu: list[float]) -> dict[str, float]:
    window = max(1, min(5, len(cpu) // 5))
    return {
        "first_turns_ms": round(statistics.mean(cpu[:window]), 3),
        "last_turns_ms": round(statistics.mean(cpu[-window:]), 3),
        "median_ms": round(statistics.median(cpu), 3),
        "max_ms": round(max(cpu), 3),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--deltas", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3, help="loops; per turn the best counts")
    parser.add_argument("--compare-sdk", action="store_true")
    args = parser.parse_args()
    proc, base_url = start_server(args.deltas)
    try:
        results: dict[str, Any] = {"turns": args.turns, "repeat": args.repeat}
        cpu = await best_of(args.repeat, args.turns, base_url, "lovia")
        results["lovia_tool_loop"] = {
            **summary(cpu["turn"]),
            "per_turn_ms": [round(c, 3) for c in cpu["turn"]],
        }
        results["kernel_share"] = round(cpu["kernel_share"][0], 3)
        results["lovia_body_build"] = summary(cpu["body"])
        results["httpx2_floor"] = summary(cpu["floor"])
        median, deltas = await final_answer(base_url)
        results["lovia_final_answer"] = {"deltas": deltas, "median_ms": round(median, 3)}
        if args.compare_sdk:
            sdk = (await best_of(args.repeat, args.turns, base_url, "sdk"))["turn"]
            results["sdk_typed_tool_loop"] = {
                **summary(sdk),
                "per_turn_ms": [round(c, 3) for c in sdk],
            }
        if _FLOOR_CLIENT is not None:
            await _FLOOR_CLIENT.aclose()
        await aclose_shared_clients()
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)

    loop = results["lovia_tool_loop"]
    print(f"OpenAIChatProvider, {args.turns}-turn tool loop (client CPU per turn):")
    print(
        f"  turns 1-5: {loop['first_turns_ms']:.2f} ms   turns {args.turns - 4}-{args.turns}: "
        f"{loop['last_turns_ms']:.2f} ms   median {loop['median_ms']:.2f} ms   "
        f"max {loop['max_ms']:.2f} ms"
    )
    print(f"  kernel (socket) share of that CPU: {results['kernel_share']:.0%}")
    body, floor = results["lovia_body_build"], results["httpx2_floor"]
    print(
        f"  of which lovia's body build: {body['first_turns_ms']:.3f} -> "
        f"{body['last_turns_ms']:.3f} ms; a bare httpx2 request alone: "
        f"{floor['first_turns_ms']:.2f} -> {floor['last_turns_ms']:.2f} ms"
    )
    final = results["lovia_final_answer"]
    print(f"Final answer of {final['deltas']} deltas: {final['median_ms']:.2f} ms CPU (median)")
    if "sdk_typed_tool_loop" in results:
        sdk = results["sdk_typed_tool_loop"]
        print(
            f"SDK typed create() for comparison: turns 1-5 {sdk['first_turns_ms']:.2f} ms, "
            f"last turns {sdk['last_turns_ms']:.2f} ms"
        )
    out = ROOT / "bench" / "results" / "provider_overhead.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
