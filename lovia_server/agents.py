"""Which agent a run uses: the built-in coding agent, or a user agent from the workspace."""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lovia.agent import Agent
from lovia.exceptions import UserError
from lovia.plugins.todo import Todo
from lovia.tools.base import Tool
from lovia_server import protocol as p

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


@dataclass
class AgentChoice:
    agent: Agent[Any]
    label: str
    needs_workspace: bool


def load_user_agent(spec: str, folders: list[Path]) -> Agent[Any]:
    """Load ``path/to/file.py:name`` from inside a workspace folder (trusted workspaces only)."""
    path_part, sep, attr = spec.rpartition(":")
    if not sep or not path_part or not attr:
        raise p.invalid_params(
            f"lovia.agent must look like 'path/to/file.py:name', got {spec!r}", "agent"
        )
    candidate = Path(path_part).expanduser()
    base = folders[0] if folders else Path.cwd()
    path = (candidate if candidate.is_absolute() else base / candidate).resolve()
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


def coding_agent(model: str, *, extra_tools: list[Tool]) -> Agent[Any]:
    return Agent(
        name="lovia",
        instructions=CODING_INSTRUCTIONS,
        model=model,
        tools=list(extra_tools),
        plugins=[Todo()],
    )


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
    "check_model",
    "coding_agent",
    "load_user_agent",
]
