"""What a worktree run changed, and landing it in the workspace without overwriting the user.

Each file the run changed (base commit -> the branch's tip) is judged three ways: the base,
the run's version (or the text the user approved hunk by hunk) and the workspace's file now.
The workspace still at the base takes the run's version; a workspace that already has it needs
nothing; anything else goes through ``git merge-file``: a clean merge lands the merged text,
an overlapping one is a conflict. One conflict and nothing is written; the client shows them.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lovia.workspace import git_worktrees as g
from lovia.workspace.git_env import own_git_env

Status = Literal["added", "modified", "deleted"]
Verdict = Literal["clean", "merged", "unchanged", "conflict"]


@dataclass(frozen=True)
class Change:
    """One file the run changed, with its three versions (``None``: the file is absent)."""

    path: str
    status: Status
    base: bytes | None
    theirs: bytes | None
    ours: bytes | None
    patch: str

    @property
    def binary(self) -> bool:
        return any(b is not None and b"\0" in b[:8000] for b in (self.base, self.theirs, self.ours))


@dataclass(frozen=True)
class Landing:
    """The plan for one file: what the workspace gets (``None``: delete), or why it cannot."""

    change: Change
    verdict: Verdict
    result: bytes | None
    reason: str | None = None


async def changes(
    workspace: Path, worktree: Path, base: str, tip: str, denied: Callable[[str], bool]
) -> tuple[list[Change], list[str]]:
    """The run's changed files (denied paths apart, returned second) with their versions."""
    out = await g.diff(worktree, "--name-status", "--no-renames", "-z", base, tip)
    parts = [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]
    found: list[Change] = []
    skipped: list[str] = []
    for code, path in zip(parts[::2], parts[1::2], strict=False):
        if denied(path):
            skipped.append(path)
            continue
        status: Status = {"A": "added", "D": "deleted"}.get(code[:1], "modified")  # type: ignore[assignment]
        patch = await g.diff(worktree, "--no-renames", base, tip, "--", path)
        found.append(
            Change(
                path=path,
                status=status,
                base=None if status == "added" else await _blob(worktree, base, path),
                theirs=None if status == "deleted" else await _blob(worktree, tip, path),
                ours=await asyncio.to_thread(_read, workspace / path),
                patch=patch.decode("utf-8", "replace"),
            )
        )
    return found, skipped


async def plan(
    changes_: list[Change], edits: Mapping[str, str], unsaved: set[str]
) -> list[Landing]:
    """Judge every change; ``edits`` replace the run's version of a file (the user's review),
    ``unsaved`` are files with unsaved editor changes (always a conflict)."""
    out = []
    for change in changes_:
        theirs = edits[change.path].encode() if change.path in edits else change.theirs
        out.append(await _judge(change, theirs, change.path in unsaved))
    return out


async def _judge(change: Change, theirs: bytes | None, unsaved: bool) -> Landing:
    if unsaved:
        return Landing(change, "conflict", None, "the file has unsaved changes in the editor")
    if change.ours == theirs:
        return Landing(change, "unchanged", theirs)
    if change.ours == change.base:
        return Landing(change, "clean", theirs)
    if None in (change.ours, change.base, theirs) or change.binary:
        return Landing(
            change, "conflict", None, "the workspace's file changed since the run's base"
        )
    assert change.ours is not None and change.base is not None and theirs is not None
    merged = await _merge(change.ours, change.base, theirs)
    if merged is None:
        return Landing(
            change, "conflict", None, "the workspace's changes since the base overlap the run's"
        )
    return Landing(change, "merged", merged)


async def write(workspace: Path, landings: list[Landing], modes: Mapping[str, int]) -> None:
    """Write the plan (no conflicts in it): each file through a temporary and a rename."""
    await asyncio.to_thread(_write_all, workspace, landings, modes)


def _write_all(workspace: Path, landings: list[Landing], modes: Mapping[str, int]) -> None:
    for landing in landings:
        if landing.verdict == "unchanged":
            continue
        target = workspace / landing.change.path
        if landing.result is None:
            target.unlink(missing_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".lovia-land-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(landing.result)
            mode = modes.get(landing.change.path)
            if mode is None and target.exists():
                mode = target.stat().st_mode & 0o777
            os.chmod(tmp, mode if mode is not None else 0o644)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


async def modes(worktree: Path, landings: list[Landing]) -> dict[str, int]:
    """The run's file modes (an executable bit the agent set lands too)."""
    out = {}
    for landing in landings:
        path = worktree / landing.change.path
        if landing.result is not None and path.exists():
            out[landing.change.path] = path.stat().st_mode & 0o777
    return out


async def _blob(worktree: Path, commit: str, path: str) -> bytes | None:
    try:
        return await g.git(worktree, "cat-file", "blob", f"{commit}:{path}")
    except g.GitProblem:
        return None


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


async def _merge(ours: bytes, base: bytes, theirs: bytes) -> bytes | None:
    """``git merge-file -p``: the merged bytes, or ``None`` when the changes overlap."""
    with tempfile.TemporaryDirectory(prefix="lovia-merge-") as tmp:
        names = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / name
            await asyncio.to_thread(path.write_bytes, data)
            names.append(str(path))
        proc = await asyncio.create_subprocess_exec(
            "git",
            "merge-file",
            "-p",
            *names,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            cwd=tmp,  # no repository around it to read a config from
            env=own_git_env(),
        )
        out, _ = await proc.communicate()
    return out if proc.returncode == 0 else None


def text_of(data: bytes | None) -> str | None:
    """A version as text for the wire (``None`` when absent or not UTF-8)."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


__all__ = ["Change", "Landing", "Status", "Verdict", "changes", "modes", "plan", "text_of", "write"]
