"""Where skills come from: the ``SkillSource`` protocol and ``DirectorySkillSource``."""

from __future__ import annotations

import asyncio
import datetime as _dt
import logging
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import yaml

from lovia.exceptions import UserError
from lovia.plugins.skills.model import (
    Skill,
    SkillMetadata,
    SkillNotFoundError,
    SkillsError,
    _validate_description,
    _validate_name,
)
from lovia.types import JsonValue

logger = logging.getLogger("lovia.plugins.skills")

SKILL_FILE = "SKILL.md"

_YamlLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Leading whitespace-only lines (an indented first line is kept, so `  ---` is no delimiter).
_LEADING_BLANK_LINES = re.compile(r"\A(?:[ \t\r\f\v]*\n)*")
_OPENING = re.compile(r"---[ \t\r]*\n")
# The closing delimiter: `---` at column 0 of a line, then only blanks up to newline or EOF.
_CLOSING = re.compile(r"(?:\A|\n)---[ \t\r]*(?:\n|\Z)")


@runtime_checkable
class SkillSource(Protocol):
    """Anything that can list skills and load one by name.

    Sources are live: every call returns the current truth (there is no reload step).
    ``load_skill`` raises :class:`SkillNotFoundError` for an unknown name.
    """

    async def list_skills(self) -> list[SkillMetadata]: ...

    async def load_skill(self, name: str) -> Skill: ...


def _parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """Split a SKILL.md into its YAML frontmatter mapping and its body.

    Without a well-formed frontmatter block the result is ``({}, text)`` unchanged. An empty,
    unparsable or non-mapping frontmatter gives ``({}, body)``.
    """
    rest = text.removeprefix("\ufeff")
    rest = _LEADING_BLANK_LINES.sub("", rest, count=1)
    opening = _OPENING.match(rest)
    if opening is None:
        return {}, text
    rest = rest[opening.end() :]
    closing = _CLOSING.search(rest)
    if closing is None:
        return {}, text
    # Keep the newline that ends the last YAML line (block scalars end with it).
    block = rest[: closing.start() + (1 if closing.group().startswith("\n") else 0)]
    body = rest[closing.end() :].lstrip("\r\n")
    if not block.strip():
        return {}, body
    try:
        data = yaml.load(block, Loader=_YamlLoader)  # a safe loader: plain data only
    except Exception:  # YAMLError, and ValueError from e.g. an impossible date
        return {}, body
    if not isinstance(data, dict):
        return {}, body
    return data, body


def _json_safe(value: Any) -> JsonValue:
    """YAML values as JSON-compatible data (dates become ISO strings, keys strings)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_json_safe(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _metadata_from(frontmatter: Mapping[Any, Any], dir_name: str) -> SkillMetadata:
    name = _validate_name(frontmatter.get("name", dir_name))
    description = _validate_description(name, frontmatter.get("description"))
    extra = {
        str(k): _json_safe(v) for k, v in frontmatter.items() if k not in ("name", "description")
    }
    return SkillMetadata(name=name, description=description, extra=extra)


@dataclass(frozen=True)
class _Entry:
    metadata: SkillMetadata
    directory: Path


_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def _warn_once(tag: str, key: str, message: str, *args: Any) -> None:
    """Log a scan problem at WARNING once per process for each ``(tag, key)``."""
    with _warned_lock:
        if (tag, key) in _warned:
            return
        _warned.add((tag, key))
    logger.warning(f"{tag}: {message}", *args, extra={"tag": tag})


def _read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8")


class DirectorySkillSource:
    """Skills stored as directories holding a ``SKILL.md``, under one or more roots.

    Every :meth:`list_skills` re-scans the roots, so skills added, edited or removed on disk
    show up without any reload step. The first root that defines a name wins.
    """

    def __init__(self, *roots: str | os.PathLike[str]) -> None:
        if not roots:
            raise UserError(
                "DirectorySkillSource needs at least one root directory.",
                hint="Pass the directory that holds your skill folders, "
                "e.g. DirectorySkillSource('./skills').",
            )
        self.roots: tuple[Path, ...] = tuple(Path(r).expanduser().resolve() for r in roots)
        self._index: dict[str, _Entry] = {}

    def __repr__(self) -> str:
        return f"DirectorySkillSource({', '.join(repr(str(r)) for r in self.roots)})"

    async def list_skills(self) -> list[SkillMetadata]:
        index = await asyncio.to_thread(self._scan)
        self._index = index
        return [entry.metadata for entry in index.values()]

    async def load_skill(self, name: str) -> Skill:
        entry = self._index.get(name)
        if entry is not None:
            skill = await asyncio.to_thread(self._read_skill, name, entry)
            if skill is not None:
                return skill
        # Unknown to the last scan, or changed on disk since: look again, once.
        await self.list_skills()
        entry = self._index.get(name)
        if entry is not None:
            skill = await asyncio.to_thread(self._read_skill, name, entry)
            if skill is not None:
                return skill
        raise SkillNotFoundError(name, available=sorted(self._index))

    # ------------------------------------------------------------------ worker-thread side

    def _scan(self) -> dict[str, _Entry]:
        found: dict[str, _Entry] = {}
        for root in self.roots:
            try:
                if not root.is_dir():
                    _warn_once(
                        "skill.root_missing", str(root), "skills root %s does not exist", root
                    )
                    continue
                children = sorted(root.iterdir())
            except OSError as exc:
                _warn_once(
                    "skill.root_unreadable", str(root), "cannot list skills root %s: %s", root, exc
                )
                continue
            for child in children:
                entry = self._scan_one(child)
                if entry is None:
                    continue
                name = entry.metadata.name
                if name in found:
                    _warn_once(
                        "skill.duplicate",
                        str(child),
                        "skill %r in %s is shadowed by %s (the first definition wins)",
                        name,
                        child,
                        found[name].directory,
                    )
                    continue
                found[name] = entry
        return found

    def _scan_one(self, directory: Path) -> _Entry | None:
        skill_file = directory / SKILL_FILE
        try:
            if not directory.is_dir() or not skill_file.is_file():
                return None
            text = _read_text(skill_file)
        except (OSError, UnicodeDecodeError) as exc:
            _warn_once("skill.unreadable", str(skill_file), "cannot read %s: %s", skill_file, exc)
            return None
        frontmatter, _ = _parse_frontmatter(text)
        try:
            metadata = _metadata_from(frontmatter, directory.name)
        except SkillsError as exc:
            _warn_once("skill.invalid", str(skill_file), "skipping %s: %s", skill_file, exc)
            return None
        return _Entry(metadata, directory)

    def _read_skill(self, name: str, entry: _Entry) -> Skill | None:
        """The skill as it is on disk now; ``None`` if it is gone or no longer has ``name``."""
        skill_file = entry.directory / SKILL_FILE
        try:
            text = _read_text(skill_file)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise SkillsError(
                f"Failed to read skill {name!r}: {exc}", skill_name=name, path=skill_file
            ) from None
        frontmatter, body = _parse_frontmatter(text)
        metadata = _metadata_from(frontmatter, entry.directory.name)
        if metadata.name != name:
            return None
        return Skill(
            name=metadata.name,
            description=metadata.description,
            body=body,
            path=entry.directory,
            extra=metadata.extra,
        )


__all__ = ["SKILL_FILE", "DirectorySkillSource", "SkillSource"]
