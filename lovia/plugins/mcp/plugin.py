"""The :class:`MCP` plugin: opens its servers for a run and mounts their tools."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lovia.exceptions import UserError
from lovia.plugins.base import PluginInstance
from lovia.plugins.mcp.connection import MCPConnection
from lovia.plugins.mcp.deferred import _deferred_instructions, _make_call_tool, _make_search_tool
from lovia.plugins.mcp.servers import MCPServerLike
from lovia.tools.base import Tool

if TYPE_CHECKING:
    from lovia.run_context import RunContext

logger = logging.getLogger("lovia.plugins.mcp")


class MCP:
    """Mount the tools of one or more MCP servers on an agent.

    Configs are opened in ``setup`` (once per run, and per agent a handoff reaches) and
    closed when the run ends; a live :class:`MCPConnection` is used as is and left open for
    its owner. Servers with ``defer=True`` contribute their tools through one
    ``search_mcp_tools`` / ``call_mcp_tool`` pair plus a list of names in the instructions.
    """

    def __init__(self, *servers: MCPServerLike, name: str = "mcp") -> None:
        self.servers: tuple[MCPServerLike, ...] = tuple(servers)
        self.name = name

    def __repr__(self) -> str:
        return f"MCP({len(self.servers)} server(s), name={self.name!r})"

    async def setup(self, ctx: RunContext[Any] | None = None) -> PluginInstance:
        owned: list[MCPConnection] = []

        async def aclose() -> None:
            for conn in reversed(owned):
                try:
                    await conn.close()
                except Exception:
                    logger.debug("mcp.close_failed: %s", conn._name, exc_info=True)

        exposed: list[Tool] = []
        deferred: dict[str, Tool] = {}
        groups: list[tuple[str | None, list[str]]] = []
        notes: list[str] = []
        try:
            for server in self.servers:
                conn = await server.open()
                if server.close_after_run:
                    owned.append(conn)
                tools = conn.tools()
                if getattr(server, "include_instructions", False):
                    text = conn.server_instructions
                    if text:
                        notes.append(f"## MCP server: {conn._name}\n{text.strip()}")
                if not server.defer:
                    exposed.extend(tools)
                    continue
                names: list[str] = []
                for t in tools:
                    if t.name in deferred:
                        raise UserError(
                            f"deferred MCP tool name clash: {t.name!r} comes from two servers.",
                            hint="Give the servers distinct names (MCPServer(name=...)) so "
                            "their tools are prefixed.",
                        )
                    deferred[t.name] = t
                    names.append(t.name)
                groups.append((conn.prefix, names))
            clash = sorted(set(deferred) & {t.name for t in exposed})
            if clash:
                raise UserError(
                    f"deferred MCP tool name clash with exposed tools: {', '.join(clash)}",
                    hint="Give the servers distinct names (MCPServer(name=...)) so their "
                    "tools are prefixed.",
                )
        except BaseException:
            await aclose()
            raise
        tools = list(exposed)
        instructions: list[str] = list(notes)
        if deferred:
            tools += [_make_search_tool(deferred), _make_call_tool(deferred)]
            instructions.append(_deferred_instructions(groups))
        return PluginInstance(
            tools=tools,
            instructions="\n\n".join(instructions) if instructions else None,
            aclose=aclose,
        )
