"""The server configs: frozen descriptions of how to reach an MCP server, opened into a
:class:`~lovia.plugins.mcp.MCPConnection`."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lovia.plugins.mcp._sdk import _import_error
from lovia.plugins.mcp.connection import MCPConnection
from lovia.plugins.mcp.transports import _HTTPTransport, _StdioTransport
from lovia.tools.base import ApprovalPredicate, ToolResultRenderer


class MCPServerLike(Protocol):
    """What :class:`MCP` needs from each server: a config or a live connection."""

    @property
    def close_after_run(self) -> bool: ...

    @property
    def defer(self) -> bool: ...

    async def open(self) -> MCPConnection: ...


@dataclass(frozen=True, kw_only=True)
class MCPServer:
    """Configuration shared by the transports. Immutable; :meth:`open` makes a connection."""

    name: str | None = None
    """Tool-name prefix: tools are exposed as ``{name}__{tool}``."""
    include_tools: list[str] | None = None
    exclude_tools: list[str] | None = None
    needs_approval: bool | ApprovalPredicate = False
    approved_tools: frozenset[str] = frozenset()
    """Raw tool names that run without asking even when ``needs_approval`` is set."""
    judge_paths: bool = True
    """Judge the paths a tool's arguments name by the run's workspace ACL: a denied path
    refuses the call, an ``ask`` one needs approval (see :mod:`lovia.plugins.mcp_paths`)."""
    retries: int | None = None
    timeout: float | None = None
    max_output_chars: int | None = None
    result_renderer: ToolResultRenderer | None = None
    auto_reconnect: bool = True
    close_after_run: bool = True
    defer: bool = False
    include_instructions: bool = False
    """Append the instructions the server sends at start-up to the system prompt."""
    connect_timeout: float | None = 30.0
    """Seconds for the transport to start and the MCP handshake to finish."""

    def _label(self) -> str:
        return self.name or type(self).__name__

    def _make_transport(self) -> Callable[[], AbstractAsyncContextManager[Any]]:
        raise NotImplementedError(f"{type(self).__name__} does not define a transport")

    def _connection(self, *, close_after_run: bool) -> MCPConnection:
        return MCPConnection(
            transport=self._make_transport(),
            prefix=self.name,
            include_tools=set(self.include_tools) if self.include_tools is not None else None,
            exclude_tools=set(self.exclude_tools) if self.exclude_tools is not None else None,
            needs_approval=self.needs_approval,
            approved_tools=frozenset(self.approved_tools),
            judge_paths=self.judge_paths,
            retries=self.retries,
            timeout=self.timeout,
            max_output_chars=self.max_output_chars,
            result_renderer=self.result_renderer,
            auto_reconnect=self.auto_reconnect,
            close_after_run=close_after_run,
            defer=self.defer,
            include_instructions=self.include_instructions,
            connect_timeout=self.connect_timeout,
            label=self._label(),
        )

    async def _open_connection(self, *, close_after_run: bool) -> MCPConnection:
        conn = self._connection(close_after_run=close_after_run)
        try:
            await conn._open_session()
            await conn._load_tools()
        except BaseException:
            with contextlib.suppress(Exception):
                await conn.close()
            raise
        return conn

    def connection(self) -> MCPConnection:
        """An unopened connection kept by the caller (``await conn.connect()`` starts it)."""
        return self._connection(close_after_run=False)

    async def open(self) -> MCPConnection:
        """A fresh connection (session started, tools listed) owned by the caller."""
        return await self._open_connection(close_after_run=self.close_after_run)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[MCPConnection]:
        """A connection kept alive for the block, reusable across runs."""
        conn = await self._open_connection(close_after_run=False)
        try:
            yield conn
        finally:
            await conn.close()


@dataclass(frozen=True, kw_only=True)
class MCPServerStdio(MCPServer):
    """A local server started as a subprocess, speaking MCP on stdin/stdout.

    ``env`` is added to a minimal inherited environment (``PATH``, ``HOME``, ``USER``, …);
    ``cwd`` defaults to the current directory.
    """

    command: str
    args: list[str] | None = None
    env: dict[str, str] | None = None
    cwd: str | Path | None = None
    stderr_log: str | Path | None = None
    """Also append the server's stderr to this file (a host's "open log")."""

    def _label(self) -> str:
        return self.name or Path(self.command).name or self.command

    def _make_transport(self) -> Callable[[], AbstractAsyncContextManager[Any]]:
        try:
            from mcp.client.stdio import StdioServerParameters, stdio_client
        except ImportError as exc:
            raise _import_error(exc) from exc
        params = StdioServerParameters(
            command=self.command,
            args=list(self.args or []),
            env=dict(self.env) if self.env is not None else None,
            cwd=self.cwd,
        )
        log = Path(self.stderr_log) if self.stderr_log is not None else None
        return _StdioTransport(params, stdio_client, self._label(), log)


@dataclass(frozen=True, kw_only=True)
class MCPServerStreamableHTTP(MCPServer):
    """A remote server on the streamable HTTP transport (``headers`` go on every request)."""

    url: str
    headers: dict[str, str] | None = None

    def _label(self) -> str:
        return self.name or self.url

    def _make_transport(self) -> Callable[[], AbstractAsyncContextManager[Any]]:
        try:
            import mcp.client.streamable_http  # noqa: F401
        except ImportError as exc:
            raise _import_error(exc) from exc
        return _HTTPTransport(self.url, self.headers)
