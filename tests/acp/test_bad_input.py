"""Bad input: named errors with ACP codes, 1,000 seeded malformed frames, stdout purity, and the
language server's start-up path staying free of the ACP SDK."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.acp.harness import AGENT_CMD, AcpProcess

METHODS = [
    "initialize",
    "authenticate",
    "session/new",
    "session/load",
    "session/list",
    "session/resume",
    "session/close",
    "session/delete",
    "session/prompt",
    "session/set_mode",
    "session/set_config_option",
    "session/cancel",
    "session/fork",
    "fs/read_text_file",
    "nope/unknown",
    "_lovia/ext",
]
KEYS = ["sessionId", "cwd", "prompt", "modeId", "configId", "value", "methodId", "cursor", "x", ""]


def _value(rng: random.Random, ws: Path, depth: int = 0) -> Any:
    pick = rng.randrange(12)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.randint(-(2**40), 2**40)
    if pick == 3:
        return rng.random() * 1e6
    if pick == 4:
        return "".join(rng.choice('abc/é\u2603\x00"\\ \n') for _ in range(rng.randrange(12)))
    if pick == 5:
        return str(ws)
    if pick == 6:
        return "x" * rng.choice([1_000, 100_000, 1_500_000])  # huge params
    if pick == 7 and depth < 3:
        return [_value(rng, ws, depth + 1) for _ in range(rng.randrange(4))]
    if pick == 8 and depth < 3:
        return {rng.choice(KEYS): _value(rng, ws, depth + 1) for _ in range(rng.randrange(4))}
    if pick == 9:
        return [{"type": rng.choice(["text", "image", "resource", "bogus"]), "text": "hi"}]
    if pick == 10:
        return "s_" + "".join(rng.choice("0123456789abcdef") for _ in range(12))
    return {}


def frames(seed: int, count: int, ws: Path) -> list[tuple[bytes, Any]]:
    """(line, what it obliges): ("id", x) one answer for x; "null" one id-null error; None."""
    rng = random.Random(seed)
    out: list[tuple[bytes, Any]] = []
    for n in range(count):
        kind = rng.randrange(10)
        rid: Any = n if rng.random() < 0.5 else f"f{n}"
        if kind == 0:  # not JSON
            junk = rng.choice(
                [b"{", b"not json", b'{"jsonrpc": "2.0", "id": 1', b"\xff\xfe", b"[1,"]
            )
            out.append((junk, "null"))
        elif kind == 1:  # JSON, but not an object
            out.append((json.dumps(rng.choice([1, "x", [1, 2], None, True, []])).encode(), "null"))
        elif kind == 2:  # an id that no answer could carry
            body = {
                "jsonrpc": "2.0",
                "id": rng.choice([{"a": 1}, [1], True]),
                "method": "session/list",
            }
            out.append((json.dumps(body).encode(), "null"))
        elif kind == 3:  # a notification: never answered
            body = {"jsonrpc": "2.0", "method": rng.choice(METHODS), "params": _value(rng, ws)}
            out.append((json.dumps(body).encode(), None))
        elif kind == 4:  # a stray response
            body = {"jsonrpc": "2.0", "id": 10**9 + n, "result": _value(rng, ws)}
            out.append((json.dumps(body).encode(), None))
        elif kind == 5:  # wrong envelope with an id
            body = {"id": rid, "method": rng.choice([5, None, "session/list"]), "params": 5}
            if rng.random() < 0.5:
                body["jsonrpc"] = "1.0"
            out.append((json.dumps(body).encode(), ("id", rid)))
        else:  # a request with random (often wrong) params
            params = (
                _value(rng, ws)
                if rng.random() < 0.3
                else {k: _value(rng, ws) for k in rng.sample(KEYS, rng.randrange(1, 5))}
            )
            body = {"jsonrpc": "2.0", "id": rid, "method": rng.choice(METHODS)}
            if params is not None and not (rng.random() < 0.1):
                body["params"] = params
            out.append((json.dumps(body).encode(), ("id", rid)))
    return out


class Raw:
    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[bytes] = []
        self.answers: list[dict[str, Any]] = []
        self.changed = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            self.lines.append(line)
            frame = json.loads(line)  # anything but JSON on stdout fails here
            if "id" in frame and ("result" in frame or "error" in frame):
                self.answers.append(frame)
            self.changed.set()

    async def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        await self.proc.stdin.drain()

    async def answer(self, rid: Any, within: float = 60) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            for frame in self.answers:
                if frame["id"] == rid:
                    return frame
            if loop.time() > deadline:
                raise TimeoutError(rid)
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), 1)
            except TimeoutError:
                pass


async def _spawn(tmp_path: Path) -> Raw:
    proc = await asyncio.create_subprocess_exec(
        *AGENT_CMD,
        "--state-dir",
        str(tmp_path / "state"),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=(tmp_path / "stderr.log").open("wb"),
        env={
            **os.environ,
            "LOVIA_MODEL": "openai:model-a",
            "OPENAI_API_KEY": "k",
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
        },
        limit=64 * 1024 * 1024,
    )
    return Raw(proc)


async def _close(raw: Raw) -> None:
    assert raw.proc.stdin is not None
    raw.proc.stdin.close()
    try:
        await asyncio.wait_for(raw.proc.wait(), 20)
    except TimeoutError:
        raw.proc.kill()
        await raw.proc.wait()


async def test_errors_name_the_field_and_use_acp_codes(tmp_path: Path, ws: Path) -> None:
    raw = await _spawn(tmp_path)
    try:
        await raw.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"protocolVersion": 1},
                }
            ).encode()
        )
        assert (await raw.answer(1))["result"]["protocolVersion"] == 1
        await raw.send(b"this is not json")
        await raw.send(
            json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/unknown"}).encode()
        )
        await raw.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "session/prompt",
                    "params": {"sessionId": "s_nope", "prompt": []},
                }
            ).encode()
        )
        await raw.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 4,
                    "method": "session/prompt",
                    "params": {"sessionId": 7, "prompt": "hi"},
                }
            ).encode()
        )
        await raw.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 5,
                    "method": "session/new",
                    "params": {"cwd": "relative/dir", "mcpServers": []},
                }
            ).encode()
        )
        await raw.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 6,
                    "method": "session/load",
                    "params": {"sessionId": "s_gone", "cwd": str(ws), "mcpServers": []},
                }
            ).encode()
        )
        assert (await raw.answer(2))["error"]["code"] == -32601
        unknown = (await raw.answer(3))["error"]
        assert unknown["code"] == -32002 and unknown["data"]["field"] == "sessionId"
        wrong = (await raw.answer(4))["error"]
        assert wrong["code"] == -32602 and wrong["data"]["field"] in ("sessionId", "prompt")
        assert {e["field"] for e in wrong["data"]["errors"]} >= {"sessionId", "prompt"}
        cwd = (await raw.answer(5))["error"]
        assert cwd["code"] == -32602 and cwd["data"]["field"] == "cwd"
        assert (await raw.answer(6))["error"]["code"] == -32002
        parse = next(f for f in raw.answers if f["id"] is None)
        assert parse["error"]["code"] == -32700
        assert "Traceback" not in b"".join(raw.lines).decode()
    finally:
        await _close(raw)


async def test_a_thousand_seeded_malformed_frames_are_answered_without_a_crash(
    tmp_path: Path, ws: Path
) -> None:
    raw = await _spawn(tmp_path)
    plan = frames(seed=20_251_113, count=1000, ws=ws)
    try:
        for line, _ in plan:
            await raw.send(line)
        probe = {"jsonrpc": "2.0", "id": "probe", "method": "session/list", "params": {}}
        await raw.send(json.dumps(probe).encode())
        wanted = [o[1] for _, o in plan if isinstance(o, tuple)]
        for rid in wanted:
            await raw.answer(rid, within=120)
        nulls = sum(1 for _, o in plan if o == "null")
        await raw.answer("probe")  # answered after every frame before it
        by_id: dict[Any, int] = {}
        for frame in raw.answers:
            by_id[json.dumps(frame["id"])] = by_id.get(json.dumps(frame["id"]), 0) + 1
        by_id.pop(json.dumps("probe"))
        assert by_id.pop("null", 0) == nulls
        assert sorted(by_id) == sorted(json.dumps(r) for r in wanted)  # each request once
        assert set(by_id.values()) == {1}
        codes = {f["error"]["code"] for f in raw.answers if "error" in f}
        assert codes <= {-32700, -32600, -32601, -32602, -32002, -32603, -32000}
        assert -32603 not in codes, [
            f for f in raw.answers if f.get("error", {}).get("code") == -32603
        ][:3]
        # still up: a clean request is answered
        await raw.send(
            json.dumps(
                {"jsonrpc": "2.0", "id": "last", "method": "session/list", "params": {}}
            ).encode()
        )
        assert "result" in await raw.answer("last")
        assert raw.proc.returncode is None
    finally:
        await _close(raw)
    assert "Traceback" not in (tmp_path / "stderr.log").read_text(errors="replace")


def test_the_language_server_start_up_path_does_not_import_the_acp_sdk() -> None:
    probe = (
        "import sys, lovia_server.__main__, lovia_server.lsp.language_server, lovia_server.lsp.server_runtime, "
        "lovia_server.host.supervisor, lovia.cli; "
        "print(sorted(m for m in sys.modules if m == 'acp' or m.startswith('acp.') "
        "or m.startswith('lovia_server.acp')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_only_protocol_frames_reach_stdout(tmp_path: Path, ws: Path) -> None:
    proc = AcpProcess(tmp_path / "state", env={"LOVIA_LOG_LEVEL": "DEBUG"})
    try:
        await proc.start()
        await proc.new_session(ws)
        await proc.conn.list_sessions()
    finally:
        await proc.stop()
    assert len(proc.frames()) >= 3
    assert "DEBUG" in proc.stderr() or proc.stderr() == ""


def test_lovia_acp_is_a_lovia_command() -> None:
    lovia = Path(sys.executable).with_name("lovia")
    listed = subprocess.run([str(lovia), "--help"], capture_output=True, text=True, check=True)
    assert "acp" in listed.stdout
    version = subprocess.run(
        [str(lovia), "acp", "--version"], capture_output=True, text=True, check=True
    )
    assert version.stdout.startswith("lovia acp ")
