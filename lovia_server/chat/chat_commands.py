"""The chat's commands: its local ones (answered by ``lovia chat`` itself, never sent to the
model) and the server's (``lovia/commands``: ``/plan``, ``/review``, the workspace's command
files), which go to ``lovia/run`` as typed and are expanded there, as in every front door."""

from __future__ import annotations

import re
from typing import Any

COMMANDS = ["/help", "/new", "/resume", "/exit", "/quit"]

HELP = """\
commands (answered here, never sent to the model):
  /help          this list
  /new [message] a new session: the next message (or this one) starts a fresh conversation
  /resume        continue the latest interrupted run of this workspace
  /exit, /quit   leave the chat (Ctrl-D on an empty line too)
keys:
  Enter          send; while a run works, a line steers it (or answers its question)
  Ctrl-C         cancel the live run; again, or at the prompt, quit
  Tab            complete a command; Up/Down: earlier lines
a line whose first word is a path (/usr/bin/python is broken) is a message, not a command"""

_COMMAND = re.compile(r"/[A-Za-z0-9_][A-Za-z0-9_.:-]*")


def command_of(line: str) -> str | None:
    """The command a line is (its first word), or None when it is a message."""
    words = line.split(maxsplit=1)
    if words and _COMMAND.fullmatch(words[0]):
        return words[0]
    return None


def unknown(command: str) -> str:
    return f"unknown command {command} (not sent to the model); /help lists the commands"


def server_commands(listed: list[dict[str, Any]]) -> dict[str, str]:
    """``/name`` -> what completion shows beside it, for the server's commands the chat does
    not answer itself (its own ``/help`` and ``/new`` come first)."""
    out: dict[str, str] = {}
    for command in listed:
        name = f"/{command['name']}"
        if name in COMMANDS:
            continue
        hint = command.get("argumentHint")
        where = "" if command.get("source") == "built-in" else f" ({command.get('source')})"
        out[name] = (f"{hint} — " if hint else "") + f"{command.get('description', '')}{where}"
    return out


def server_help(listed: list[dict[str, Any]]) -> str:
    """``/help``'s second part: the server's commands with their arguments, descriptions and
    where they come from ("" when there are none)."""
    rows: list[tuple[str, str]] = []
    for command in listed:
        name = f"/{command['name']}"
        if name in COMMANDS:
            continue
        hint = command.get("argumentHint")
        usage = f"{name} {hint}" if hint else name
        source = command.get("source")
        where = "" if source == "built-in" else f"  [{source}: {command.get('path')}]"
        rows.append((usage, f"{command.get('description', '')}{where}"))
    if not rows:
        return ""
    width = max(len(usage) for usage, _ in rows)
    lines = [f"  {usage.ljust(width)}  {text}" for usage, text in rows]
    return "\n".join(["commands run by the agent (expanded by the server):", *lines])


__all__ = ["COMMANDS", "HELP", "command_of", "server_commands", "server_help", "unknown"]
