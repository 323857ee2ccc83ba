"""Seeded malformed JSON-RPC traffic for the real server, shared by the fuzz test and its bench.

Each generated item is a frame plus what it obliges the server to do: answer one request id,
answer once with id null (-32700 / -32600), or stay silent (notifications, stray responses,
junk header lines). ``run_fuzz`` sends the stream through a ``RawClient`` with a bounded window
of unanswered requests and checks the obligations.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from lovia_server import protocol as p
from tests.support.raw_lsp import MISSING as _MISSING
from tests.support.raw_lsp import RawClient, frame

HUGE = 1_000_000
ID_BASE = 10_000_000

STANDARD_REQUESTS = [
    "textDocument/hover",
    "textDocument/completion",
    "textDocument/definition",
    "workspace/symbol",
    "workspace/executeCommand",
    "initialize",
    "textDocument/didOpen",
    "$/cancelRequest",
]
NOTIFICATIONS = [
    "$/cancelRequest",
    "$/setTrace",
    "textDocument/didOpen",
    "textDocument/didChange",
    "textDocument/didClose",
    "window/workDoneProgress/cancel",
    "workspace/didChangeWorkspaceFolders",
    "lovia/status",
    "lovia/run",
    "fuzz/notice",
]
KEYS = [
    "prompt",
    "runId",
    "sessionId",
    "approvalId",
    "decision",
    "since",
    "text",
    "uri",
    "x",
    "",
    "é",
]


@dataclass
class Item:
    body: bytes  # the whole frame as written (headers included)
    request_id: Any = None  # an id the server must answer exactly once
    null_answers: int = 0  # answers with id null the server must send
    kind: str = ""


@dataclass
class FuzzReport:
    messages: int
    requests: int
    unanswered: list[Any]
    duplicated: list[Any]
    untyped: list[Any]  # answers that are neither a result nor an error with an integer code
    null_expected: int
    null_seen: int
    leaks: list[str]
    shown: list[dict[str, Any]]
    latencies: list[float]
    seconds: float
    kinds: dict[str, int] = field(default_factory=dict)
    status_after: dict[str, Any] | None = None

    def problems(self) -> list[str]:
        out = []
        if self.unanswered:
            out.append(f"{len(self.unanswered)} unanswered requests, e.g. {self.unanswered[:5]}")
        if self.duplicated:
            out.append(
                f"{len(self.duplicated)} requests answered twice, e.g. {self.duplicated[:5]}"
            )
        if self.untyped:
            out.append(f"untyped answers: {self.untyped[:3]}")
        if self.null_seen != self.null_expected:
            out.append(f"{self.null_seen} id-null errors, expected {self.null_expected}")
        if self.leaks:
            out.append(f"traceback text reached the client: {self.leaks[:2]}")
        if self.shown:
            out.append(f"window/showMessage sent: {self.shown[:2]}")
        if not self.status_after or "result" not in self.status_after:
            out.append(f"lovia/status did not answer at the end: {self.status_after}")
        return out

    def percentile(self, q: float) -> float:
        if not self.latencies:
            return 0.0
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def summary(self) -> str:
        return (
            f"{self.messages} messages ({self.requests} requests) in {self.seconds:.1f} s = "
            f"{self.messages / self.seconds:.0f} messages/s; unanswered {len(self.unanswered)}, "
            f"duplicated {len(self.duplicated)}; latency p50 {self.percentile(0.5) * 1000:.1f} ms "
            f"p99 {self.percentile(0.99) * 1000:.1f} ms (mean "
            f"{statistics.fmean(self.latencies) * 1000 if self.latencies else 0:.1f} ms)"
        )


class Generator:
    """Seeded malformed messages; ids are unique per stream so answers can be counted."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.counter = 0
        self.shapes: dict[str, int] = {}  # how often each params shape was generated

    def new_id(self) -> Any:
        self.counter += 1
        # Far from RawClient's own ids (1, 2, ...), so each answer is attributable.
        return ID_BASE + self.counter if self.rng.random() < 0.5 else f"fz-{self.counter}"

    # ------------------------------------------------------------------ values

    def scalar(self) -> Any:
        return self.rng.choice(
            [None, True, False, 0, -1, 2**63, 1.5, "", "x", "ü\u0000\ud7ff", "a" * 300]
        )

    def junk(self, depth: int = 0) -> Any:
        r = self.rng.random()
        if depth > 2 or r < 0.45:
            return self.scalar()
        if r < 0.7:
            return [self.junk(depth + 1) for _ in range(self.rng.randint(0, 3))]
        return {self.rng.choice(KEYS): self.junk(depth + 1) for _ in range(self.rng.randint(0, 4))}

    def nested(self, depth: int) -> Any:
        value: Any = "leaf"
        for i in range(depth):
            value = {"a": value} if i % 2 else [value]
        return value

    def params(self) -> Any:
        """Params that are missing (the MISSING marker), wrong-typed, huge, nested or junk."""
        r = self.rng.random()
        if r < 0.15:
            shape, value = "missing", _MISSING
        elif r < 0.35:
            shape, value = "wrong-type", self.scalar()
        elif r < 0.4:
            shape, value = "array", [self.junk() for _ in range(self.rng.randint(0, 3))]
        elif r < 0.405:
            shape, value = "huge", {self.rng.choice(KEYS): self.junk(), "prompt": "p" * HUGE}
        elif r < 0.43:
            shape, value = "nested", {self.rng.choice(KEYS): self.nested(self.rng.randint(20, 200))}
        else:
            shape, value = "junk", self.junk_object()
        self.shapes[shape] = self.shapes.get(shape, 0) + 1
        return value

    def junk_object(self) -> dict[str, Any]:
        return {self.rng.choice(KEYS): self.junk() for _ in range(self.rng.randint(0, 4))}

    # ------------------------------------------------------------------ messages

    def request(self, method: Any, params: Any) -> Item:
        msg_id = self.new_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not _MISSING:
            message["params"] = params
        return Item(frame(json.dumps(message).encode()), request_id=msg_id)

    def notification(self, method: str, params: Any) -> Item:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not _MISSING:
            message["params"] = params
        return Item(frame(json.dumps(message).encode()))

    def standard_params(self, method: str) -> Any:
        if method == "initialize":
            # Never a valid InitializeParams: processId must be an integer or null.
            return self.rng.choice([self.scalar(), {"processId": "no", "capabilities": {}}, []])
        if method == "workspace/executeCommand":
            return self.rng.choice(
                [
                    "lovia.status",
                    ["lovia.status"],
                    {"command": self.rng.choice(["lovia.status", "nope", 5, None])},
                    {
                        "command": self.rng.choice([f"lovia.{m.split('/')[1]}" for m in p.METHODS]),
                        "arguments": self.rng.choice(
                            [self.junk(), [self.junk()], [self.junk_object()]]
                        ),
                    },
                    _MISSING,
                ]
            )
        return self.params()

    def item(self) -> Item:
        r = self.rng.random()
        if r < 0.30:
            item = self.request(self.rng.choice(p.METHODS), self.params())
            item.kind = "lovia"
        elif r < 0.45:
            method = self.rng.choice(STANDARD_REQUESTS)
            item = self.request(method, self.standard_params(method))
            item.kind = "standard"
        elif r < 0.52:
            method = self.rng.choice(
                [
                    f"fuzz/{self.counter}",
                    "",
                    "lovia/",
                    "$/fuzz",
                    "rpc.x",
                    "m" * 5000,
                    5,
                    None,
                    ["x"],
                ]
            )
            item = self.request(method, self.params())
            item.kind = "unknown"
        elif r < 0.68:
            item = self.notification(self.rng.choice(NOTIFICATIONS), self.params())
            item.kind = "notification"
        elif r < 0.75:
            item = self.notification(
                "$/cancelRequest", {"id": ID_BASE + self.rng.randint(1, self.counter + 1)}
            )
            item.kind = "cancel"
        elif r < 0.83:
            item = self.stray_response()
        else:
            item = self.broken()
        return item

    def stray_response(self) -> Item:
        body: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": self.rng.choice([2 * ID_BASE + self.counter, "stray", 0]),
        }
        if self.rng.random() < 0.5:
            body["result"] = self.junk()
        else:
            body["error"] = self.rng.choice([{"code": 1, "message": "m"}, self.junk()])
        return Item(frame(json.dumps(body).encode()), kind="stray")

    def broken(self) -> Item:
        """Frames that keep the stream in sync but are not a valid message."""
        choice = self.rng.randrange(10)
        if choice == 0:
            return Item(
                frame(b'{"jsonrpc": "2.0", "id": 1, "method": '), null_answers=1, kind="parse"
            )
        if choice == 1:
            return Item(frame(b"\xff\xfe{not utf8}"), null_answers=1, kind="parse")
        if choice == 2:
            return Item(frame(b"[" * 100_000 + b"]" * 100_000), null_answers=1, kind="parse")
        if choice == 3:
            body = json.dumps(self.rng.choice([[], [1, 2], 5, "s", None, True])).encode()
            return Item(frame(body), null_answers=1, kind="non-object")
        if choice == 4:
            body = json.dumps({self.rng.choice(KEYS): self.junk()}).encode()
            return Item(frame(body), null_answers=1, kind="non-rpc")
        if choice == 5:
            body = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": self.rng.choice([True, 1.5, {}, []]),
                    "method": "lovia/status",
                }
            )
            return Item(frame(body.encode()), null_answers=1, kind="bad-id")
        if choice == 6:
            msg_id = self.new_id()
            body = json.dumps(
                {
                    "jsonrpc": self.rng.choice(["1.0", 2, None]),
                    "id": msg_id,
                    "method": "lovia/status",
                }
            )
            return Item(frame(body.encode()), request_id=msg_id, kind="bad-version")
        if choice == 7:
            # Header lines the reader must skip, then a good request.
            item = self.request("lovia/status", {})
            item.body = b"X-Junk: 1\r\nnonsense\r\n" + item.body
            item.kind = "junk-headers"
            return item
        if choice == 8:
            return Item(b"Content-Length: 0\r\n\r\n", kind="empty")
        msg_id = self.new_id()
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id})
        return Item(frame(body.encode()), request_id=msg_id, kind="no-method")


async def run_fuzz(
    client: RawClient, count: int, seed: int, *, window: int = 64, within: float = 120
) -> FuzzReport:
    """Send ``count`` generated messages, then ``lovia/status``; report what was (not) answered."""
    generator = Generator(seed)
    items = [generator.item() for _ in range(count)]
    kinds: dict[str, int] = {}
    sent_at: dict[Any, float] = {}
    latencies: list[float] = []
    slots = asyncio.Semaphore(window)
    pending: set[asyncio.Task[None]] = set()

    async def await_answer(msg_id: Any) -> None:
        try:
            await client.answer(msg_id, within=within)
            latencies.append(time.perf_counter() - sent_at[msg_id])
        except TimeoutError:
            pass
        finally:
            slots.release()

    kinds.update({f"params:{shape}": n for shape, n in generator.shapes.items()})
    start = time.perf_counter()
    null_expected = len(client.null_id_errors)
    for item in items:
        kinds[item.kind] = kinds.get(item.kind, 0) + 1
        null_expected += item.null_answers
        if item.request_id is not None:
            await slots.acquire()
            client.expect(item.request_id)
            sent_at[item.request_id] = time.perf_counter()
            task = asyncio.create_task(await_answer(item.request_id))
            pending.add(task)
            task.add_done_callback(pending.discard)
        await client.send_bytes(item.body)
    if pending:
        await asyncio.wait(pending, timeout=within)
    seconds = time.perf_counter() - start
    status = await client.request("lovia/status", {}, within=30)

    requests = [i.request_id for i in items if i.request_id is not None]
    answers = {msg_id: client.responses.get(msg_id, []) for msg_id in requests}
    untyped = [
        a
        for got in answers.values()
        for a in got
        if not ("result" in a or isinstance(a.get("error", {}).get("code"), int))
    ]
    return FuzzReport(
        messages=count,
        requests=len(requests),
        unanswered=[i for i, got in answers.items() if not got],
        duplicated=[i for i, got in answers.items() if len(got) > 1],
        untyped=untyped,
        null_expected=null_expected,
        null_seen=len(client.null_id_errors),
        leaks=client.leaked_text(),
        shown=client.shown_messages(),
        latencies=latencies,
        seconds=seconds,
        kinds=kinds,
        status_after=status,
    )


__all__ = ["FuzzReport", "Generator", "Item", "run_fuzz"]
