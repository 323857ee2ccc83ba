"""Which MCP servers a run of the built-in agent gets, whichever front door started it.

One policy for both hosts: servers come from pools (:mod:`lovia_server.host.mcp_pool`), so a server
that cannot start never fails the run; the run goes on without its tools, the model is told
which are missing, and the run's stream gets an ``mcp.status`` event. Nothing starts in an
untrusted workspace. The settings' servers share one pool; a session that brings servers of
its own (an ACP client's ``mcpServers``) gets a pool of its own, holding the settings' servers
with its own on top, closed with the session.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from lovia_server import protocol as p
from lovia_server.host.mcp_pool import MCPPool, Notify, PooledMCP
from lovia_server.protocol.settings import UNTRUSTED_MCP, InvalidMCPServerSetting, MCPServerSetting

if TYPE_CHECKING:
    from lovia.plugins.base import Plugin
    from lovia_server.protocol.settings import LoviaSettings

logger = logging.getLogger("lovia_server.mcp")

Servers = Mapping[str, MCPServerSetting | InvalidMCPServerSetting]


class MCPPolicy:
    def __init__(
        self,
        *,
        log_dir: Path,
        notify: Notify,
        settings: Callable[[], LoviaSettings],
        trusted: Callable[[], bool],
        refused: Callable[[], None] | None = None,
    ) -> None:
        """``refused`` is called once, the first time a run would have had servers an
        untrusted workspace does not start (the front door tells the user its own way)."""
        self.log_dir = log_dir
        self.notify = notify
        self.settings = settings
        self.trusted = trusted
        self.refused = refused
        self.pool = self._new_pool()
        self._sessions: dict[str, MCPPool] = {}
        self._told_refused = False

    def _new_pool(self) -> MCPPool:
        return MCPPool(
            log_dir=self.log_dir,
            notify=self.notify,
            idle_timeout=lambda: self.settings().mcpIdleTimeoutSeconds,
        )

    def _shared(self) -> MCPPool:
        """The settings' pool, taking the current settings (configuring never starts one)."""
        servers = self.settings().mcpServers
        if self.pool.settings != servers:
            self.pool.configure(servers)
        return self.pool

    def _session_pool(self, session_id: str, own: Servers) -> MCPPool:
        servers = {**self.settings().mcpServers, **own}
        pool = self._sessions.get(session_id)
        if pool is None:
            pool = self._sessions[session_id] = self._new_pool()
        if pool.settings != servers:
            pool.configure(servers)
        return pool

    def plugins(self, root: Path, session_id: str, own: Servers | None = None) -> list[Plugin]:
        """The run's MCP plugin (none when no server is enabled, or the workspace is
        untrusted); ``own`` are servers the session brought itself."""
        if not self.settings().mcpServers and not own:
            return []
        if not self.trusted():
            if not self._told_refused and self.refused is not None:
                self._told_refused = True
                self.refused()
            return []
        pool = self._session_pool(session_id, own) if own else self._shared()
        if not any(_enabled(entry) for entry in pool.settings.values()):
            return []
        return [PooledMCP(pool, root)]

    def settings_changed(self) -> None:
        """Servers whose entry changed restart (only in a trusted workspace)."""
        if not self.trusted():
            return
        affected = self.pool.configure(self.settings().mcpServers)
        if affected:  # a session's own pool takes the new settings at its next run
            logger.info("mcp.reconfigured: %s", ", ".join(affected))

    def infos(self, root: Path | None) -> list[p.MCPServerInfo]:
        """Every configured server of the settings (``lovia/status``), started or not."""
        pool = self._shared()
        if not self.trusted():
            return [
                info.model_copy(update={"state": "stopped", "error": UNTRUSTED_MCP})
                for info in pool.infos(None)
            ]
        return pool.infos(root)

    async def restart(self, name: str, root: Path | None) -> p.MCPServerInfo:
        """Stop one of the settings' servers (in ``root``'s pool) and start it again now."""
        if not self.trusted():
            raise p.invalid_params(UNTRUSTED_MCP, "name")
        if root is None:
            raise p.invalid_params("The editor has no workspace folder open", "name")
        return await self._shared().restart(name, root)

    async def close_session(self, session_id: str) -> None:
        """The session is gone: the servers it brought itself stop."""
        pool = self._sessions.pop(session_id, None)
        if pool is not None:
            await pool.aclose()

    async def aclose(self) -> None:
        for session_id in list(self._sessions):
            await self.close_session(session_id)
        await self.pool.aclose()


def _enabled(entry: MCPServerSetting | InvalidMCPServerSetting) -> bool:
    """An invalid entry counts: the run is told why it cannot start."""
    return isinstance(entry, InvalidMCPServerSetting) or not entry.disabled


__all__ = ["MCPPolicy"]
