"""The chat's local commands: answered by ``lovia chat`` itself, never sent to the model."""

from __future__ import annotations

import re

COMMANDS = ["/help", "/new", "/resume", "/exit", "/quit"]

HELP = """\
commands (answered here, never sent to the model):
  /help          this list
  /new           a new session: the next message starts a fresh conversation
  /resume        continue the latest interrupted run of this workspace
  /exit, /quit   leave the chat (Ctrl-D on an empty line too)
keys:
  Enter          send; while a run works, a line steers it (or answers its question)
  Ctrl-C         cancel the live run; again, or at the prompt, quit
  Tab            complete a command; Up/Down: earlier lines
a line whose first word is a path (/usr/bin/python is broken) is a message, not a command"""

_COMMAND = re.compile(r"/[a-z][a-z0-9-]*")


def command_of(line: str) -> str | None:
    """The command a line is (its first word), or None when it is a message."""
    words = line.split(maxsplit=1)
    if words and _COMMAND.fullmatch(words[0]):
        return words[0]
    return None


def unknown(command: str) -> str:
    return f"unknown command {command} (not sent to the model); /help lists the commands"


__all__ = ["COMMANDS", "HELP", "command_of", "unknown"]
