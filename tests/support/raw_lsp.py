"""A raw Content-Length client for the real server process.

pytest-lsp only sends well-formed messages. This client writes whatever bytes a test gives it
(invalid JSON, arrays, stray responses, junk header lines) and records everything the server
sends back, so tests can count the answers per request id.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

SERVER_CMD = [sys.executable, "-m", "lovia_server"]
MISSING: Any = object()
TRACEBACK_MARK = "Traceback (most recent call last)"


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def split_frames(buffer: bytes) -> tuple[list[bytes], bytes]:
    """The whole frames' bodies at the start of ``buffer``, and what is left of it."""
    bodies: list[bytes] = []
    while True:
        head, sep, rest = buffer.partition(b"\r\n\r\n")
        if not sep:
            return bodies, buffer
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.decode("ascii").partition(":")
            if name.strip().lower() == "content-length":
                length = int(value)
        if len(rest) < length:
            return bodies, buffer
        bodies.append(rest[:length])
        buffer = rest[length:]


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The test's environment without model credentials: no run may reach a real provider."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k not in {"LOVIA_MODEL", "LOVIA_LOG_LEVEL"}
    }
    env["LOVIA_CONFIG_TIMEOUT"] = "2"
    env.update(extra or {})
    return env


def _log_path(tmp: Path) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    return tmp / "server-stderr.log"


class RawClient:
    """One server process; ``responses[id]`` lists every answer seen for that id."""

    def __init__(self, proc: asyncio.subprocess.Process, stderr_path: Path) -> None:
        self.proc = proc
        self.stderr_path = stderr_path
        self.responses: dict[Any, list[dict[str, Any]]] = {}
        self.null_id_errors: list[dict[str, Any]] = []
        self.notifications: list[dict[str, Any]] = []
        self.server_requests: list[dict[str, Any]] = []
        self.bodies: list[bytes] = []
        self._waiters: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._null_arrived = asyncio.Event()
        self._ids = itertools.count(1)
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(
        cls, tmp: Path, env: dict[str, str] | None = None, *, cwd: Path | None = None
    ) -> RawClient:
        stderr_path = _log_path(tmp)
        with open(stderr_path, "wb") as stderr:  # noqa: ASYNC230 - opened once, before the server
            proc = await asyncio.create_subprocess_exec(
                *SERVER_CMD,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env=server_env(env),
                cwd=cwd,
                limit=64 * 1024 * 1024,
            )
        return cls(proc, stderr_path)

    # ------------------------------------------------------------------ sending

    def next_id(self) -> int:
        return next(self._ids)

    async def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def send_body(self, body: bytes) -> None:
        await self.send_bytes(frame(body))

    async def send(self, message: Any) -> None:
        await self.send_body(json.dumps(message).encode())

    def expect(self, msg_id: Any) -> asyncio.Future[dict[str, Any]]:
        """A future for the first answer to ``msg_id`` (register before sending)."""
        future = self._waiters.get(msg_id)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            self._waiters[msg_id] = future
            for answer in self.responses.get(msg_id, []):
                future.set_result(answer)
                break
        return future

    async def send_request(
        self, method: Any, params: Any = MISSING, *, msg_id: Any = MISSING, **fields: Any
    ) -> Any:
        """Send a request (``params`` omitted when MISSING); returns its id."""
        msg_id = self.next_id() if msg_id is MISSING else msg_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not MISSING:
            message["params"] = params
        message.update(fields)
        self.expect(msg_id)
        await self.send(message)
        return msg_id

    async def request(
        self, method: Any, params: Any = MISSING, *, within: float = 30
    ) -> dict[str, Any]:
        """Send a request and wait for its answer (the whole response message)."""
        msg_id = await self.send_request(method, params)
        return await self.answer(msg_id, within=within)

    async def answer(self, msg_id: Any, *, within: float = 30) -> dict[str, Any]:
        return await asyncio.wait_for(asyncio.shield(self.expect(msg_id)), within)

    async def notify(self, method: str, params: Any = MISSING) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not MISSING:
            message["params"] = params
        await self.send(message)

    async def null_id_error(self, count: int = 1, *, within: float = 30) -> dict[str, Any]:
        """Wait until at least ``count`` answers with id null arrived; returns the last."""
        async with asyncio.timeout(within):
            while len(self.null_id_errors) < count:
                self._null_arrived.clear()
                await self._null_arrived.wait()
        return self.null_id_errors[count - 1]

    async def initialize(self, root: Path, state_dir: Path) -> dict[str, Any]:
        answer = await self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": {},
                "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
                "initializationOptions": {
                    "lovia": {"protocolVersion": 1, "client": "raw", "stateDir": str(state_dir)}
                },
            },
        )
        await self.notify("initialized", {})
        return answer

    # ------------------------------------------------------------------ receiving

    async def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        while True:
            length = None
            while True:
                line = await stdout.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            assert length is not None, "the server sent a frame without Content-Length"
            body = await stdout.readexactly(length)
            self.bodies.append(body)
            message = json.loads(body)
            await self._dispatch(message)

    async def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" in message:
            if "id" in message:
                self.server_requests.append(message)
                await self._answer_server(message)
            else:
                self.notifications.append(message)
            return
        msg_id = message.get("id")
        if msg_id is None:
            self.null_id_errors.append(message)
            self._null_arrived.set()
            return
        self.responses.setdefault(msg_id, []).append(message)
        future = self._waiters.get(msg_id)
        if future is not None and not future.done():
            future.set_result(message)

    async def _answer_server(self, message: dict[str, Any]) -> None:
        result: Any = None
        if message["method"] == "workspace/configuration":
            result = [None for _ in message.get("params", {}).get("items", [])]
        await self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    # ------------------------------------------------------------------ checks

    def leaked_text(self, *needles: str) -> list[str]:
        """Bodies from the server that contain a traceback marker or one of ``needles``."""
        marks = (TRACEBACK_MARK, 'File "', *needles)
        return [
            b.decode(errors="replace")[:300]
            for b in self.bodies
            if any(m.encode() in b for m in marks)
        ]

    def shown_messages(self) -> list[dict[str, Any]]:
        return [n for n in self.notifications if n["method"] == "window/showMessage"]

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            if self.proc.returncode is None and self.proc.stdin is not None:
                await self.send({"jsonrpc": "2.0", "id": "close", "method": "shutdown"})
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self.expect("close")), 10)
                await self.notify("exit")
                self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 15)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader


__all__ = ["MISSING", "TRACEBACK_MARK", "RawClient", "frame", "server_env"]
