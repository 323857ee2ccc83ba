"""Skills: folders of instructions (``SKILL.md``) an agent loads only when a task needs them.

The system prompt carries a one-line index per skill; the model calls ``load_skill(name)`` for
the full instructions and ``read_skill_file(name, relpath)`` for bundled files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lovia._lazy import lazy_exports

if TYPE_CHECKING:
    from lovia.plugins.skills.catalog import (
        _MAX_CONTENT_CHARS as _MAX_CONTENT_CHARS,
    )
    from lovia.plugins.skills.catalog import (
        _SKILL_BEGIN as _SKILL_BEGIN,
    )
    from lovia.plugins.skills.catalog import (
        _SKILL_END as _SKILL_END,
    )
    from lovia.plugins.skills.catalog import (
        DEFAULT_USAGE_RULES,
        SkillCatalog,
        SkillFilter,
    )
    from lovia.plugins.skills.catalog import (
        _format_extra as _format_extra,
    )
    from lovia.plugins.skills.catalog import (
        _one_line as _one_line,
    )
    from lovia.plugins.skills.model import (
        Skill,
        SkillMetadata,
        SkillNotFoundError,
        SkillsError,
    )
    from lovia.plugins.skills.model import (
        _validate_description as _validate_description,
    )
    from lovia.plugins.skills.model import (
        _validate_name as _validate_name,
    )
    from lovia.plugins.skills.plugin import Skills
    from lovia.plugins.skills.source import (
        DirectorySkillSource,
        SkillSource,
    )
    from lovia.plugins.skills.source import (
        _parse_frontmatter as _parse_frontmatter,
    )

_LAZY: dict[str, str] = {
    "_MAX_CONTENT_CHARS": "lovia.plugins.skills.catalog",
    "_SKILL_BEGIN": "lovia.plugins.skills.catalog",
    "_SKILL_END": "lovia.plugins.skills.catalog",
    "DEFAULT_USAGE_RULES": "lovia.plugins.skills.catalog",
    "SkillCatalog": "lovia.plugins.skills.catalog",
    "SkillFilter": "lovia.plugins.skills.catalog",
    "_format_extra": "lovia.plugins.skills.catalog",
    "_one_line": "lovia.plugins.skills.catalog",
    "Skill": "lovia.plugins.skills.model",
    "SkillMetadata": "lovia.plugins.skills.model",
    "SkillNotFoundError": "lovia.plugins.skills.model",
    "SkillsError": "lovia.plugins.skills.model",
    "_validate_description": "lovia.plugins.skills.model",
    "_validate_name": "lovia.plugins.skills.model",
    "Skills": "lovia.plugins.skills.plugin",
    "DirectorySkillSource": "lovia.plugins.skills.source",
    "SkillSource": "lovia.plugins.skills.source",
    "_parse_frontmatter": "lovia.plugins.skills.source",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


__all__ = [
    "DEFAULT_USAGE_RULES",
    "DirectorySkillSource",
    "Skill",
    "SkillCatalog",
    "SkillFilter",
    "SkillMetadata",
    "SkillNotFoundError",
    "SkillSource",
    "Skills",
    "SkillsError",
]
