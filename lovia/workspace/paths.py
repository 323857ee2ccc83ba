"""Resolve a user/model-supplied path and classify it as inside or outside the root.

Nothing is rejected on syntax: ``..``, absolute paths, ``~`` and symlinks are all
accepted and judged by where they *resolve* (symlinks in existing components are
followed). Two inputs cannot be resolved and raise :class:`WorkspaceError` instead of
the raw ``ValueError``/``RuntimeError`` that :meth:`pathlib.Path.resolve` would raise:
a NUL byte and a symlink loop.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

from lovia.workspace.errors import WorkspaceError


@dataclass(frozen=True)
class ResolvedPath:
    raw: str
    abs: Path
    rel: str | None

    @property
    def inside(self) -> bool:
        return self.rel is not None

    @property
    def abs_posix(self) -> str:
        return self.abs.as_posix()

    def display(self) -> str:
        return self.rel if self.rel is not None else self.abs_posix


def _symlink_loop(path: str) -> WorkspaceError:
    return WorkspaceError(
        f"Symlink loop: {path}",
        hint="The path contains a symbolic link that points back into itself; "
        "it cannot be resolved.",
    )


def resolve_abs(path: str | Path) -> Path:
    """Non-strict resolve with ``WorkspaceError`` for NUL bytes, symlink loops and odd errors."""
    text = os.fspath(path)
    if "\x00" in text:
        raise WorkspaceError(
            f"Path contains a NUL byte: {text!r}", hint="Paths cannot contain NUL characters."
        )
    try:
        resolved = os.path.realpath(text)
    except OSError as exc:  # pragma: no cover - realpath is non-strict
        if exc.errno == errno.ELOOP:
            raise _symlink_loop(text) from None
        raise WorkspaceError(f"Cannot resolve path {text!r}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise WorkspaceError(f"Cannot resolve path {text!r}: {exc}") from None
    # realpath() leaves a looping link in place instead of raising; stat() tells.
    try:
        os.stat(resolved)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _symlink_loop(text) from None
        if exc.errno == errno.ENAMETOOLONG:
            raise WorkspaceError(f"Path is too long: {text[:200]!r}…") from None
    return Path(resolved)


def resolve_path(root: Path, path: str, *, base: Path | None = None) -> ResolvedPath:
    """Resolve ``path`` (relative to ``base or root``) and classify it against ``root``.

    ``root`` must already be resolved. ``""`` means the base directory itself.
    """
    raw = path
    if not isinstance(path, str):
        raise WorkspaceError(f"Path must be a string, got {type(path).__name__}.")
    if "\x00" in path:
        raise WorkspaceError(
            f"Path contains a NUL byte: {path!r}", hint="Paths cannot contain NUL characters."
        )
    text = path or "."
    p = Path(text)
    if text.startswith("~"):
        try:
            p = p.expanduser()
        except RuntimeError:
            p = Path(text)
    if not p.is_absolute():
        p = (base or root) / p
    resolved = resolve_abs(p)
    return ResolvedPath(raw=raw, abs=resolved, rel=relative_to_root(root, resolved))


def relative_to_root(root: Path, resolved: Path) -> str | None:
    """POSIX path of ``resolved`` relative to ``root`` (``"."`` for the root), else None."""
    if resolved == root:
        return "."
    try:
        rel = resolved.relative_to(root)
    except ValueError:
        return None
    return rel.as_posix()


__all__ = ["ResolvedPath", "relative_to_root", "resolve_abs", "resolve_path"]
