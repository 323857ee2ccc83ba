"""Streaming to the editor through the real server process: a client that stops reading never
blocks a run, and ``lovia/replay`` (live, and after reconnecting to a new server) returns exactly
what the run streamed."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

from tests.support.raw_lsp import frame, server_env

DELTAS = 10_000  # ~10 MB of text: more than the 8 MB a client may leave unread
AGENT = f"""
import asyncio
from lovia import Agent
from lovia.messages import Usage
from lovia.transcript import FinishDelta, TextDelta, UsageDelta

class Flood:
    name = "flood"
    model = "flood"
    supports_json_schema = False

    async def stream(self, entries, **kw):
        for i in range({DELTAS}):
            yield TextDelta(f"<{{i:05d}}>" + "x" * 1000)
            if i % 50 == 0:
                await asyncio.sleep(0)
        yield UsageDelta(Usage(1, {DELTAS}))
        yield FinishDelta("stop")

agent = Agent(name="flood", model=Flood())
"""
EXPECTED = "".join(f"<{i:05d}>" + "x" * 1000 for i in range(DELTAS))


class PausableClient:
    """Reads the server's stdout only when asked: in between, its pipe fills up."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.ids = iter(range(1, 10**6))
        self.answers: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []

    @classmethod
    async def start(cls, tmp: Path) -> PausableClient:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "lovia_server",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=server_env(),
            limit=64 * 1024,  # the transport stops reading past 128 KB unread: a slow editor
        )
        return cls(proc)

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame(json.dumps(message).encode()))
        await self.proc.stdin.drain()

    async def request(self, method: str, params: Any) -> int:
        msg_id = next(self.ids)
        await self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return msg_id

    async def read_one(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        length = 0
        while (line := await stdout.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        message = json.loads(await stdout.readexactly(length))
        if "method" not in message:
            self.answers[message["id"]] = message
        elif "id" in message:  # workspace/configuration and friends: nothing configured
            items = (message.get("params") or {}).get("items") or []
            result = [None] * len(items) if message["method"] == "workspace/configuration" else None
            await self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif message["method"] == "lovia/event":
            self.events.append(message["params"])

    async def answer(self, msg_id: int) -> Any:
        async with asyncio.timeout(60):
            while msg_id not in self.answers:
                await self.read_one()
        answer = self.answers[msg_id]
        assert "error" not in answer, answer
        return answer["result"]

    async def until_event(self, kind: str) -> None:
        async with asyncio.timeout(60):
            while not any(e["kind"] == kind for e in self.events):
                await self.read_one()

    async def open(self, root: Path, state: Path) -> None:
        init = await self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": {"workspace": {"configuration": True}},
                "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
                "initializationOptions": {"lovia": {"client": "test", "stateDir": str(state)}},
            },
        )
        await self.answer(init)
        await self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        await self.answer(await self.request("lovia/status", {}))  # the runtime is ready

    async def close(self) -> None:
        await self.answer(await self.request("shutdown", None))
        await self.send({"jsonrpc": "2.0", "method": "exit"})
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        await asyncio.wait_for(self.proc.wait(), 30)


def stored_run(state: Path) -> tuple[str | None, int]:
    with sqlite3.connect(state / "state.db", timeout=5) as db:
        row = db.execute("SELECT status FROM server_runs").fetchone()
        count = db.execute("SELECT COUNT(*) FROM server_run_events").fetchone()[0]
    return (row[0] if row else None), count


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if e["kind"] == "message.delta")


async def test_a_client_that_stops_reading_never_blocks_the_run_and_replay_is_exact(tmp_path):
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    (root / "agent.py").write_text(AGENT)
    client = await PausableClient.start(tmp_path)
    await client.open(root, state)
    run_request = await client.request("lovia/run", {"prompt": "flood", "agent": "agent.py:agent"})

    # Nobody reads: the run must still finish, everything stored.
    async with asyncio.timeout(120):
        while stored_run(state)[0] != "completed":
            assert client.proc.returncode is None
            await asyncio.sleep(0.1)
    # Not a frame was read meanwhile: the pipe and this transport hold ~200 KB, so the server
    # had most of the 10 MB queued (or dropped) while the run went on.
    assert client.events == []

    run = await client.answer(run_request)
    await client.until_event("run.finished")
    live = [e for e in client.events if e["runId"] == run["runId"]]
    seqs = [e["seq"] for e in live]
    assert seqs == sorted(seqs) and live[-1]["kind"] == "run.finished"

    replay = await client.answer(await client.request("lovia/replay", {"runId": run["runId"]}))
    events = replay["events"]
    assert [e["seq"] for e in events] == list(range(1, replay["lastSeq"] + 1))
    assert text_of(events) == EXPECTED
    completed = next(e for e in events if e["kind"] == "message.completed")
    assert completed["text"] == EXPECTED
    by_seq = {e["seq"]: e for e in events}
    assert all(by_seq[e["seq"]] == e for e in live)  # what was sent is what was stored
    await client.close()

    # Reconnect: a new server on the same state replays the same events.
    again = await PausableClient.start(tmp_path)
    await again.open(root, state)
    second = await again.answer(await again.request("lovia/replay", {"runId": run["runId"]}))
    assert second["events"] == events and second["status"] == "completed"
    await again.close()
