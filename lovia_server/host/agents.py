"""Which agent a run uses: the built-in coding agent, or a user agent from the workspace."""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lovia.agent import Agent
from lovia.exceptions import MCPError, UserError
from lovia.plugins.todo import Todo
from lovia.providers.base import ModelSettings
from lovia.tools.base import Tool
from lovia_server import protocol as p
from lovia_server.protocol.settings import (
    HttpMCPServerSetting,
    InvalidMCPServerSetting,
    MCPServerSetting,
    StdioMCPServerSetting,
)

if TYPE_CHECKING:
    from lovia.plugins.base import Plugin
    from lovia.plugins.mcp import MCPConnection, MCPServerLike

BUILTIN_CODING = "lovia:coding"
BUILTIN_DEMO = "lovia:demo"

CODING_INSTRUCTIONS = """You are lovia, a coding agent working inside the user's editor.

How to work:
- The user sees your messages in a side panel next to their code. Be direct and concise; use
  Markdown, and refer to files with workspace-relative paths (optionally `path:line`).
- Understand before you change: look around with list_files and grep_files, read the relevant
  code with read_file, then make focused edits with edit_file (write_file for new files or full
  rewrites). Keep the project's style and conventions.
- Files the user has open are read from the editor, including unsaved changes.
- Some actions need the user's approval (they see a diff or the command first). If they reject
  one, respect it: ask or take another approach instead of retrying the same call.
- Use shell to run tests, linters and builds to check your work. Commands are non-interactive.
- For multi-step tasks keep a todo list with todo_write and update it as you go.
- If something is ambiguous or a decision belongs to the user, ask with ask_human instead of
  guessing.
- When you are done, summarise what you changed and anything left for the user to check."""


def agent_file(spec: str, folders: list[Path]) -> Path | None:
    """The file an agent spec ``path/to/file.py:name`` names (``None``: not that shape)."""
    path_part, sep, attr = spec.rpartition(":")
    if not sep or not path_part or not attr:
        return None
    candidate = Path(path_part).expanduser()
    base = folders[0] if folders else Path.cwd()
    return (candidate if candidate.is_absolute() else base / candidate).resolve()


def load_user_agent(spec: str, folders: list[Path]) -> Agent[Any]:
    """Load ``path/to/file.py:name`` from inside a workspace folder (trusted workspaces only)."""
    path = agent_file(spec, folders)
    attr = spec.rpartition(":")[2]
    if path is None:
        raise p.invalid_params(
            f"lovia.agent must look like 'path/to/file.py:name', got {spec!r}", "agent"
        )
    if not any(path.is_relative_to(folder.resolve()) for folder in folders):
        raise p.ProtocolError(
            p.PATH_OUTSIDE_WORKSPACE,
            f"The agent file {path} is outside every workspace folder",
            {"field": "agent", "path": str(path)},
        )
    if not path.is_file():
        raise p.invalid_params(f"The agent file {path} does not exist", "agent", path=str(path))
    module_name = "lovia_user_agent_" + hashlib.sha1(str(path).encode()).hexdigest()[:10]
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise p.invalid_params(f"Cannot import {path}", "agent", path=str(path))
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise p.invalid_params(
            f"Importing {path} failed: {type(exc).__name__}: {exc}", "agent", path=str(path)
        ) from exc
    obj = getattr(module, attr, None)
    if obj is None:
        raise p.invalid_params(f"{path} has no attribute {attr!r}", "agent", path=str(path))
    if isinstance(obj, Agent):
        return obj
    if callable(obj) and not inspect.iscoroutinefunction(obj):
        made = obj()
        if isinstance(made, Agent):
            return made
    raise p.invalid_params(
        f"{spec} is not an Agent (or a function returning one)", "agent", path=str(path)
    )


def coding_agent(
    model: str,
    *,
    extra_tools: list[Tool],
    plugins: list[Plugin] | None = None,
    provider_options: dict[str, dict[str, Any]] | None = None,
) -> Agent[Any]:
    """The built-in agent; ``provider_options`` come from the settings (prompt caching)."""
    return Agent(
        name="lovia",
        instructions=CODING_INSTRUCTIONS,
        model=model,
        tools=list(extra_tools),
        plugins=[Todo(), *(plugins or [])],
        settings=ModelSettings(provider_options=dict(provider_options or {})),
    )


# --------------------------------------------------------------------------- MCP servers

_VARIABLE = re.compile(r"\$\{(env:[A-Za-z_][A-Za-z0-9_]*|workspaceFolder)\}")
_MCP_SHAPE_HINT = (
    "Each lovia.mcpServers entry is {command, args?, env?, cwd?} for a local server or "
    "{url, headers?} for an HTTP server (see docs/server.md)."
)


@dataclass(frozen=True)
class BrokenMCPServer:
    """An ``mcpServers`` entry that cannot be used: opening it fails the run, not the server."""

    name: str
    problem: str
    close_after_run: bool = True
    defer: bool = False

    async def open(self) -> MCPConnection:
        raise MCPError(
            f"MCP server {self.name!r} (lovia.mcpServers) is misconfigured: {self.problem}",
            hint=f"Fix or remove lovia.mcpServers.{self.name}. {_MCP_SHAPE_HINT}",
        )


def _tool_prefix(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", name.strip()) or "mcp"


def _expand(value: str, root: Path) -> str:
    """``${env:NAME}`` and ``${workspaceFolder}``; an unset variable is an error."""

    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "workspaceFolder":
            return str(root)
        name = key.removeprefix("env:")
        if name not in os.environ:
            raise ValueError(f"the environment variable {name} (used as ${{{key}}}) is not set")
        return os.environ[name]

    return _VARIABLE.sub(one, value)


def mcp_server_config(
    name: str,
    entry: MCPServerSetting | InvalidMCPServerSetting,
    root: Path,
    *,
    log_dir: Path | None = None,
) -> MCPServerLike:
    """One ``mcpServers`` entry as a lovia MCP config (``BrokenMCPServer`` when unusable);
    with ``log_dir``, a stdio server's stderr also goes to ``<log_dir>/<name>.log``."""
    from lovia.plugins.mcp import MCPServerStdio, MCPServerStreamableHTTP

    if isinstance(entry, InvalidMCPServerSetting):
        return BrokenMCPServer(name, entry.problem)
    common: dict[str, Any] = {
        "name": _tool_prefix(name),
        "include_tools": entry.includeTools,
        "exclude_tools": entry.excludeTools,
        "defer": entry.defer,
        "needs_approval": entry.needsApproval,
        "approved_tools": frozenset(entry.approvedTools),
        "timeout": entry.timeout,
        "connect_timeout": entry.connectTimeout,
        "include_instructions": True,
    }
    try:
        if isinstance(entry, StdioMCPServerSetting):
            cwd = Path(_expand(entry.cwd, root)).expanduser() if entry.cwd else root
            return MCPServerStdio(
                command=_expand(entry.command, root),
                args=[_expand(a, root) for a in entry.args],
                env={k: _expand(v, root) for k, v in entry.env.items()},
                cwd=cwd if cwd.is_absolute() else root / cwd,
                stderr_log=log_dir / f"{_tool_prefix(name)}.log" if log_dir is not None else None,
                **common,
            )
        assert isinstance(entry, HttpMCPServerSetting)
        return MCPServerStreamableHTTP(
            url=_expand(entry.url, root),
            headers={k: _expand(v, root) for k, v in entry.headers.items()},
            **common,
        )
    except ValueError as exc:
        return BrokenMCPServer(name, str(exc))


def check_model(model: str | None) -> str:
    """Fail fast with -32016 when no usable model is configured."""
    if not model:
        raise p.ProtocolError(
            p.MODEL_NOT_CONFIGURED,
            "No model is configured",
            {
                "hint": "Set the lovia.model setting (e.g. 'openai:gpt-4.1-mini' or "
                "'anthropic:claude-sonnet-4-5') or the LOVIA_MODEL environment variable; for a "
                "local OpenAI-compatible server also set OPENAI_BASE_URL.",
            },
        )
    from lovia.providers import provider_from_string

    try:
        provider = provider_from_string(model)
        check = getattr(provider, "_check_ready", None)
        if callable(check):
            check()
    except UserError as exc:
        raise p.ProtocolError(
            p.MODEL_NOT_CONFIGURED,
            exc.message or str(exc),
            {"hint": exc.hint or "Check the lovia.model setting.", "model": model},
        ) from exc
    return model


__all__ = [
    "BUILTIN_CODING",
    "BUILTIN_DEMO",
    "CODING_INSTRUCTIONS",
    "BrokenMCPServer",
    "agent_file",
    "check_model",
    "coding_agent",
    "load_user_agent",
    "mcp_server_config",
]
