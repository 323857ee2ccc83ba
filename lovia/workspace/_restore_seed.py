"""Seed a new shadow index from the user's own git index (internal, used by restore points).

The first snapshot of a big repository otherwise hashes and stores every file. When the
workspace is the top of a git repository, its index already knows every tracked file's
content id and stat data, so a copy of it (read, never written) lets ``git status`` find
the few files that differ, and the blobs are borrowed from the user's object store through
an ``alternates`` file until :func:`own_objects` copies the ones the points use into the
store (a user's ``git gc`` could otherwise drop a blob an old point still needs).

A copy is only used when every entry is a plain stage-0 entry git checks by stat: an index
with skip-worktree or assume-unchanged bits, conflicts, a sparse or split index, or one git
cannot read is not trusted (the snapshot then reads the files as before). What the policy
does not allow into a snapshot (denied, ignored, too large, nested repositories) is removed
from the copy before anything is written from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from pathlib import Path

from lovia.workspace._git import GitError, GitRunner

logger = logging.getLogger("lovia.workspace.restore_points")

ALTERNATES = Path("objects") / "info" / "alternates"
_GITLINK = b"160000"


def user_git_dir(root: Path) -> Path | None:
    """The ``.git`` directory of the repository whose top is ``root`` (with an index), or
    None (no repository, a linked worktree's ``.git`` file, a bare or odd layout)."""
    git_dir = root / ".git"
    try:
        if git_dir.is_symlink() or not git_dir.is_dir():
            return None
        if not (git_dir / "index").is_file() or not (git_dir / "objects").is_dir():
            return None
    except OSError:
        return None
    return git_dir


def borrowing(git: GitRunner) -> bool:
    """Whether the store still borrows objects from the user's repository."""
    return (git.git_dir / ALTERNATES).exists()


async def seed_index(git: GitRunner, root: Path) -> list[str] | None:
    """Copy the user's index into the shadow index; return the entries to drop at once
    (nested repositories), or None when the index is not usable (nothing is left behind)."""
    user = await asyncio.to_thread(user_git_dir, root)
    if user is None:
        return None
    tmp = git.index_file.with_name(git.index_file.name + ".seed")
    alternates = git.git_dir / ALTERNATES
    try:
        # copy2 keeps the file's mtime, which git's racy-entry check compares with.
        await asyncio.to_thread(shutil.copy2, user / "index", tmp)
        await asyncio.to_thread(os.replace, tmp, git.index_file)
        await asyncio.to_thread(_write_alternates, alternates, user / "objects")
        code, out, _ = await git.run_full("ls-files", "-v", "-s", "-z")
        drop = _plain_entries(out) if code == 0 else None
    except (OSError, GitError) as exc:
        logger.info("not seeding restore points from the git index: %s", exc)
        drop = None
    if drop is None:
        await asyncio.to_thread(_undo, git, tmp, alternates)
    return drop


def _write_alternates(path: Path, objects: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(objects) + "\n")


def _undo(git: GitRunner, tmp: Path, alternates: Path) -> None:
    for path in (tmp, git.index_file, alternates):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _plain_entries(out: bytes) -> list[str] | None:
    """Gitlink paths to drop, or None when an entry is not a plain cached one."""
    drop: list[str] = []
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, path = rec.partition(b"\t")
        parts = meta.split(b" ")
        # "H <mode> <oid> <stage>": H is a cached entry git checks by stat; lower case is
        # assume-unchanged, S skip-worktree, M unmerged.
        if len(parts) != 4 or parts[0] != b"H" or parts[3] != b"0":
            return None
        if parts[1] == _GITLINK:
            drop.append(path.decode("utf-8", "surrogateescape"))
    return drop


async def own_objects(git: GitRunner) -> None:
    """Copy every object the store uses into its own pack; then stop borrowing."""
    alternates = git.git_dir / ALTERNATES
    if not alternates.exists():
        return
    # Without -l, repack packs reachable objects found through alternates too.
    await git.run("repack", "-a", "-d", "-q")
    await asyncio.to_thread(alternates.unlink)


__all__ = ["ALTERNATES", "borrowing", "own_objects", "seed_index", "user_git_dir"]
