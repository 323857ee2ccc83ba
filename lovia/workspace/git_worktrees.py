"""The git plumbing of worktrees: a small typed API over the ``git`` command line.

One implementation for every user of worktrees: the server's worktree runs
(``lovia_server.host.worktree_runs``) and subagents isolated in worktrees
(:mod:`lovia.workspace.worktree_isolation`, and the server's own provider).

Every command runs with the user's hooks off (``core.hooksPath``) and with the hardened git
environment (:func:`lovia.workspace.git_env.own_git_env`: no ``core.fsmonitor``, no pager...):
lovia creating, committing in, diffing or removing its own worktree runs outside the sandbox,
so it must not run the project's ``post-checkout`` or ``pre-commit`` scripts, nor a program a
command once planted in the repository's config. Diffs go through :func:`diff` (no external
diff, no textconv). Commits lovia makes on its branches carry a fixed identity, so a
repository without ``user.name`` works too. Nothing here knows about runs or agents.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lovia.exceptions import UserError
from lovia.workspace.git_env import SAFE_DIFF, own_git_env

Reason = Literal["git-missing", "not-a-repo", "no-commits", "git-failed"]

_QUIET = ("-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", "-c", "gc.auto=0")
_IDENTITY = {
    "GIT_AUTHOR_NAME": "lovia",
    "GIT_AUTHOR_EMAIL": "lovia@localhost",
    "GIT_COMMITTER_NAME": "lovia",
    "GIT_COMMITTER_EMAIL": "lovia@localhost",
}
LOCK_REASON = "lovia: a worktree run owns this worktree"


class GitProblem(UserError):
    """git is missing, the folder is not a repository, or a git command failed."""

    def __init__(self, reason: Reason, message: str, hint: str) -> None:
        super().__init__(message, hint=hint)
        self.reason = reason


@dataclass(frozen=True)
class WorktreeEntry:
    """One line group of ``git worktree list --porcelain``."""

    path: Path
    head: str | None
    branch: str | None
    locked: bool


async def git(
    cwd: Path,
    *args: str,
    stdin: bytes | None = None,
    check: bool = True,
    env: dict[str, str] | None = None,
) -> bytes:
    """``git -C cwd args``'s stdout; a :class:`GitProblem` when it fails (and ``check``)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            "git",
            *_QUIET,
            "-C",
            str(cwd),
            *args,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=own_git_env(
                {
                    **_IDENTITY,
                    "GIT_OPTIONAL_LOCKS": "0",  # never take the user's index.lock to refresh it
                    **(env or {}),
                }
            ),
        )
    except FileNotFoundError:
        raise GitProblem(
            "git-missing",
            "git is not installed (or not on the server's PATH)",
            "Install git, or run without worktree isolation.",
        ) from None
    try:
        out, err = await proc.communicate(stdin)
    except asyncio.CancelledError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()  # a cancelled checkout must not go on writing after the server left
        raise
    if check and proc.returncode != 0:
        text = err.decode("utf-8", "replace").strip()
        last = text.splitlines()[-1] if text else f"exit {proc.returncode}"
        raise GitProblem(
            "git-failed",
            f"git {' '.join(args[:2])} failed: {last}",
            "See the server log; the workspace itself was not changed.",
        )
    return out


async def diff(cwd: Path, *args: str, env: dict[str, str] | None = None) -> bytes:
    """``git diff args``'s output, with no external diff or textconv program."""
    return await git(cwd, "diff", *SAFE_DIFF, *args, env=env)


async def repo_root(path: Path) -> Path:
    """The top of the repository ``path`` is in, which must have a commit to branch from."""
    if shutil.which("git") is None:
        raise GitProblem(
            "git-missing",
            "git is not installed (or not on the server's PATH)",
            "Install git, or run without worktree isolation.",
        )
    try:
        top = (await git(path, "rev-parse", "--show-toplevel")).decode().strip()
    except GitProblem as exc:
        if exc.reason == "git-missing":
            raise
        raise GitProblem(
            "not-a-repo",
            f"{path} is not inside a git repository",
            "Worktree isolation needs a git repository: run `git init` and commit, "
            "or run in the workspace itself.",
        ) from None
    try:
        await git(path, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    except GitProblem:
        raise GitProblem(
            "no-commits",
            f"The repository at {top} has no commit yet",
            "Commit once (a worktree branches from HEAD), or run in the workspace itself.",
        ) from None
    return Path(top)


def slug(prompt: str, *, words: int = 5, limit: int = 32) -> str:
    """A short branch-safe name for a task: lowercase ASCII words joined by ``-``."""
    found = re.findall(r"[a-z0-9]+", prompt.lower())[:words]
    text = "-".join(found)[:limit].strip("-")
    return text or "task"


async def add(repo: Path, path: Path, branch: str, *, checkout: bool = True) -> str:
    """A new worktree at ``path`` on a new ``branch`` from ``repo``'s HEAD; the base commit.
    Without ``checkout`` the worktree is registered but empty (:func:`check_out` fills it):
    milliseconds, where checking out a big tree takes seconds."""
    head = (await git(repo, "rev-parse", "HEAD")).decode().strip()
    await asyncio.to_thread(path.parent.mkdir, parents=True, exist_ok=True)
    flags = () if checkout else ("--no-checkout",)
    await git(repo, "worktree", "add", "--quiet", *flags, "-b", branch, str(path), head)
    return head


async def check_out(worktree: Path) -> None:
    """Fill a worktree added without checkout (its index and files, from its HEAD)."""
    await git(worktree, "reset", "--hard", "--quiet")


async def lock(repo: Path, path: Path, reason: str = LOCK_REASON) -> None:
    await git(repo, "worktree", "lock", "--reason", reason, str(path), check=False)


async def unlock(repo: Path, path: Path) -> None:
    await git(repo, "worktree", "unlock", str(path), check=False)


async def remove(repo: Path, path: Path) -> None:
    """Remove the worktree (locked or not, changes or not: the caller decided) and prune."""
    await unlock(repo, path)
    await git(repo, "worktree", "remove", "--force", "--force", str(path), check=False)
    if await asyncio.to_thread(path.exists):
        await asyncio.to_thread(shutil.rmtree, path, True)
    await git(repo, "worktree", "prune", check=False)


async def delete_branch(repo: Path, branch: str) -> None:
    await git(repo, "branch", "-D", branch, check=False)


async def branch_exists(repo: Path, branch: str) -> bool:
    out = await git(repo, "branch", "--list", branch, check=False)
    return bool(out.strip())


async def entries(repo: Path) -> list[WorktreeEntry]:
    """``git worktree list``, parsed."""
    out = (await git(repo, "worktree", "list", "--porcelain")).decode("utf-8", "replace")
    found: list[WorktreeEntry] = []
    for block in out.strip().split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, _, value = line.partition(" ")
            fields[key] = value
        if "worktree" in fields:
            branch = fields.get("branch")
            found.append(
                WorktreeEntry(
                    path=Path(fields["worktree"]),
                    head=fields.get("HEAD"),
                    branch=branch.removeprefix("refs/heads/") if branch else None,
                    locked="locked" in fields,
                )
            )
    return found


async def carry_uncommitted(repo: Path, worktree: Path, denied: Callable[[str], bool]) -> str:
    """Copy the workspace's uncommitted changes into the fresh worktree and commit them there.

    Tracked files: the diff against HEAD (staged and unstaged, binary included) is applied.
    Untracked files that git does not ignore are copied. Paths the ACL denies are never
    carried, neither their changes nor their contents. The carried state is committed on the
    worktree's branch, so it is the run's base: the run's diff is only the agent's work.
    Returns the base commit.
    """
    changed = _split(await diff(repo, "--name-only", "-z", "--no-renames", "HEAD"))
    keep = [rel for rel in changed if not denied(rel)]
    if keep:
        patch = await diff(repo, "--binary", "--no-renames", "HEAD", "--", *keep)
        if patch.strip():
            await git(worktree, "apply", "--binary", "--whitespace=nowarn", stdin=patch)
    untracked = _split(await git(repo, "ls-files", "--others", "--exclude-standard", "-z"))
    copy = [rel for rel in untracked if not denied(rel)]
    if copy:
        await asyncio.to_thread(_copy_files, repo, worktree, copy)
    return await commit_all(worktree, "lovia: the workspace's uncommitted changes")


async def commit_all(worktree: Path, message: str) -> str:
    """Commit everything in the worktree (if anything changed); the branch's new HEAD."""
    await git(worktree, "add", "-A")
    staged = await diff(worktree, "--cached", "--name-only", "-z")
    if staged.strip():
        await git(worktree, "commit", "--quiet", "--no-verify", "-m", message)
    return (await git(worktree, "rev-parse", "HEAD")).decode().strip()


async def snapshot_tree(worktree: Path) -> str:
    """The worktree's files as a tree object, through a private index: the branch and the
    worktree's own index stay as they are (the run may still be working)."""
    with tempfile.TemporaryDirectory(prefix="lovia-index-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        await git(worktree, "read-tree", "HEAD", env=env)
        await git(worktree, "add", "-A", env=env)
        return (await git(worktree, "write-tree", env=env)).decode().strip()


def _split(out: bytes) -> list[str]:
    return [part.decode("utf-8", "surrogateescape") for part in out.split(b"\0") if part]


def _copy_files(repo: Path, worktree: Path, rels: list[str]) -> None:
    for rel in rels:
        src, dst = repo / rel, worktree / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            if dst.is_symlink() or dst.exists():
                dst.unlink()
            dst.symlink_to(os.readlink(src))
        elif src.is_file():
            shutil.copy2(src, dst)


__all__ = [
    "LOCK_REASON",
    "GitProblem",
    "Reason",
    "WorktreeEntry",
    "add",
    "branch_exists",
    "carry_uncommitted",
    "check_out",
    "commit_all",
    "delete_branch",
    "diff",
    "entries",
    "git",
    "lock",
    "remove",
    "repo_root",
    "slug",
    "snapshot_tree",
    "unlock",
]
