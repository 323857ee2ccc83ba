"""Skills: folders of instructions (``SKILL.md``) an agent loads only when a task needs them.

The system prompt carries a one-line index per skill; the model calls ``load_skill(name)`` for
the full instructions and ``read_skill_file(name, relpath)`` for bundled files.
"""

from lovia.plugins.skills.catalog import _MAX_CONTENT_CHARS as _MAX_CONTENT_CHARS
from lovia.plugins.skills.catalog import _SKILL_BEGIN as _SKILL_BEGIN
from lovia.plugins.skills.catalog import _SKILL_END as _SKILL_END
from lovia.plugins.skills.catalog import (
    DEFAULT_USAGE_RULES,
    SkillCatalog,
    SkillFilter,
)
from lovia.plugins.skills.catalog import _format_extra as _format_extra
from lovia.plugins.skills.catalog import _one_line as _one_line
from lovia.plugins.skills.model import (
    Skill,
    SkillMetadata,
    SkillNotFoundError,
    SkillsError,
)
from lovia.plugins.skills.model import _validate_description as _validate_description
from lovia.plugins.skills.model import _validate_name as _validate_name
from lovia.plugins.skills.plugin import Skills
from lovia.plugins.skills.source import DirectorySkillSource, SkillSource
from lovia.plugins.skills.source import _parse_frontmatter as _parse_frontmatter

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
