"""A small asyncio JSON-RPC client for the lovia server over stdio (used by ``lovia chat``).

It spawns ``python -m lovia_server``, speaks LSP framing, answers the few server-to-client
requests a headless client sees, and hands ``lovia/event`` notifications to a callback.

The server runs in its own session: a Ctrl-C in the terminal reaches the client only, which
cancels through the protocol, and the server outlives the keypress to stop runs cleanly.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, Any


class RpcError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message", "error"))
        self.code = error.get("code")
        self.data = error.get("data")


class StdioClient:
    def __init__(
        self,
        *,
        on_event: Callable[[dict[str, Any]], Awaitable[None] | None],
        settings: dict[str, Any],
        env: dict[str, str] | None = None,
        python: str = sys.executable,
        stderr: IO[Any] | int | None = None,
    ) -> None:
        self.on_event = on_event
        self.settings = settings
        self.env = env
        self.python = python
        self.stderr = stderr  # None: the server logs to this process's stderr
        self.proc: asyncio.subprocess.Process | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._gone = False

    async def start(self, root: Path, init_options: dict[str, Any]) -> dict[str, Any]:
        self.proc = await asyncio.create_subprocess_exec(
            self.python,
            "-m",
            "lovia_server",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=self.stderr,
            # The working directory (the user's project) must not shadow the server's imports.
            env={**os.environ, "PYTHONSAFEPATH": "1", **(self.env or {})},
            start_new_session=True,  # terminal signals (Ctrl-C) are the client's to handle
        )
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())
        result = await self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root.as_uri(),
                "workspaceFolders": [{"uri": root.as_uri(), "name": root.name or "root"}],
                "capabilities": {
                    "workspace": {"configuration": True},
                    "window": {"workDoneProgress": False},
                },
                "initializationOptions": {"lovia": init_options},
            },
        )
        self.notify("initialized", {})
        return dict(result)

    @property
    def running(self) -> bool:
        """The server process is up and its output stream still open."""
        return self.proc is not None and self.proc.returncode is None and not self._gone

    async def close(self, *, grace: float = 30) -> None:
        """``shutdown`` + ``exit``: the server interrupts live runs (they stay resumable)."""
        if self.proc is None:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.request("shutdown", None), grace)
            self.notify("exit", None)
        with contextlib.suppress(Exception):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.kill()
            await self.proc.wait()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader

    def kill(self) -> None:
        """Stop the server at once; the next server on the same state marks its runs interrupted."""
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        if not self.running or self.proc.stdin.is_closing():
            raise ConnectionError("the lovia server exited")
        body = json.dumps(message).encode()
        self.proc.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        self._pending[msg_id] = future
        try:
            return await future
        finally:
            self._pending.pop(msg_id, None)

    async def _read_loop(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        stdout = self.proc.stdout
        try:
            while True:
                length = 0
                while True:
                    line = await stdout.readline()
                    if not line:
                        raise EOFError
                    if line in (b"\r\n", b"\n"):
                        break
                    name, _, value = line.decode().partition(":")
                    if name.lower() == "content-length":
                        length = int(value.strip())
                message = json.loads(await stdout.readexactly(length))
                await self._dispatch(message)
        except (EOFError, asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._gone = True
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionError("the lovia server exited"))

    async def _dispatch(self, message: dict[str, Any]) -> None:
        if "id" in message and "method" not in message:
            future = self._pending.pop(message["id"], None)
            if future is not None and not future.done():
                if "error" in message:
                    future.set_exception(RpcError(message["error"]))
                else:
                    future.set_result(message.get("result"))
            return
        method = message.get("method")
        if "id" in message:
            result: Any = None
            if method == "workspace/configuration":
                items = (message.get("params") or {}).get("items") or [{}]
                result = [self.settings if i.get("section") == "lovia" else None for i in items]
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            return
        if method == "lovia/event":
            outcome = self.on_event(message["params"])
            if asyncio.iscoroutine(outcome):
                await outcome


__all__ = ["RpcError", "StdioClient"]
