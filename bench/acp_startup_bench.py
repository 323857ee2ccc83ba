"""How long `lovia acp` takes from spawn to its `initialize` answer, and to a session (not a test).

    .venv/bin/python bench/acp_startup_bench.py [--runs 10]

Each sample spawns ``python -m lovia_server.acp`` with a fresh state directory, writes one
``initialize`` frame at once and times the answer; then ``session/new`` (which waits for the
state database to open and interrupted runs to be recovered). Medians count. For comparison it
also times ``python -m lovia_server --version`` (the interpreter plus the LSP entry point).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def sample(workdir: Path) -> tuple[float, float]:
    state = Path(tempfile.mkdtemp(dir=workdir))
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lovia_server.acp", "--state-dir", str(state)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "LOVIA_MODEL": "openai:gpt-4.1-mini", "OPENAI_API_KEY": "bench"},
    )
    assert proc.stdin is not None and proc.stdout is not None
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    proc.stdin.write((json.dumps(init) + "\n").encode())
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    initialized = time.perf_counter() - start
    new = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "session/new",
        "params": {"cwd": str(workdir), "mcpServers": []},
    }
    proc.stdin.write((json.dumps(new) + "\n").encode())
    proc.stdin.flush()
    while json.loads(proc.stdout.readline()).get("id") != 2:
        pass
    session = time.perf_counter() - start
    proc.stdin.close()
    proc.wait(timeout=30)
    return initialized, session


def version_sample() -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "lovia_server", "--version"], check=True, capture_output=True
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp).resolve()
        sample(workdir)  # warm-up: bytecode, disk cache
        samples = [sample(workdir) for _ in range(args.runs)]
        versions = [version_sample() for _ in range(args.runs)]
    init = statistics.median(s[0] for s in samples)
    new = statistics.median(s[1] for s in samples)
    print(f"spawn -> initialize answered: median {init * 1000:.0f} ms over {args.runs} runs")
    print(f"spawn -> session/new answered: median {new * 1000:.0f} ms")
    print(f"python -m lovia_server --version: median {statistics.median(versions) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
