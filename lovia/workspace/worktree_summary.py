"""A worktree's changes in brief: what a parent agent is told about a child's work there.

The files changed with their added and removed lines (``git diff --numstat``) and the start of
the unified diff, cut at a budget, so a report stays small however much the child changed;
the branch holds the whole of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lovia.workspace import git_worktrees as g

PATCH_CHARS = 4000
"""How much of the unified diff a summary carries by default."""


@dataclass(frozen=True)
class FileStat:
    """One changed file: its status and line counts (``None`` for a binary file)."""

    path: str
    status: str
    """``added``, ``modified`` or ``deleted``."""
    added: int | None
    removed: int | None


@dataclass(frozen=True)
class WorktreeSummary:
    branch: str
    base: str
    tip: str
    files: tuple[FileStat, ...]
    patch: str
    """The start of the unified diff (base -> tip), at most the budget."""
    truncated: bool

    @property
    def added(self) -> int:
        return sum(f.added or 0 for f in self.files)

    @property
    def removed(self) -> int:
        return sum(f.removed or 0 for f in self.files)

    def render(self) -> str:
        """The text a report carries: a header line, one line per file, the patch excerpt."""
        if not self.files:
            return f"Changes on branch {self.branch}: none."
        count = len(self.files)
        lines = [
            f"Changes on branch {self.branch} (base {self.base[:10]}): {count} "
            f"file{'s' if count != 1 else ''} changed, +{self.added} -{self.removed}"
        ]
        for f in self.files:
            counts = "binary" if f.added is None else f"+{f.added} -{f.removed}"
            lines.append(f"  {f.status:<8} {f.path} ({counts})")
        cut = " (cut; the branch has the rest)" if self.truncated else ""
        lines.append(f"Patch{cut}:")
        lines.append(self.patch.rstrip("\n"))
        return "\n".join(lines)


async def summarize(
    worktree: Path,
    base: str,
    tip: str,
    *,
    branch: str,
    patch_chars: int = PATCH_CHARS,
    skip: Callable[[str], bool] = lambda rel: False,
) -> WorktreeSummary:
    """What changed from ``base`` to ``tip`` (commits or trees) in ``worktree``'s repository;
    paths ``skip`` names (the ACL's denied ones) are left out."""
    status_out = await g.diff(worktree, "--name-status", "--no-renames", "-z", base, tip)
    parts = _split(status_out)
    statuses = {
        path: {"A": "added", "D": "deleted"}.get(code[:1], "modified")
        for code, path in zip(parts[::2], parts[1::2], strict=False)
        if not skip(path)
    }
    numstat = await g.diff(worktree, "--numstat", "--no-renames", "-z", base, tip)
    files = []
    for record in _split(numstat):
        added, removed, path = record.split("\t", 2)
        if path not in statuses:
            continue
        binary = added == "-"
        files.append(
            FileStat(
                path=path,
                status=statuses[path],
                added=None if binary else int(added),
                removed=None if binary else int(removed),
            )
        )
    patch = ""
    truncated = False
    if files:
        paths = [f.path for f in files]
        raw = await g.diff(worktree, "--no-renames", base, tip, "--", *paths)
        patch, truncated = _excerpt(raw.decode("utf-8", "replace"), patch_chars)
    return WorktreeSummary(
        branch=branch, base=base, tip=tip, files=tuple(files), patch=patch, truncated=truncated
    )


def _excerpt(text: str, limit: int) -> tuple[str, bool]:
    """The text cut at the last whole line within ``limit`` characters."""
    if len(text) <= limit:
        return text, False
    cut = text.rfind("\n", 0, limit)
    return text[: cut + 1 if cut > 0 else limit], True


def _split(out: bytes) -> list[str]:
    return [part.decode("utf-8", "surrogateescape") for part in out.split(b"\0") if part]


__all__ = ["PATCH_CHARS", "FileStat", "WorktreeSummary", "summarize"]
