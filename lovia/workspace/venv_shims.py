"""Keep ``python``/``pip`` meaning the project's venv without a workspace directory first on
``PATH``.

Prepending ``<root>/.venv/bin`` lets a file the repository ships (``.venv/bin/git``) stand in
for a system program, so an allowed ``git status`` would run it. Instead the session puts
a small directory of wrappers *outside* the workspace first on ``PATH``, then the host's
``PATH``, then the venv's ``bin`` last:

* the wrappers (``#!/bin/sh`` + ``exec '<venv>/bin/NAME' "$@"``) cover ``python*`` and
  ``pip*`` and every other venv executable whose name is not one of the programs the
  command guard knows (``git``, ``ls``, ``sh``, ``env``, ``make``...): ``pytest``,
  ``ruff``, ``mypy`` still mean the venv's, ``git`` always means the host's;
* a venv executable with a known name that the host lacks is still found, last.

The wrappers live in ``$XDG_RUNTIME_DIR``, ``~/.cache`` or the temp directory (the first
that is outside the workspace, owned by this user and not writable by others), one
subdirectory per venv, rewritten when the venv's ``bin`` changes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import stat
import tempfile
from collections.abc import Collection
from pathlib import Path

_MARKER = ".lovia-venv-shims"
_ALWAYS = re.compile(r"^(?:python|pip)(?:\d+(?:\.\d+)*)?$")
_SKIP = re.compile(r"^(?:activate.*|Activate\..*|deactivate|.*\.(?:ps1|fish|csh|bat))$")


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _private_dir(path: Path) -> bool:
    """An existing directory, not a symlink, ours, not writable by group or others."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_uid == os.getuid()
        and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def _ensure_private(path: Path) -> bool:
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return False
    return _private_dir(path)


def shim_base(root: Path) -> Path | None:
    """The directory that holds the wrappers, outside ``root``; None if none is safe."""
    candidates: list[Path] = []
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        candidates.append(Path(runtime) / "lovia-venv-shims")
    home = os.environ.get("HOME")
    if home and os.path.isabs(home):
        candidates.append(Path(home) / ".cache" / "lovia" / "venv-shims")
    candidates.append(Path(tempfile.gettempdir()) / f"lovia-venv-shims-{os.getuid()}")
    for base in candidates:
        real = Path(os.path.realpath(base))
        if _inside(real, root) or _inside(root, real):
            continue
        if _ensure_private(real):
            return real
    return None


def _executables(bin_dir: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        entries = list(os.scandir(bin_dir))
    except OSError:
        return out
    for entry in entries:
        if _SKIP.match(entry.name) or not re.fullmatch(r"[A-Za-z0-9_.+-]+", entry.name):
            continue
        try:
            if entry.is_file() and os.access(entry.path, os.X_OK):
                out[entry.name] = entry.path
        except OSError:
            continue
    return out


def _write(path: Path, text: str, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def venv_shims(bin_dir: Path, root: Path, known: Collection[str]) -> Path | None:
    """The wrapper directory for the venv ``bin_dir`` (created or refreshed), or None."""
    base = shim_base(root)
    if base is None:
        return None
    wanted = {
        name: target
        for name, target in sorted(_executables(bin_dir).items())
        if _ALWAYS.match(name) or name not in known
    }
    digest = hashlib.sha256(str(bin_dir).encode()).hexdigest()[:16]
    shim_dir = base / digest
    manifest = shim_dir / _MARKER
    payload = json.dumps({"venv": str(bin_dir), "shims": wanted}, sort_keys=True)
    with contextlib.suppress(OSError):
        if _private_dir(shim_dir) and manifest.read_text() == payload:
            return shim_dir
    if not _ensure_private(shim_dir):
        return None
    _prune(base, keep=shim_dir)
    try:
        for entry in os.scandir(shim_dir):
            if entry.name not in wanted and entry.name != _MARKER:
                os.unlink(entry.path)
        for name, target in wanted.items():
            script = f'#!/bin/sh\nexec {shlex.quote(target)} "$@"\n'
            _write(shim_dir / name, script, 0o755)
        _write(manifest, payload, 0o644)
    except OSError:
        return None
    return shim_dir


def _prune(base: Path, *, keep: Path, limit: int = 64) -> None:
    """Remove wrapper directories whose venv is gone (bounded; best effort)."""
    try:
        entries = list(os.scandir(base))[:limit]
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        if path == keep or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            venv = json.loads((path / _MARKER).read_text())["venv"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if isinstance(venv, str) and not os.path.isdir(venv):
            with contextlib.suppress(OSError):
                for child in os.scandir(path):
                    os.unlink(child.path)
                os.rmdir(path)


def is_shim_dir(path: str) -> bool:
    """Whether ``path`` (a ``PATH`` entry) is a directory of venv wrappers."""
    return os.path.isfile(os.path.join(path, _MARKER))


def shim_dirs(path_value: str | None) -> list[str]:
    """The wrapper directories on a ``PATH`` value (the sandbox mounts them)."""
    return [p for p in (path_value or "").split(os.pathsep) if p and is_shim_dir(p)]


__all__ = ["is_shim_dir", "shim_base", "shim_dirs", "venv_shims"]
