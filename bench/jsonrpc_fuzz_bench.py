"""JSON-RPC fuzz benchmark (not a test).

    python bench/jsonrpc_fuzz_bench.py [--messages 10000] [--seed 1] [--window 64]

Starts the real server, initializes it, then sends the seeded malformed stream of
``tests/support/jsonrpc_fuzz.py`` (missing, wrong-typed, ~1 MB and deeply nested params; unknown
and standard methods; stray responses; broken frames; notifications) with at most ``--window``
requests unanswered at a time. Prints messages/s, unanswered and duplicated requests, and the
p50/p99 latency from sending a request to receiving its answer. Exits 1 on any violation.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.jsonrpc_fuzz import run_fuzz
from tests.support.raw_lsp import RawClient


async def main(messages: int, seed: int, window: int) -> int:
    with tempfile.TemporaryDirectory(prefix="lovia-fuzz-bench-") as tmp:
        base = Path(tmp)
        root = base / "ws"
        root.mkdir()
        client = await RawClient.start(base / "logs")
        try:
            await client.initialize(root, base / "state")
            await client.request("lovia/status", {})
            report = await run_fuzz(client, messages, seed, window=window, within=300)
        finally:
            await client.close()
        print(report.summary())
        print(f"requests {report.requests}, id-null errors {report.null_seen}")
        print("kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(report.kinds.items())))
        problems = report.problems()
        for problem in problems:
            print(f"PROBLEM: {problem}")
        return 1 if problems else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--window", type=int, default=64)
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.messages, args.seed, args.window)))
