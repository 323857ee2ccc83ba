"""How a tool call looks to a person: its kind, a short title, the files it touches, and
(for edit tools) the change it would make.

A tool declares these where it is defined (``Tool(kind=..., title=..., locations=...,
preview=...)`` or the same keywords on ``@tool``), so hosts such as an editor never have to
know tools by name. Everything is optional: an undeclared tool is kind ``"other"``, titled by
its name (plus a short argument summary), touches no locations and has no preview.

This module is a leaf (it imports nothing from the rest of lovia), so ``lovia.tools.base``
can use its types without a cycle.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, TypedDict, get_args

logger = logging.getLogger("lovia.tools.presentation")

ToolKind: TypeAlias = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "other"
]
TOOL_KINDS: tuple[ToolKind, ...] = get_args(ToolKind)
READ_ONLY_KINDS: frozenset[ToolKind] = frozenset({"read", "search", "think", "fetch"})
"""Kinds whose calls never change files; every other kind (``other`` included) may."""


@dataclass(frozen=True)
class ToolLocation:
    """A file a call touches. ``path`` is as the tool resolves it: relative paths are relative
    to the workspace root. ``line`` is 1-based."""

    path: str
    line: int | None = None


class FileDiff(TypedDict):
    """One file's change as an edit tool would make it; ``oldText`` is None for a new file."""

    path: str
    oldText: str | None
    newText: str


TitleFn: TypeAlias = Callable[[Mapping[str, Any]], str]
"""Parsed call arguments -> a short title (``"Edit src/app.py"``)."""

LocationsFn: TypeAlias = Callable[[Mapping[str, Any]], Sequence[ToolLocation]]
"""Parsed call arguments -> the files the call touches."""

PreviewFn: TypeAlias = Callable[[Mapping[str, Any], Any], Awaitable[list[FileDiff]]]
"""``(args, workspace session)`` -> the change the call would make, before it runs."""


class PresentableTool(Protocol):
    """What presentation reads from a tool (``lovia.tools.Tool`` satisfies it)."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> ToolKind | None: ...

    @property
    def title(self) -> str | TitleFn | None: ...

    @property
    def locations(self) -> LocationsFn | None: ...

    @property
    def preview(self) -> PreviewFn | None: ...


@dataclass(frozen=True)
class CallPresentation:
    """What a host shows for one call: ``kind``, ``title`` and ``locations``."""

    kind: ToolKind
    title: str
    locations: list[ToolLocation] = field(default_factory=list)


def short(text: Any, limit: int = 60) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def default_title(name: str, args: Mapping[str, Any]) -> str:
    """The tool's name, plus its first non-empty string argument when it has one."""
    for value in args.values():
        if isinstance(value, str) and value.strip():
            return f"{name}: {short(value, 40)}"
    return name


def tool_kind(tool: PresentableTool | None) -> ToolKind:
    kind = getattr(tool, "kind", None)
    return kind if kind in TOOL_KINDS else "other"


def may_write(tool: PresentableTool | None) -> bool:
    """Whether a call to ``tool`` may change files, judged by its declared kind.

    Undeclared tools (kind ``other``) and tools a host cannot see may: only the read-only
    kinds (:data:`READ_ONLY_KINDS`) are known not to.
    """
    return tool_kind(tool) not in READ_ONLY_KINDS


def call_title(tool: PresentableTool | None, name: str, args: Mapping[str, Any]) -> str:
    """The call's title; a failing or empty title function falls back to the default."""
    title = getattr(tool, "title", None)
    if isinstance(title, str) and title.strip():
        return title
    if callable(title):
        try:
            text = title(args)
        except Exception:
            logger.debug("title.failed for %s", name, exc_info=True)
            text = None
        if isinstance(text, str) and text.strip():
            return text
    return default_title(name, args)


def call_locations(tool: PresentableTool | None, args: Mapping[str, Any]) -> list[ToolLocation]:
    """The files the call touches; a failing locations function means none."""
    locate = getattr(tool, "locations", None)
    if not callable(locate):
        return []
    try:
        found = list(locate(args))
    except Exception:
        logger.debug("locations.failed for %s", getattr(tool, "name", "?"), exc_info=True)
        return []
    return [loc for loc in found if isinstance(loc, ToolLocation)]


def present_call(
    tool: PresentableTool | None, name: str, args: Mapping[str, Any]
) -> CallPresentation:
    """Kind, title and locations of a call to ``tool`` (``None``: a tool the host cannot see,
    presented with the defaults)."""
    return CallPresentation(
        kind=tool_kind(tool),
        title=call_title(tool, name, args),
        locations=call_locations(tool, args),
    )


def can_preview(tool: PresentableTool | None) -> bool:
    return callable(getattr(tool, "preview", None))


async def preview_call(
    tool: PresentableTool | None, args: Mapping[str, Any], workspace: Any
) -> list[FileDiff]:
    """The change an edit call would make, read from ``workspace``; ``[]`` when the tool has no
    preview or the change cannot be computed (the call itself will report why)."""
    preview = getattr(tool, "preview", None)
    if not callable(preview) or workspace is None:
        return []
    try:
        return list(await preview(args, workspace))
    except Exception:
        logger.debug("preview.failed for %s", getattr(tool, "name", "?"), exc_info=True)
        return []


def path_title(verb: str, key: str = "path", fallback: str = "file") -> TitleFn:
    """A title function ``"<verb> <args[key]>"`` (``fallback`` when the argument is missing)."""

    def title(args: Mapping[str, Any]) -> str:
        value = args.get(key)
        return f"{verb} {value if isinstance(value, str) and value else fallback}".rstrip()

    return title


def path_locations(key: str = "path", line_key: str | None = None) -> LocationsFn:
    """A locations function for a tool whose ``args[key]`` is one path (and optionally
    ``args[line_key]`` a 1-based line)."""

    def locations(args: Mapping[str, Any]) -> list[ToolLocation]:
        path = args.get(key)
        if not isinstance(path, str) or not path:
            return []
        line = args.get(line_key) if line_key else None
        valid = isinstance(line, int) and not isinstance(line, bool) and line >= 1
        return [ToolLocation(path, line if valid else None)]

    return locations


__all__ = [
    "READ_ONLY_KINDS",
    "TOOL_KINDS",
    "CallPresentation",
    "FileDiff",
    "LocationsFn",
    "PresentableTool",
    "PreviewFn",
    "TitleFn",
    "ToolKind",
    "ToolLocation",
    "call_locations",
    "call_title",
    "can_preview",
    "default_title",
    "may_write",
    "path_locations",
    "path_title",
    "present_call",
    "preview_call",
    "short",
    "tool_kind",
]
