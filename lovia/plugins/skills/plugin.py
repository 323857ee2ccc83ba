"""The ``Skills`` plugin: a skills index in the prompt, ``load_skill`` and ``read_skill_file``."""

from __future__ import annotations

import os
from typing import Any

from lovia.exceptions import UserError
from lovia.plugins.base import PluginInstance
from lovia.plugins.skills.catalog import SkillCatalog, SkillFilter
from lovia.plugins.skills.source import SkillSource
from lovia.run_context import RunContext


def _build_catalog(
    sources: tuple[Any, ...], usage_rules: str | None, filter: SkillFilter | None
) -> SkillCatalog:
    if not sources:
        raise UserError(
            "Skills() needs at least one skills directory, SkillSource or SkillCatalog.",
            hint="e.g. Skills('./skills').",
        )
    if len(sources) == 1:
        (only,) = sources
        # A catalog also satisfies the SkillSource protocol: check it first.
        if isinstance(only, SkillCatalog):
            if usage_rules is not None or filter is not None:
                raise UserError(
                    "Skills(catalog) does not take usage_rules= or filter=; the catalog "
                    "already carries its own.",
                    hint="Pass usage_rules=/filter= to SkillCatalog(...) instead.",
                )
            return only
        if isinstance(only, SkillSource) and not isinstance(only, (str, os.PathLike)):
            return SkillCatalog(only, usage_rules=usage_rules, filter=filter)
    if all(isinstance(s, (str, os.PathLike)) for s in sources):
        return SkillCatalog.from_dir(*sources, usage_rules=usage_rules, filter=filter)
    kinds = ", ".join(type(s).__name__ for s in sources)
    raise UserError(
        "Skills() takes skills directories (str or Path), or a single SkillSource or "
        f"SkillCatalog — not a mix of them (got {kinds}).",
        hint="To combine several sources, write one SkillSource that merges them; put all "
        "skills directories in a single Skills(...) call.",
    )


class Skills:
    """Give an agent skills: folders of instructions it loads only when a task needs them.

    ``Skills("./skills")`` indexes every ``<dir>/SKILL.md`` below ``./skills`` in the system
    prompt (name + description) and contributes two tools, ``load_skill(name)`` and
    ``read_skill_file(name, relpath)``. Sources may also be a :class:`SkillSource` or a
    ready-made :class:`SkillCatalog`.
    """

    def __init__(
        self,
        *sources: str | os.PathLike[str] | SkillSource | SkillCatalog,
        usage_rules: str | None = None,
        filter: SkillFilter | None = None,
        name: str = "skills",
    ) -> None:
        self.catalog: SkillCatalog = _build_catalog(sources, usage_rules, filter)
        self.name = name

    def __repr__(self) -> str:
        return f"Skills({self.catalog!r}, name={self.name!r})"

    async def setup(self, ctx: RunContext[Any] | None = None) -> PluginInstance:
        # The index is rendered once per run; the tools always re-read the live source, so
        # a skill added mid-run is loadable at once and listed from the next run on.
        instructions = await self.catalog.instructions()
        return PluginInstance(tools=self.catalog.tools(), instructions=instructions or None)


__all__ = ["Skills"]
