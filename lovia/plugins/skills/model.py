"""Skill data model: errors, name/description validation, ``SkillMetadata`` and ``Skill``."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lovia.exceptions import LoviaError
from lovia.types import JsonValue

MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024

_NAME_RE = re.compile(r"[a-zA-Z0-9]+(?:[-_][a-zA-Z0-9]+)*")


class SkillsError(LoviaError):
    """A skill could not be found, parsed, validated or read.

    ``str(exc)`` is the message plus, when set, two spaces and the hint: one line that can be
    handed to the model as a tool result.
    """

    skill_name: str | None = None
    path: str | Path | None = None

    def __init__(
        self,
        message: str,
        *,
        skill_name: str | None = None,
        path: str | Path | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, hint=hint, skill_name=skill_name, path=path)

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message}  {self.hint}"
        return self.message


class SkillNotFoundError(SkillsError):
    """No visible skill has this name; ``available`` lists the names that do exist."""

    available: list[str]

    def __init__(self, name: str, *, available: Iterable[str] = ()) -> None:
        names = list(available)
        super().__init__(
            f"Unknown skill: {name!r}.",
            skill_name=name,
            hint="Available: " + (", ".join(names) if names else "(none)"),
        )
        self.available = names

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuild from the name; the instance dict restores everything else.
        return (type(self), (self.skill_name,), dict(self.__dict__))


def _validate_name(name: object) -> str:
    """Return ``name`` if it is a valid skill name, else raise :class:`SkillsError`."""
    if name is None or name == "":
        raise SkillsError(
            "Skill name must not be empty.",
            hint="Set `name:` in the SKILL.md frontmatter (or name the directory).",
        )
    if not isinstance(name, str):
        raise SkillsError(
            f"Skill name must be a string, got {type(name).__name__} {name!r}.",
            hint='Quote the value in the frontmatter, e.g. name: "my-skill".',
        )
    if len(name) > MAX_NAME_CHARS:
        raise SkillsError(
            f"Skill name {name[:MAX_NAME_CHARS]!r}... is too long "
            f"({len(name)} chars, at most {MAX_NAME_CHARS}).",
            skill_name=name,
        )
    if "/" in name or "\\" in name or ".." in name:
        raise SkillsError(
            f"Skill name {name!r} must not contain path separators or '..'.",
            skill_name=name,
        )
    if not _NAME_RE.fullmatch(name):
        raise SkillsError(
            f"Skill name {name!r} is invalid: use letters and digits, optionally joined by "
            "single '-' or '_' (e.g. 'refund-policy').",
            skill_name=name,
        )
    return name


def _validate_description(name: str, description: object) -> str:
    """Return the stripped description, or raise :class:`SkillsError`."""
    if description is None:
        raise SkillsError(
            f"Skill {name!r} has an empty description.",
            skill_name=name,
            hint="Add a `description:` saying what the skill does and when to use it.",
        )
    if not isinstance(description, str):
        raise SkillsError(
            f"Skill {name!r} description must be a string, got {type(description).__name__}.",
            skill_name=name,
            hint="Quote the value in the frontmatter.",
        )
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillsError(
            f"Skill {name!r} description is too long "
            f"({len(description)} chars, at most {MAX_DESCRIPTION_CHARS}).",
            skill_name=name,
        )
    stripped = description.strip()
    if not stripped:
        raise SkillsError(
            f"Skill {name!r} has an empty description.",
            skill_name=name,
            hint="Add a `description:` saying what the skill does and when to use it.",
        )
    return stripped


@dataclass(frozen=True)
class SkillMetadata:
    """What the skills index shows about one skill (cheap to list; no body)."""

    name: str
    description: str
    extra: Mapping[str, JsonValue] = field(default_factory=dict, hash=False)


@dataclass
class Skill:
    """A loaded skill: its instructions (``body``) and, if on disk, its directory."""

    name: str
    description: str
    body: str
    path: Path | None = None
    extra: Mapping[str, JsonValue] = field(default_factory=dict)

    @property
    def metadata(self) -> SkillMetadata:
        return SkillMetadata(self.name, self.description, dict(self.extra))

    def read_file(self, relpath: str) -> str:
        """Read a UTF-8 text file inside the skill directory (never outside it).

        ``relpath`` is relative to the skill directory. Absolute paths, ``..`` segments and
        symlinks that resolve outside the directory are refused.
        """
        if self.path is None:
            raise SkillsError(
                f"Skill {self.name!r} has no on-disk path; it has no files to read.",
                skill_name=self.name,
            )
        try:
            root = Path(self.path).resolve()
            target = (root / relpath).resolve()
        except (OSError, ValueError, RuntimeError):
            # ValueError: embedded NUL byte; RuntimeError: symlink loop.
            raise SkillsError(
                f"Skill file not found: {relpath!r}", skill_name=self.name, path=self.path
            ) from None
        if not target.is_relative_to(root):
            raise SkillsError(
                f"Path {relpath!r} escapes skill directory.",
                skill_name=self.name,
                path=self.path,
            )
        try:
            is_file = target.is_file()
        except OSError:  # e.g. a name too long for the file system
            is_file = False
        if not is_file:
            raise SkillsError(
                f"Skill file not found: {relpath!r}",
                skill_name=self.name,
                path=self.path,
            )
        try:
            data = target.read_bytes()
        except OSError as exc:
            raise SkillsError(
                f"Failed to read skill file {relpath!r}: {exc.strerror or exc}",
                skill_name=self.name,
                path=self.path,
            ) from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise SkillsError(
                f"Skill file {relpath!r} is not UTF-8 text.",
                skill_name=self.name,
                path=self.path,
            ) from None


__all__ = [
    "MAX_DESCRIPTION_CHARS",
    "MAX_NAME_CHARS",
    "Skill",
    "SkillMetadata",
    "SkillNotFoundError",
    "SkillsError",
]
