"""How long the real server takes to answer ``textDocument/codeAction`` in a file with 1,000 diagnostics.

    .venv/bin/python bench/code_action_bench.py [--requests 300] [--diagnostics 1000]
        [--sent in-range|all]

Spawns ``python -m lovia_server`` over stdio as a plain client (no lovia options), opens one
file with ``--diagnostics`` problems spread over its 500 lines, waits until the server's start-up
work in the background is done, and sends ``--requests`` code-action requests one after another,
the cursor moving over the file's lines as a user's does, timing each from the write of the
request to the read of its answer. What a request carries (``--sent``):

- ``in-range`` (the default, and the target's case): the diagnostics overlapping the request's
  range, which is what LSP's ``CodeActionContext.diagnostics`` holds and what VS Code, Neovim's
  ``vim.lsp.buf.code_action()`` and eglot send at the cursor;
- ``all``: every diagnostic of the file in every request, a whole-file selection's menu (reported,
  no target: see below).

Target (``in-range``): **p99 <= 10 ms** (the menu opens at once: the answer never waits on a model
or the editor). Exits 1 when the target is missed. It also prints the server's CPU time per
request, which the machine's load hardly moves.

Where the time goes with ``all`` (measured in-process on a loaded 2-core machine): decoding the
request's JSON takes about 2 ms for 1,000 diagnostics, the menu itself 0.1 ms; the tail is the garbage
collector's full collections, which the ~5,000 objects each decoded request allocates set off
over the server's heap of 100,000+ objects (p99 of the decode alone: about 100 ms with the
collector on, 7 ms with it off). The server changes no collector setting (docs/server.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_P99_MS = 10.0
SERVER = [sys.executable, "-m", "lovia_server"]


def percentile(samples: list[float], pct: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * len(ordered)) - 1))
    return ordered[index]


def cpu_seconds(pid: int) -> float:
    """The process's user + system CPU time (Linux; 0 elsewhere): unlike the wall time, it
    hardly moves with the machine's load."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def settled(pid: int, quiet: float = 0.05, within: float = 60) -> None:
    """Until the server's start-up work in the background (the vendor SDK's import, the
    built-in agent, the stores) is done: less than ``quiet`` CPU seconds in a second."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    before = cpu_seconds(pid)
    while loop.time() < deadline:
        await asyncio.sleep(1)
        now = cpu_seconds(pid)
        if now - before < quiet:
            return
        before = now


def meets_target(samples_ms: list[float], target_ms: float = TARGET_P99_MS) -> bool:
    return bool(samples_ms) and percentile(samples_ms, 99) <= target_ms


class Client:
    """Just enough of an LSP client: framed JSON out, framed JSON in, server requests answered
    with ``null``."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc, self.stdin, self.stdout = proc, proc.stdin, proc.stdout
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def read(self) -> dict[str, Any]:
        length = 0
        while True:
            line = await self.stdout.readline()
            if not line:
                raise EOFError("the server closed its output")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        message: dict[str, Any] = json.loads(await self.stdout.readexactly(length))
        return message

    async def request(self, method: str, params: Any, *, encoded: bytes | None = None) -> Any:
        """``encoded``: the params as JSON already (the client's own encoding is not timed)."""
        self.next_id += 1
        my_id = self.next_id
        if encoded is None:
            self.send({"id": my_id, "method": method, "params": params})
        else:
            head = json.dumps({"jsonrpc": "2.0", "id": my_id, "method": method})[:-1]
            body = f'{head}, "params": '.encode() + encoded + b"}"
            self.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await self.stdin.drain()
        while True:
            message = await self.read()
            if "method" in message and "id" in message:  # a request of the server's
                self.send({"id": message["id"], "result": None})
            elif message.get("id") == my_id:
                return message.get("result")


def diagnostics(count: int, lines: int) -> list[dict[str, Any]]:
    return [
        {
            "range": {
                "start": {"line": i % lines, "character": 0},
                "end": {"line": i % lines, "character": 5},
            },
            "message": f"problem {i}",
            "severity": 1 + i % 4,
            "source": "bench",
        }
        for i in range(count)
    ]


LINES = 500


def at_line(uri: str, line: int, problems: list[dict[str, Any]], sent: str) -> dict[str, Any]:
    """A code-action request with the cursor at the start of ``line``."""
    here = [p for p in problems if p["range"]["start"]["line"] <= line <= p["range"]["end"]["line"]]
    return {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": line, "character": 1}, "end": {"line": line, "character": 1}},
        "context": {"diagnostics": problems if sent == "all" else here},
    }


async def main(requests: int, count: int, sent: str) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        source = root / "app.py"
        source.write_text("".join(f"x{i} = {i}\n" for i in range(LINES)))
        proc = await asyncio.create_subprocess_exec(
            *SERVER,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ, "XDG_STATE_HOME": str(Path(tmp) / "state")},
        )
        client = Client(proc)
        await client.request(
            "initialize",
            {"processId": None, "rootUri": root.as_uri(), "capabilities": {}},
        )
        client.send({"method": "initialized", "params": {}})
        text = source.read_text()
        client.send(
            {
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {
                        "uri": source.as_uri(),
                        "languageId": "python",
                        "version": 1,
                        "text": text,
                    }
                },
            }
        )
        problems = diagnostics(count, LINES)
        bodies = [
            json.dumps(at_line(source.as_uri(), line, problems, sent)).encode()
            for line in range(LINES)
        ]
        first = await client.request(
            "textDocument/codeAction", at_line(source.as_uri(), 7, problems, sent)
        )
        assert first and first[0]["title"] == "lovia: Fix this problem", first  # start-up is done
        await settled(proc.pid)
        for line in range(20):  # warm-up
            await client.request("textDocument/codeAction", None, encoded=bodies[line])
        samples = []
        cpu_before = cpu_seconds(proc.pid)
        for i in range(requests):
            encoded = bodies[(7 + i * 13) % LINES]  # the cursor wanders over the file
            start = time.perf_counter()
            await client.request("textDocument/codeAction", None, encoded=encoded)
            samples.append((time.perf_counter() - start) * 1000)
        cpu_ms = (cpu_seconds(proc.pid) - cpu_before) * 1000 / requests
        await client.request("shutdown", None)
        client.send({"method": "exit"})
        await client.stdin.drain()
        await proc.wait()
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else []
    p50, p99 = statistics.median(samples), percentile(samples, 99)
    ok = meets_target(samples) or sent == "all"
    print(
        f"codeAction in a file of {count} diagnostics, sending {sent}, {requests} requests: p50 {p50:.2f} ms, "
        f"p99 {p99:.2f} ms, max {max(samples):.2f} ms, {sum(x > TARGET_P99_MS for x in samples)} over {TARGET_P99_MS:g} ms, server CPU {cpu_ms:.2f} ms a request (target p99 <= {TARGET_P99_MS} ms: "
        f"{'none for all' if sent == 'all' else 'met' if ok else 'MISSED'}); load average {' '.join(load)}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--diagnostics", type=int, default=1000)
    parser.add_argument("--sent", choices=("in-range", "all"), default="in-range")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.requests, args.diagnostics, args.sent)))
