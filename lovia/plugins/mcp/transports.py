"""The transports a connection opens: a spawned stdio server (with its stderr tail) and
streamable HTTP."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

from lovia.plugins.mcp._sdk import _import_error

logger = logging.getLogger("lovia.plugins.mcp")

_STDERR_LINES = 30


class _StdioTransport:
    """Spawns the server per connection; keeps the tail of its stderr for error messages."""

    failure_hint = "Check that the command is installed, on PATH, and starts an MCP stdio server."

    def __init__(self, params: Any, stdio_client: Any, label: str, log: Path | None = None) -> None:
        self.params = params
        self._stdio_client = stdio_client
        self._label = label
        self._log = log
        self._stderr: deque[str] = deque(maxlen=_STDERR_LINES)
        self._reader: threading.Thread | None = None

    def __call__(self) -> AbstractAsyncContextManager[Any]:
        return self._connect()

    async def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr (waits briefly for them to arrive)."""
        reader = self._reader
        if reader is not None and reader.is_alive():
            await asyncio.to_thread(reader.join, 1.0)
        return "\n".join(self._stderr).strip()

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[Any]:
        self._stderr.clear()
        read_fd, write_fd = os.pipe()
        errlog = os.fdopen(write_fd, "w")
        reader = threading.Thread(
            target=_pump_stderr,
            args=(read_fd, self._stderr, self._label, self._log),
            name=f"lovia-mcp-stderr:{self._label}",
            daemon=True,
        )
        reader.start()
        self._reader = reader
        try:
            async with self._stdio_client(self.params, errlog=errlog) as streams:
                errlog.close()  # the child holds its own copy now
                yield streams
        finally:
            if not errlog.closed:
                errlog.close()


def _pump_stderr(fd: int, sink: deque[str], label: str, log: Path | None = None) -> None:
    copy = None
    if log is not None:
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            copy = log.open("a", encoding="utf-8")
        except OSError:
            logger.debug("mcp.stderr_log_failed: %s", log, exc_info=True)
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as stream:
        for line in stream:
            line = line.rstrip("\n")
            sink.append(line)
            logger.debug("mcp[%s] stderr: %s", label, line)
            if copy is not None:
                copy.write(line + "\n")
                copy.flush()
    if copy is not None:
        copy.close()


class _HTTPTransport:
    failure_hint = "Check the URL, that the server is running, and any auth headers."

    def __init__(self, url: str, headers: dict[str, str] | None) -> None:
        self.url = url
        self.headers = dict(headers or {})

    def __call__(self) -> AbstractAsyncContextManager[Any]:
        return self._connect()

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[Any]:
        try:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client
        except ImportError as exc:
            raise _import_error(exc) from exc
        # The SDK's HTTP client (httpx2): 30 s to connect/write, 5 min between stream reads.
        client = httpx2.AsyncClient(headers=self.headers, timeout=httpx2.Timeout(30.0, read=300.0))
        async with client, streamable_http_client(self.url, http_client=client) as streams:
            yield streams
