"""A small MCP server built with the SDK's ``MCPServer``: in process, or over HTTP in a thread.

- :func:`build_server` makes the server object (tools ``greet``, ``stats``, ``snapshot``,
  ``refuse`` (an error result), ``broken`` (a JSON-RPC error), ``slow``); tests connect to it in memory through :class:`InProcess`, a lovia
  ``MCPServer`` config whose transport is the SDK's in-memory one.
- :class:`HTTPMCPServer` serves it on ``127.0.0.1`` (streamable HTTP at ``/mcp``) with uvicorn
  in a thread; with ``token=`` it answers 401 unless ``Authorization: Bearer <token>`` is
  sent. ``seen_headers`` records the headers of every request.
- Run as a script (``python tests/support/mcp_http.py``) it serves in a process of its own,
  prints its URL, and stops when its stdin closes.
"""

from __future__ import annotations

import asyncio
import base64
import socket
import threading
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import uvicorn
from mcp.client._memory import InMemoryTransport
from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError as SDKError

from lovia.plugins.mcp import MCPServer as LoviaMCPServer

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgAAAAAgAB4iG8MwAAAABJRU5ErkJggg=="
)


def build_server(*, instructions: str | None = "Prefer greet for greetings.") -> MCPServer:
    server = MCPServer("lovia-test-http", instructions=instructions, log_level="WARNING")

    @server.tool()
    def greet(name: str) -> str:
        """Greet someone by name."""
        return f"Hello, {name}!"

    @server.tool()
    def stats(values: list[float]) -> dict[str, float]:
        """Count, sum and mean of some numbers."""
        total = sum(values)
        return {"count": len(values), "sum": total, "mean": total / len(values) if values else 0}

    @server.tool()
    def snapshot() -> Image:
        """Take a (tiny) picture."""
        return Image(data=PNG, format="png")

    @server.tool()
    def refuse(reason: str = "policy") -> str:
        """Always refuses."""
        raise ToolError(f"refused: {reason}")

    @server.tool()
    def broken() -> str:
        """Fails with a JSON-RPC error (not a tool result)."""
        raise SDKError(-32602, "broken on purpose")

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep, then answer."""
        await asyncio.sleep(seconds)
        return "finally"

    return server


@dataclass(frozen=True, kw_only=True)
class InProcess(LoviaMCPServer):
    """A lovia server config connected to an SDK server object in memory."""

    server: Any

    def _make_transport(self) -> Callable[[], AbstractAsyncContextManager[Any]]:
        return lambda: InMemoryTransport(self.server)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HTTPMCPServer:
    def __init__(self, *, token: str | None = None, server: MCPServer | None = None) -> None:
        self.token = token
        self.port = _free_port()
        self.seen_headers: list[dict[str, str]] = []
        self._mcp = server or build_server()
        self._uvicorn: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def _app(self) -> Any:
        inner = self._mcp.streamable_http_app()
        token = self.token
        seen = self.seen_headers

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
                seen.append(headers)
                if token is not None and headers.get("authorization") != f"Bearer {token}":
                    await send(
                        {
                            "type": "http.response.start",
                            "status": 401,
                            "headers": [(b"content-type", b"text/plain")],
                        }
                    )
                    await send({"type": "http.response.body", "body": b"unauthorized"})
                    return
            await inner(scope, receive, send)

        return app

    def start(self) -> HTTPMCPServer:
        config = uvicorn.Config(
            self._app(),
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=1,
        )
        self._uvicorn = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._uvicorn.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._uvicorn.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the MCP HTTP test server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> HTTPMCPServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    """Serve on a free port in this process until stdin closes; print the URL first."""
    import sys

    server = HTTPMCPServer().start()
    print(server.url, flush=True)
    try:
        sys.stdin.read()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
