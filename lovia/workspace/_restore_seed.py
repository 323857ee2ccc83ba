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
from lovia.workspace.git_env import own_git_env

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


async def seed_index(
    git: GitRunner, root: Path, max_bytes: int
) -> tuple[list[str], list[str]] | None:
    """Copy the user's index into the shadow index; return the entries to drop at once
    (nested repositories, blobs over ``max_bytes``) and every other path, or None when
    the index is not usable (nothing is left behind)."""
    user = await asyncio.to_thread(user_git_dir, root)
    if user is None or not await _bytes_as_stored(git.git, root, user):
        return None
    tmp = git.index_file.with_name(git.index_file.name + ".seed")
    alternates = git.git_dir / ALTERNATES
    entries: tuple[list[str], list[str]] | None = None
    try:
        # copy2 keeps the file's mtime, which git's racy-entry check compares with.
        await asyncio.to_thread(shutil.copy2, user / "index", tmp)
        await asyncio.to_thread(os.replace, tmp, git.index_file)
        await asyncio.to_thread(_write_alternates, alternates, user / "objects")
        code, out, _ = await git.run_full("ls-files", "-v", "-s", "-z")
        plain = await asyncio.to_thread(_plain_entries, out) if code == 0 else None
        if plain is not None:
            drop, paths, oids = plain
            # A file the index holds unchanged has its blob's size (no conversions, above).
            query = "".join(f"{o}\n" for o in dict.fromkeys(oids)).encode()
            sizes = await git.run(
                "cat-file", "--batch-check=%(objectname) %(objectsize)", input=query
            )
            big = {
                line.split(" ")[0]
                for line in sizes.decode().splitlines()
                if line.endswith(" missing") or int(line.split(" ")[1]) > max_bytes
            }
            keep = [p for p, o in zip(paths, oids, strict=True) if o not in big]
            drop += [p for p, o in zip(paths, oids, strict=True) if o in big]
            entries = (drop, keep)
    except (OSError, GitError, ValueError, IndexError) as exc:
        logger.info("not seeding restore points from the git index: %s", exc)
        entries = None
    if entries is None:
        await asyncio.to_thread(_undo, git, tmp, alternates)
    return entries


def _attribute_files(user: Path, env: dict[str, str]) -> bool:
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME", "/nonexistent"), ".config")
    return (user / "info" / "attributes").exists() or os.path.exists(
        os.path.join(xdg, "git", "attributes")
    )


async def _bytes_as_stored(git: str, root: Path, user: Path) -> bool:
    """Whether the repository stores files byte for byte: no attributes (a clean filter
    such as Git LFS, end-of-line conversion) and no ``core.autocrlf``. Otherwise a blob
    the index names is not the file on disk, and must not stand for it."""
    env = own_git_env()
    if await asyncio.to_thread(_attribute_files, user, env):
        return False
    proc = await asyncio.create_subprocess_exec(
        git,
        "config",
        "-z",
        "--get-regexp",
        r"^core\.(autocrlf|attributesfile|eol)$",
        cwd=root,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await proc.communicate()
    if proc.returncode not in (0, 1):
        return False
    for rec in out.split(b"\0"):
        key, _, value = rec.partition(b"\n")
        if key == b"core.attributesfile" or (key and value.lower() not in (b"false", b"lf")):
            return False
    return True


def _write_alternates(path: Path, objects: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(objects) + "\n")


def _undo(git: GitRunner, tmp: Path, alternates: Path) -> None:
    for path in (tmp, git.index_file, alternates):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _plain_entries(out: bytes) -> tuple[list[str], list[str], list[str]] | None:
    """Gitlink paths to drop, the other paths and their blob ids; None when an entry is
    not a plain one or the repository has attributes."""
    drop: list[str] = []
    paths: list[str] = []
    oids: list[str] = []
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, path = rec.partition(b"\t")
        parts = meta.split(b" ")
        # "H <mode> <oid> <stage>": H is a cached entry git checks by stat; lower case is
        # assume-unchanged, S skip-worktree, M unmerged.
        if len(parts) != 4 or parts[0] != b"H" or parts[3] != b"0":
            return None
        name = path.decode("utf-8", "surrogateescape")
        if name == ".gitattributes" or name.endswith("/.gitattributes"):
            return None  # see _bytes_as_stored
        if parts[1] == _GITLINK:
            drop.append(name)
        else:
            paths.append(name)
            oids.append(parts[2].decode())
    return drop, paths, oids


async def own_objects(git: GitRunner) -> None:
    """Copy every object the store uses into its own pack; then stop borrowing."""
    alternates = git.git_dir / ALTERNATES
    if not alternates.exists():
        return
    # Without -l, repack packs reachable objects found through alternates too.
    await git.run("repack", "-a", "-d", "-q")
    await asyncio.to_thread(alternates.unlink)


__all__ = ["ALTERNATES", "borrowing", "own_objects", "seed_index", "user_git_dir"]
