"""Params and result of ``lovia/commands``: the ``/`` commands a prompt may start with.

Built-ins (``/help``, ``/plan``, ``/init``, ...), the workspace's command files and the user's
(docs/customization.md#commands); ``lovia/run`` expands a prompt that starts with one. The
``Method`` row is in ``methods.py`` with every other request.
"""

from __future__ import annotations

from typing import Literal

from typing_extensions import TypeAliasType

from lovia_server.protocol.wire import WireModel, WireParams

CommandSource = TypeAliasType("CommandSource", Literal["built-in", "workspace", "user"])


class CommandsParams(WireParams):
    cwd: str | None = None
    """The folder whose commands to list (a path inside a workspace folder); the first folder
    when omitted."""


class CommandInfo(WireModel):
    """One ``/name`` a prompt may start with."""

    name: str
    """Without the slash; a subfolder namespaces it (``frontend:component``)."""
    description: str
    argument_hint: str | None = None
    source: CommandSource
    """``workspace``: a file of the workspace (also in an untrusted one: it is labelled so);
    ``user``: the user's ``~/.lovia/commands``; ``built-in``: lovia's."""
    path: str | None = None
    """The command file (absolute); null for a built-in."""
    mode: Literal["plan", "act"] | None = None
    """The mode the command runs in, when it sets one (``/plan``, ``/review``: ``plan``)."""


class CommandsResult(WireModel):
    commands: list[CommandInfo]
    """Built-ins first, then the workspace's and the user's (a name already taken is left
    out: the first one wins)."""


__all__ = ["CommandInfo", "CommandSource", "CommandsParams", "CommandsResult"]
