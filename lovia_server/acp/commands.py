"""Slash commands for ACP clients: lovia's commands, then each skill the agent can load.

The commands (built-ins, the folder's command files and the user's: docs/customization.md)
expand as ``lovia/run`` expands them (:mod:`lovia_server.host.command_runs`). Skills live in
``.lovia/skills`` of the session's folder and in ``~/.lovia/skills`` (see docs/skills.md);
``/name rest`` asks the agent to load that skill and apply it to ``rest``. A command's
description says where it comes from (``workspace`` or ``user``), also in an untrusted folder.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import schema as a

from lovia.workspace.project_commands import Command, split_invocation
from lovia_server import protocol as p
from lovia_server.host.command_runs import CommandRun, command_run, workspace_commands

if TYPE_CHECKING:
    from lovia.workspace import LocalWorkspace


def skill_roots(folder: Path) -> list[Path]:
    """The skills directories that exist for a session in ``folder`` (the folder's first)."""
    candidates = [folder / ".lovia" / "skills", Path.home() / ".lovia" / "skills"]
    return [p for p in candidates if p.is_dir()]


async def skill_commands(roots: list[Path]) -> list[a.AvailableCommand]:
    if not roots:
        return []
    from lovia.plugins.skills import SkillCatalog

    skills = await SkillCatalog.from_dir(*roots).list_skills()
    return [
        a.AvailableCommand(
            name=skill.name,
            description=skill.description,
            input=a.AvailableCommandInput(root=a.UnstructuredCommandInput(hint="what to do")),
        )
        for skill in skills
    ]


def expand_command(text: str, names: set[str]) -> str:
    """``/name rest`` (a known skill) as the instruction the model gets; anything else as is."""
    if not text.startswith("/"):
        return text
    head, _, rest = text[1:].partition(" ")
    if head not in names:
        return text
    task = rest.strip() or "the task at hand"
    return f"Use the skill `{head}`: load it with load_skill, then apply it to: {task}"


def skills_plugin(roots: list[Path]) -> Any:
    from lovia.plugins.skills import Skills

    return Skills(*roots)


def _available(command: Command) -> a.AvailableCommand:
    where = "" if command.source == "built-in" else f" ({command.source}: {command.path})"
    hint = command.argument_hint
    return a.AvailableCommand(
        name=command.name,
        description=f"{command.description}{where}",
        input=a.AvailableCommandInput(root=a.UnstructuredCommandInput(hint=hint)) if hint else None,
    )


async def commands_update(
    folder: Path, config: LocalWorkspace
) -> tuple[set[str], a.AvailableCommandsUpdate]:
    """The session's skill names, and the update listing its commands and skills."""
    roots = await asyncio.to_thread(skill_roots, folder)
    commands = await asyncio.to_thread(workspace_commands, config)
    commands = [c for c in commands if c.name != NEW_IN_ACP]
    taken = {c.name for c in commands}
    skills = [s for s in await skill_commands(roots) if s.name not in taken]
    update = a.AvailableCommandsUpdate(
        session_update="available_commands_update",
        available_commands=[*map(_available, commands), *skills],
    )
    return {s.name for s in skills}, update


NEW_IN_ACP = "new"
"""``/new`` is the client's own: an ACP session is opened by the client."""


async def prompt_command(text: str, skills: set[str], config: LocalWorkspace) -> CommandRun | None:
    """A prompt that starts with a command's ``/name`` as the run it asks for; None for any
    other text and for a skill's name (:func:`expand_command`). An unknown name is
    ``ProtocolError`` -32602 with a hint, before any model call."""
    split = split_invocation(text)
    if split is None or split[0] in skills:
        return None
    if split[0] == NEW_IN_ACP:
        raise p.invalid_params(
            "/new: a new conversation is a new session",
            "prompt",
            hint="Open a new session (a new thread) in your editor.",
        )
    return command_run(text, await asyncio.to_thread(workspace_commands, config))


__all__ = [
    "commands_update",
    "expand_command",
    "prompt_command",
    "skill_commands",
    "skill_roots",
    "skills_plugin",
]
