"""A client that reads the real server's stdout at a set rate, or not at all.

The reader is a thread doing plain ``os.read`` on the pipe, token-bucket throttled, so no
user-space buffer of ours hides bytes from the pipe (asyncio's StreamReader would read ahead up
to 128 KB). Each frame is stamped with the moment its first byte was read and the moment it was
complete. Requests from the server (``workspace/configuration``) are answered as they are read.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.raw_lsp import split_frames


@dataclass
class Frame:
    message: dict[str, Any]
    first_byte: float  # time.monotonic() when its first byte was read
    complete: float


class SlowClient:
    """One server process whose stdout is read at ``rate`` bytes/s (``None``: as fast as it can)."""

    def __init__(
        self,
        *,
        settings: dict[str, Any],
        env: dict[str, str],
        stderr_path: Path,
        rate: float | None = None,
        python: str = sys.executable,
        command: list[str] | None = None,
    ) -> None:
        self.settings = settings
        self.rate = rate
        self._stderr = open(stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            command or [python, "-m", "lovia_server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            bufsize=0,
        )
        self.pid = self.proc.pid
        self.loop = asyncio.get_running_loop()
        self.events: list[dict[str, Any]] = []
        self.bytes_read = 0
        self._paused = threading.Event()
        self._gone = asyncio.Event()
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Frame]] = {}
        self._send_lock = threading.Lock()
        self._listeners: list[Any] = []
        self._thread = threading.Thread(target=self._read, name="slow-client", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ control

    def pause(self) -> None:
        """Stop reading entirely (the pipe fills up)."""
        self._paused.set()

    def resume(self) -> None:
        """Read again, at ``self.rate``."""
        self._paused.clear()

    def on_event(self, listener: Any) -> None:
        self._listeners.append(listener)

    # ------------------------------------------------------------------ sending

    def _write(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.proc.stdin is not None
        with self._send_lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def request_frame(self, method: str, params: Any, *, within: float = 120) -> Frame:
        """Send a request; the response frame with its arrival stamps."""
        msg_id = next(self._ids)
        future: asyncio.Future[Frame] = self.loop.create_future()
        self._pending[msg_id] = future
        self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        try:
            return await asyncio.wait_for(future, within)
        finally:
            self._pending.pop(msg_id, None)

    async def request(self, method: str, params: Any, *, within: float = 120) -> Any:
        frame = await self.request_frame(method, params, within=within)
        if "error" in frame.message:
            raise RuntimeError(f"{method} failed: {frame.message['error']}")
        return frame.message.get("result")

    async def initialize(self, root: Path, init_options: dict[str, Any]) -> Any:
        result = await self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root.as_uri(),
                "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
                "capabilities": {"workspace": {"configuration": True}},
                "initializationOptions": {"lovia": init_options},
            },
        )
        self.notify("initialized", {})
        return result

    # ------------------------------------------------------------------ receiving

    def _read(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        buffer = b""
        first_byte = 0.0
        tokens = 0.0
        last = time.monotonic()
        try:
            while True:
                if self._paused.is_set():
                    time.sleep(0.01)
                    last = time.monotonic()
                    continue
                size = 1 << 16
                if self.rate is not None:
                    now = time.monotonic()
                    tokens = min(tokens + (now - last) * self.rate, max(self.rate * 0.02, 256))
                    last = now
                    if tokens < 128:
                        time.sleep((128 - tokens) / self.rate)
                        continue
                    size = int(tokens)
                data = os.read(fd, size)
                if not data:
                    break
                now = time.monotonic()
                tokens -= len(data)
                self.bytes_read += len(data)
                if not buffer:
                    first_byte = now
                bodies, buffer = split_frames(buffer + data)
                for body in bodies:
                    self._handle(Frame(json.loads(body), first_byte, now))
                    first_byte = now
        except OSError:
            pass
        finally:
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._gone.set)

    def _handle(self, frame: Frame) -> None:
        message = frame.message
        if "method" in message and "id" in message:
            result: Any = None
            if message["method"] == "workspace/configuration":
                items = (message.get("params") or {}).get("items") or [{}]
                result = [self.settings if i.get("section") == "lovia" else None for i in items]
            with contextlib.suppress(OSError):
                self._write({"jsonrpc": "2.0", "id": message["id"], "result": result})
            return
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._dispatch, frame)

    def _dispatch(self, frame: Frame) -> None:
        message = frame.message
        if "method" not in message:
            future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
            if future is not None and not future.done():
                future.set_result(frame)
            return
        if message["method"] == "lovia/event":
            event = message["params"]
            self.events.append(event)
            for listener in self._listeners:
                listener(event)

    # ------------------------------------------------------------------ facts

    def memory_kib(self) -> dict[str, int]:
        """VmRSS and VmHWM (peak) of the server process."""
        found: dict[str, int] = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                found[name] = int(value.split()[0])
        return found

    async def close(self) -> None:
        self.rate = None
        self.resume()
        with contextlib.suppress(Exception):
            await self.request("shutdown", None, within=60)
            self.notify("exit", None)
        with contextlib.suppress(Exception):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            await asyncio.wait_for(asyncio.to_thread(self.proc.wait), 30)
        except TimeoutError:
            self.proc.kill()
            await asyncio.to_thread(self.proc.wait)
        self._stderr.close()


__all__ = ["Frame", "SlowClient"]
