"""The workspace's MCP servers, started once and shared by every run.

A server from ``lovia.mcpServers`` starts when the first run needs it, stays up for the runs
after it, and stops after ``lovia.mcpIdleTimeoutSeconds`` without a run, on shutdown, or when
its entry changes (then it starts again if it was up). A server that exits mid-call fails that
call, restarts in the background with backoff, and serves the next call. A server that cannot
start does not fail the run: the run goes on without its tools, the model is told which are
missing, and the run's stream gets an ``mcp.status`` event. Tool lists are cached and fetched
again on ``notifications/tools/list_changed``.

Each server has one :class:`~lovia.plugins.mcp.MCPConnection` for its lifetime in the pool; a
restart reconnects that object, so the tools a run holds keep working across restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lovia.plugins.base import PluginInstance
from lovia_server import protocol as p
from lovia_server.host.agents import BrokenMCPServer, mcp_server_config
from lovia_server.protocol import MCPStatus
from lovia_server.protocol.settings import (
    InvalidMCPServerSetting,
    MCPServerSetting,
    StdioMCPServerSetting,
)

if TYPE_CHECKING:
    from lovia.plugins.mcp import MCPConnection
    from lovia.run_context import RunContext

logger = logging.getLogger("lovia_server.mcp")

BACKOFF = (0.0, 1.0, 2.0, 5.0, 10.0, 30.0)
"""Seconds before the n-th consecutive restart attempt (the last one repeats); a server that
stayed up for ``STABLE_SECONDS`` starts the count again."""
STABLE_SECONDS = 60.0

Notify = Callable[[str, MCPStatus], None]


def backoff(failures: int) -> float:
    return BACKOFF[min(max(failures - 1, 0), len(BACKOFF) - 1)]


@dataclass
class PooledServer:
    """One configured server in one workspace folder, and its live connection."""

    name: str
    root: Path
    fingerprint: str
    transport: str
    config: Any  # an MCPServer config, or a BrokenMCPServer
    log: Path | None
    conn: MCPConnection | None = None
    state: p.MCPServerState = "idle"
    error: str | None = None
    starts: int = 0
    failures: int = 0
    retry_at: float = 0.0
    started_at: float = 0.0
    tools: list[str] = field(default_factory=list)
    users: dict[str, int] = field(default_factory=dict)  # session id -> runs holding it
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    idle_timer: asyncio.TimerHandle | None = None
    restarting: asyncio.Task[None] | None = None

    def info(self) -> p.MCPServerInfo:
        return p.MCPServerInfo(
            name=self.name,
            transport="http" if self.transport == "http" else "stdio",
            state=self.state,
            tools=list(self.tools),
            error=self.error,
            starts=self.starts,
            log=str(self.log) if self.log is not None else None,
        )


def fingerprint(entry: MCPServerSetting | InvalidMCPServerSetting, root: Path) -> str:
    """Changes exactly when the server would start differently."""
    body = json.dumps([str(root), entry.model_dump(mode="json")], sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


class MCPPool:
    """The MCP servers of one workspace (one language-server process)."""

    def __init__(
        self,
        *,
        log_dir: Path,
        notify: Notify,
        idle_timeout: Callable[[], float],
    ) -> None:
        self.log_dir = log_dir
        self.notify = notify
        self.idle_timeout = idle_timeout
        self.servers: dict[tuple[str, Path], PooledServer] = {}
        self.settings: Mapping[str, MCPServerSetting | InvalidMCPServerSetting] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    # ------------------------------------------------------------------ configuration

    def configure(
        self, servers: Mapping[str, MCPServerSetting | InvalidMCPServerSetting]
    ) -> list[str]:
        """Take new settings: servers whose entry changed or went away stop (a changed one
        that was up starts again); the others are not touched. Returns the affected names."""
        self.settings = dict(servers)
        affected: list[str] = []
        for key, server in list(self.servers.items()):
            entry = self._enabled().get(server.name)
            if entry is not None and fingerprint(entry, server.root) == server.fingerprint:
                continue
            affected.append(server.name)
            was_up = server.state in ("running", "starting", "restarting")
            del self.servers[key]
            self._spawn(self._replace(server, restart=was_up and entry is not None))
        return affected

    def _enabled(self) -> dict[str, MCPServerSetting | InvalidMCPServerSetting]:
        return {
            name: entry
            for name, entry in self.settings.items()
            if isinstance(entry, InvalidMCPServerSetting) or not entry.disabled
        }

    async def _replace(self, old: PooledServer, *, restart: bool) -> None:
        await self._stop(old, state="stopped")
        if restart:
            server = self._server(old.name, old.root)
            if server is not None:
                await self._ensure(server)

    def _server(self, name: str, root: Path) -> PooledServer | None:
        entry = self._enabled().get(name)
        if entry is None:
            return None
        key = (name, root)
        server = self.servers.get(key)
        if server is None:
            config = mcp_server_config(name, entry, root, log_dir=self.log_dir)
            log = getattr(config, "stderr_log", None)
            server = PooledServer(
                name=name,
                root=root,
                fingerprint=fingerprint(entry, root),
                transport="stdio" if isinstance(entry, StdioMCPServerSetting) else "http",
                config=config,
                log=Path(log) if log is not None else None,
            )
            if isinstance(config, BrokenMCPServer):
                server.state, server.error = "failed", config.problem
            self.servers[key] = server
        return server

    # ------------------------------------------------------------------ runs

    async def acquire(
        self, root: Path, session_id: str
    ) -> tuple[list[PooledServer], list[PooledServer]]:
        """Every enabled server for a run in ``root``: (usable, unavailable). Starts what is
        not running yet, concurrently."""
        servers = [s for s in (self._server(n, root) for n in self._enabled()) if s is not None]
        for server in servers:
            server.users[session_id] = server.users.get(session_id, 0) + 1
            if server.idle_timer is not None:
                server.idle_timer.cancel()
                server.idle_timer = None
        await asyncio.gather(*(self._ensure(s) for s in servers))
        usable = [s for s in servers if s.state == "running" and s.conn is not None]
        return usable, [s for s in servers if s not in usable]

    def release(self, servers: list[PooledServer], session_id: str) -> None:
        for server in servers:
            count = server.users.get(session_id, 0) - 1
            if count > 0:
                server.users[session_id] = count
            else:
                server.users.pop(session_id, None)
            if not server.users and server.conn is not None and not self._closed:
                delay = self.idle_timeout()
                loop = asyncio.get_running_loop()
                server.idle_timer = loop.call_later(delay, self._idle, server)

    def _idle(self, server: PooledServer) -> None:
        server.idle_timer = None
        if not server.users and self.servers.get((server.name, server.root)) is server:
            logger.info("mcp.idle_stop: %s", server.name)
            self._spawn(self._stop(server, state="idle"))

    # ------------------------------------------------------------------ lifecycle

    async def _ensure(self, server: PooledServer) -> None:
        """Running, or failed with an error; never raises."""
        async with server.lock:
            if isinstance(server.config, BrokenMCPServer):
                return
            if server.state == "running" and server.conn is not None:
                if await server.conn.ping():
                    return
                server.error = "the server stopped answering"
            if server.state == "failed" and time.monotonic() < server.retry_at:
                return  # backing off: the last error stands
            await self._start(server)

    async def _start(self, server: PooledServer) -> None:
        server.state = "starting" if server.starts == 0 else "restarting"
        self._tell(server)
        if server.conn is None:
            server.conn = self._connection(server)
        try:
            await server.conn.connect()
        except Exception as exc:
            server.failures += 1
            server.retry_at = time.monotonic() + backoff(server.failures)
            server.state = "failed"
            server.error = _error_text(exc)
            logger.info("mcp.start_failed: %s %s", server.name, server.error)
        else:
            server.starts += 1
            server.started_at = time.monotonic()
            server.state, server.error = "running", None
            server.tools = [t.name for t in server.conn.tools()]
        self._tell(server)

    def _connection(self, server: PooledServer) -> MCPConnection:
        conn: MCPConnection = server.config.connection()
        conn.auto_reconnect = False
        conn.on_lost = lambda exc: self._lost(server, exc)
        conn.on_tools_changed = lambda tools: self._tools_changed(server, tools)
        return conn

    def _lost(self, server: PooledServer, exc: BaseException) -> None:
        """A call found the server gone: restart it after the backoff delay."""
        if server.restarting is not None and not server.restarting.done():
            return
        if time.monotonic() - server.started_at > STABLE_SECONDS:
            server.failures = 0
        server.failures += 1
        server.state, server.error = "restarting", f"the server exited: {_error_text(exc)}"
        self._tell(server)
        server.restarting = self._spawn(self._restart_later(server, backoff(server.failures)))

    async def _restart_later(self, server: PooledServer, delay: float) -> None:
        await asyncio.sleep(delay)
        async with server.lock:
            current = self.servers.get((server.name, server.root)) is server
            if current and not self._closed and server.state != "running":
                await self._start(server)

    def _tools_changed(self, server: PooledServer, tools: list[Any]) -> None:
        server.tools = [t.name for t in tools]
        self._tell(server)

    async def _stop(self, server: PooledServer, *, state: p.MCPServerState) -> None:
        if server.idle_timer is not None:
            server.idle_timer.cancel()
            server.idle_timer = None
        if server.restarting is not None:
            server.restarting.cancel()
        async with server.lock:
            conn = server.conn
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.close()
            if server.state != "failed" or state == "stopped":
                server.state = state
            self._tell(server)

    async def restart(self, name: str, root: Path) -> p.MCPServerInfo:
        """Stop one server and start it again now (the user's restart button)."""
        server = self._server(name, root)
        if server is None:
            raise p.invalid_params(f"No enabled MCP server {name!r} in lovia.mcpServers", "name")
        await self._stop(server, state="stopped")
        server.retry_at = 0.0
        server.failures = 0
        async with server.lock:
            if not isinstance(server.config, BrokenMCPServer):
                await self._start(server)
        return server.info()

    async def aclose(self) -> None:
        self._closed = True
        for server in list(self.servers.values()):
            await self._stop(server, state="stopped")
        for task in list(self._tasks):
            task.cancel()

    # ------------------------------------------------------------------ views

    def infos(self, root: Path | None) -> list[p.MCPServerInfo]:
        """Every configured server (in ``root``'s pool), started or not."""
        out: list[p.MCPServerInfo] = []
        for name, entry in self.settings.items():
            server = self.servers.get((name, root)) if root is not None else None
            if server is not None:
                out.append(server.info())
                continue
            disabled = not isinstance(entry, InvalidMCPServerSetting) and entry.disabled
            out.append(
                p.MCPServerInfo(
                    name=name,
                    transport="stdio" if isinstance(entry, StdioMCPServerSetting) else "http",
                    state="stopped" if disabled else "idle",
                    tools=[],
                    error=entry.problem if isinstance(entry, InvalidMCPServerSetting) else None,
                    starts=0,
                    log=None,
                )
            )
        return out

    def _tell(self, server: PooledServer) -> None:
        payload = MCPStatus(
            server=server.name, state=server.state, tools=list(server.tools), error=server.error
        )
        for session_id in list(server.users):
            self.notify(session_id, payload)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task


def _error_text(exc: BaseException) -> str:
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    hint = getattr(exc, "hint", None)
    return f"{message}\n{hint}" if hint else message


# --------------------------------------------------------------------------- the run's plugin


class PooledMCP:
    """The built-in agent's MCP plugin: this run's share of the workspace pool."""

    name = "mcp"

    def __init__(self, pool: MCPPool, root: Path) -> None:
        self.pool = pool
        self.root = root

    def __repr__(self) -> str:
        return f"PooledMCP(root={str(self.root)!r})"

    async def setup(self, ctx: RunContext[Any] | None = None) -> PluginInstance:
        from lovia.plugins.mcp import MCP

        session_id = (ctx.session_id if ctx is not None else None) or ""
        usable, missing = await self.pool.acquire(self.root, session_id)
        try:
            inner = await MCP(*[s.conn for s in usable if s.conn is not None]).setup(ctx)
        except BaseException:
            self.pool.release(usable + missing, session_id)
            raise
        notes = [inner.instructions] if inner.instructions else []
        if missing:
            notes.append(_unavailable_note(missing))
        for server in missing:
            self.pool.notify(
                session_id,
                MCPStatus(
                    server=server.name,
                    state=server.state,
                    tools=list(server.tools),
                    error=server.error,
                ),
            )
        inner_close = inner.aclose

        async def aclose() -> None:
            self.pool.release(usable + missing, session_id)
            if inner_close is not None:
                await inner_close()

        return PluginInstance(
            tools=inner.tools,
            instructions="\n\n".join(notes) or None,
            aclose=aclose,
        )


def _unavailable_note(missing: list[PooledServer]) -> str:
    lines = ["## Unavailable MCP servers"]
    for server in missing:
        why = (server.error or server.state).splitlines()[0]
        tools = ", ".join(server.tools) if server.tools else "all of its tools"
        lines.append(
            f"- `{server.name}` is not available in this run ({why}); you cannot use {tools}. "
            "Tell the user if the task needs them."
        )
    return "\n".join(lines)


__all__ = ["BACKOFF", "MCPPool", "PooledMCP", "PooledServer", "backoff", "fingerprint"]
