"""MCP: tools from Model Context Protocol servers, as a plugin.

A server is described by a frozen config (:class:`MCPServerStdio`,
:class:`MCPServerStreamableHTTP`); opening it yields a live :class:`MCPConnection` that owns
the session and turns the server's tools into ordinary :class:`~lovia.tools.Tool` objects.
The :class:`MCP` plugin opens its servers in ``setup`` — once per run for configs, so every
run owns its connections — and closes them when the run ends::

    agent = Agent(..., plugins=[MCP(MCPServerStdio(command="uvx", args=["mcp-server-git"]))])

    # or keep one connection alive across runs:
    async with MCPServerStdio(command="...").session() as conn:
        agent = Agent(..., plugins=[MCP(conn)])

The official ``mcp`` SDK (``pip install 'mcp>=2.3,<3'``) is imported only when a transport or
a session is built: importing this module never imports it.

Each live session runs in a small task of its own that enters and leaves the SDK's transport
and session contexts. Tool calls talk to it through the session's streams from whatever task
they run in, so per-tool timeouts, parallel tool calls, reconnects and a teardown from another
task never trip anyio's "cancel scope in a different task" rule.
"""

from lovia.exceptions import MCPError
from lovia.plugins.mcp._sdk import _is_transport_error as _is_transport_error  # tests use it
from lovia.plugins.mcp.connection import MCPConnection
from lovia.plugins.mcp.content import MCPToolResult, normalize_schema, render_mcp_content
from lovia.plugins.mcp.deferred import _make_call_tool as _make_call_tool
from lovia.plugins.mcp.deferred import _make_search_tool as _make_search_tool
from lovia.plugins.mcp.plugin import MCP
from lovia.plugins.mcp.servers import (
    MCPServer,
    MCPServerLike,
    MCPServerStdio,
    MCPServerStreamableHTTP,
)

__all__ = [
    "MCP",
    "MCPConnection",
    "MCPError",
    "MCPServer",
    "MCPServerLike",
    "MCPServerStdio",
    "MCPServerStreamableHTTP",
    "MCPToolResult",
    "normalize_schema",
    "render_mcp_content",
]
