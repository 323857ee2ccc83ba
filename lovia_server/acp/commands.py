"""Slash commands for ACP clients: each skill the session's agent can load is a ``/name``.

Skills live in ``.lovia/skills`` of the session's folder and in ``~/.lovia/skills`` (see
docs/skills.md); ``/name rest`` asks the agent to load that skill and apply it to ``rest``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acp import schema as a


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


async def commands_update(folder: Path) -> tuple[list[Path], a.AvailableCommandsUpdate | None]:
    roots = await asyncio.to_thread(skill_roots, folder)
    commands = await skill_commands(roots)
    if not commands:
        return roots, None
    update = a.AvailableCommandsUpdate(
        session_update="available_commands_update", available_commands=commands
    )
    return roots, update


__all__ = ["commands_update", "expand_command", "skill_commands", "skill_roots", "skills_plugin"]
