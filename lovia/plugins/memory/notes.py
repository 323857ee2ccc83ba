"""The NOTES format (one dated fact per line: parsing, keys, moving and shedding date stamps,
dropping facts) and the stores that keep it (``NotesStore``, ``FileNotesStore``)."""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

logger = logging.getLogger("lovia.plugins.memory")

DEFAULT_ROOT = "./.lovia/memory"

# --------------------------------------------------------------------------- notes policy

_LEADING_STAMP = re.compile(r"^\[\d{4}-\d{2}\]\s*")
_TRAILING_STAMP = re.compile(r"\s*\[\d{4}-\d{2}\]$")


def _normalize_fact(s: str) -> str:
    """Whitespace collapsed and trimmed."""
    return " ".join(s.split())


def _strip_date(s: str) -> str:
    """``s`` without a leading ``[YYYY-MM]`` stamp (and the spaces after it)."""
    return _LEADING_STAMP.sub("", s, count=1)


def _fact_key(s: str) -> str:
    """What makes two notes "the same": text without its stamp, whitespace and case."""
    return _normalize_fact(_strip_date(_normalize_fact(s))).lower()


def _relocate_stamp(s: str) -> str:
    """Move a trailing ``[YYYY-MM]`` to the front when there is no leading stamp."""
    if _LEADING_STAMP.match(s):
        return s
    match = _TRAILING_STAMP.search(s)
    if match is None:
        return s
    stamp = match.group(0).strip()
    rest = s[: match.start()].strip()
    return f"{stamp} {rest}" if rest else stamp


def _shed_stamps(s: str) -> str:
    """``s`` without a leading or trailing stamp, normalized (``"[2026-07]"`` → ``""``)."""
    s = _normalize_fact(s)
    s = _LEADING_STAMP.sub("", s, count=1)
    s = _TRAILING_STAMP.sub("", s, count=1)
    return _normalize_fact(s)


def _parse_facts(body: str) -> list[str]:
    """The bullet lines (``- fact``) of a notes body; other lines are ignored."""
    facts: list[str] = []
    for line in body.splitlines():
        stripped = line.strip()
        if not stripped.startswith("- "):
            continue
        fact = stripped[2:].strip()
        if fact:
            facts.append(fact)
    return facts


def _format_facts(facts: Sequence[str]) -> str:
    return "\n".join("- " + f for f in facts)


def _drop_fact(facts: Sequence[str], target: str) -> list[str]:
    """A copy of ``facts`` without the note ``target`` names (at most one line removed).

    Match order: the exact line, else the first line with the same key, else the first line
    whose key contains the target's key or is contained in it.
    """
    out = list(facts)
    key = _fact_key(target)
    if not key:
        return out
    if target in out:
        out.remove(target)
        return out
    keys = [_fact_key(f) for f in out]
    for i, fact_key in enumerate(keys):
        if fact_key == key:
            del out[i]
            return out
    for i, fact_key in enumerate(keys):
        if fact_key and (key in fact_key or fact_key in key):
            del out[i]
            return out
    return out


def _meter(used: int, total: int) -> str:
    pct = round(100 * used / total) if total else 0
    return f"[{pct}% — {used:,}/{total:,} chars]"


# --------------------------------------------------------------------------- notes stores


@runtime_checkable
class NotesStore(Protocol):
    """Hot-tier persistence: load and save the whole fact list (Memory serializes writes)."""

    async def load(self) -> list[str]: ...

    async def save(self, facts: list[str]) -> None: ...


class FileNotesStore:
    """Notes as a Markdown bullet list (``- fact`` per line) in one file.

    A missing file is an empty list; ``save`` writes ``<path>.tmp`` and renames it over the
    file, so a crash never leaves half a file. Lines that are not bullets are not kept.
    """

    def __init__(self, path: str | os.PathLike[str] = f"{DEFAULT_ROOT}/MEMORY.md") -> None:
        self._path = Path(path).expanduser()

    @property
    def path(self) -> Path:
        return self._path

    def __repr__(self) -> str:
        return f"FileNotesStore({str(self._path)!r})"

    async def load(self) -> list[str]:
        return await asyncio.to_thread(self._load)

    async def save(self, facts: list[str]) -> None:
        await asyncio.to_thread(_write_atomic, self._path, _format_facts(facts))

    def _load(self) -> list[str]:
        try:
            return _parse_facts(self._path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
