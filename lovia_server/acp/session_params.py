"""The folders and MCP servers a client gives ``session/new``, ``session/load`` and
``session/resume``, checked and turned into what lovia's workspace and MCP plugin take."""

from __future__ import annotations

from pathlib import Path

from acp import schema as a

from lovia_server.acp.request_errors import invalid_params
from lovia_server.acp.workspace import DEFAULT_MODE, ModeId, SessionFolders
from lovia_server.protocol.settings import (
    HttpMCPServerSetting,
    MCPServerSetting,
    StdioMCPServerSetting,
)

McpServer = a.HttpMcpServer | a.SseMcpServer | a.AcpMcpServer | a.McpServerStdio


def folder(raw: str, field_name: str) -> Path:
    """An absolute path to an existing directory (``cwd``, ``additionalDirectories``)."""
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise invalid_params(f"{field_name} must be an absolute path, got {raw!r}", field_name)
    resolved = path.resolve()
    if not resolved.is_dir():
        raise invalid_params(f"{field_name} {resolved} is not a directory", field_name)
    return resolved


def session_place(
    session_id: str, cwd: str, extra: list[str] | None, mode: ModeId = DEFAULT_MODE
) -> SessionFolders:
    """The session's folders: ``cwd`` is its root, ``additionalDirectories`` the others."""
    root = folder(cwd, "cwd")
    folders = [folder(d, f"additionalDirectories.{i}") for i, d in enumerate(extra or [])]
    return SessionFolders(session_id, root, folders, mode)


def mcp_settings(servers: list[McpServer]) -> dict[str, MCPServerSetting]:
    """The client's ``mcpServers`` as the MCP plugin's settings."""
    out: dict[str, MCPServerSetting] = {}
    for index, server in enumerate(servers):
        name = server.name.strip()
        if not name:
            raise invalid_params("An MCP server needs a name", f"mcpServers.{index}.name")
        if isinstance(server, a.McpServerStdio):
            out[name] = StdioMCPServerSetting(
                command=server.command,
                args=list(server.args),
                env={e.name: e.value for e in server.env},
            )
        elif isinstance(server, a.HttpMcpServer):
            try:
                out[name] = HttpMCPServerSetting(
                    url=server.url, headers={h.name: h.value for h in server.headers}
                )
            except ValueError:
                raise invalid_params(
                    "An HTTP MCP server needs an http:// or https:// URL",
                    f"mcpServers.{index}.url",
                ) from None
        else:
            raise invalid_params(
                f"MCP server {name!r}: only stdio and streamable HTTP servers are supported "
                "(mcpCapabilities)",
                f"mcpServers.{index}",
            )
    return out


__all__ = ["McpServer", "folder", "mcp_settings", "session_place"]
