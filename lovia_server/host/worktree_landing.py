"""What a worktree run changed, and landing it in the workspace without overwriting the user.

Each file the run changed (base commit -> the branch's tip) is judged three ways: the base,
the run's version (or the text the user approved hunk by hunk) and the workspace's file now.
The workspace still at the base takes the run's version; a workspace that already has it needs
nothing; anything else goes through ``git merge-file``: a clean merge lands the merged text,
an overlapping one is a conflict. One conflict and nothing is written; the client shows them.

Landing is a write the server performs for the user, so it passes the workspace's gate: a path
its policy denies (to read or to write) is never shown nor landed, a protected path is flagged
(:attr:`Change.protected`: the apply needs the user's confirmation of the warning), and a path
whose folder in the workspace is a symbolic link (or whose file is a link, a FIFO, a device) is
a conflict: nothing is ever written through a link. The writes themselves walk every folder
from ``/`` without following a link (:mod:`lovia.workspace._fs`), all of them before the first
file is written, so a folder swapped for a link after the review stops the landing whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from lovia.workspace import _fs
from lovia.workspace import git_worktrees as g
from lovia.workspace.errors import WorkspaceError
from lovia.workspace.protected import protected_warning
from lovia_server import protocol as p
from lovia_server.host.uris import path_uri

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
    protected: bool = False
    """The workspace's policy protects the path: landing it needs the user's confirmation."""
    unsafe: str | None = None
    """Why the workspace's path cannot be written safely (a link on the way): a conflict."""

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
    workspace: Path,
    worktree: Path,
    base: str,
    tip: str,
    denied: Callable[[str], bool],
    *,
    protected: Callable[[str], bool],
) -> tuple[list[Change], list[str]]:
    """The run's changed files (denied paths apart, returned second) with their versions;
    ``protected`` flags the paths whose landing needs the user's confirmation."""
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
        ours, unsafe = await asyncio.to_thread(_inspect, workspace, path, status)
        found.append(
            Change(
                path=path,
                status=status,
                base=None if status == "added" else await _blob(worktree, base, path),
                theirs=None if status == "deleted" else await _blob(worktree, tip, path),
                ours=ours,
                patch=patch.decode("utf-8", "replace"),
                protected=protected(path),
                unsafe=unsafe,
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
    if change.unsafe is not None:
        return Landing(change, "conflict", None, change.unsafe)
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


async def write(
    workspace: Path, landings: list[Landing], modes: Mapping[str, int]
) -> list[Landing]:
    """Write the plan (no conflicts in it), each file through a temporary and a rename.

    Every folder is checked first, without following a link, and nothing is written unless
    each file can be: returned are the landings refused because the workspace changed since
    the plan (a folder turned into a link). A failure half-way (a disk error, a folder swapped
    in the middle) stops with :class:`LandingStopped`, naming what landed."""
    return await asyncio.to_thread(_write_all, workspace, landings, modes)


class LandingStopped(WorkspaceError):
    """The landing stopped half-way: some files were written, the rest were not."""


def _write_all(workspace: Path, landings: list[Landing], modes: Mapping[str, int]) -> list[Landing]:
    workspace = workspace.resolve()  # the walks start at `/`: the root's own links are its
    todo = [landing for landing in landings if landing.verdict != "unchanged"]
    folders: dict[str, int | None] = {}
    try:
        refused = _check_all(workspace, todo, folders)
        if refused:
            return refused
        written: list[str] = []
        try:
            for landing in sorted(todo, key=lambda landing: landing.result is not None):
                _write_one(workspace, landing, modes, folders)  # deletions first: a file
                written.append(landing.change.path)  # may make way for a folder
        except (OSError, WorkspaceError) as exc:
            raise LandingStopped(
                f"Landing stopped at a file it could not write safely ({exc}); "
                f"written before: {', '.join(written) or 'nothing'}",
                hint="Nothing was written through a link. The restore point taken before the "
                "apply undoes what landed.",
            ) from exc
        return []
    finally:
        for fd in folders.values():
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)


def _check_all(
    workspace: Path, todo: list[Landing], folders: dict[str, int | None]
) -> list[Landing]:
    """Open each existing folder (``None``: made when written) and check each file; nothing
    changes yet. The landings that cannot be written safely, with why."""
    refused = []
    for landing in todo:
        parent = os.path.dirname(landing.change.path)
        if parent not in folders:
            try:
                folders[parent] = _fs.open_dir(workspace / parent)
            except (FileNotFoundError, NotADirectoryError):
                folders[parent] = None
            except WorkspaceError:
                folders[parent] = None
                refused.append(_refused(landing, f"a folder of {landing.change.path} is a link"))
                continue
        dfd = folders[parent]
        if dfd is not None and (problem := _target_problem(dfd, landing)) is not None:
            refused.append(_refused(landing, problem))
    return refused


def _write_one(
    workspace: Path, landing: Landing, modes: Mapping[str, int], folders: dict[str, int | None]
) -> None:
    parent = os.path.dirname(landing.change.path)
    target = workspace / landing.change.path
    dfd = folders[parent]
    if landing.result is None:
        if dfd is not None:
            _fs.remove_in(dfd, target.name, path=target)
        return
    if dfd is None:  # made now, each folder walked without following a link
        dfd = folders[parent] = _fs.open_dir(workspace / parent, create=True)
    mode = modes.get(landing.change.path)
    _fs.replace_in(dfd, target.name, landing.result, path=target, mode=mode)


def _target_problem(dfd: int, landing: Landing) -> str | None:
    name = os.path.basename(landing.change.path)
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISREG(st.st_mode) or (stat.S_ISLNK(st.st_mode) and landing.result is None):
        return None
    return f"{landing.change.path} is now a link, a folder or a special file"


def _refused(landing: Landing, problem: str) -> Landing:
    reason = f"{problem} (it changed since the review): nothing was written"
    return Landing(landing.change, "conflict", None, reason)


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


def _inspect(workspace: Path, rel: str, status: Status) -> tuple[bytes | None, str | None]:
    """The workspace's version of ``rel`` (``None``: absent), and why landing there would not
    be safe: a folder on the way that is a link (it could lead anywhere, outside the workspace
    too), a file that is a link (never followed; only a deletion removes it), a FIFO, a socket
    or a device (never opened). Nothing is read through a link."""
    try:
        return _inspect_path(workspace.resolve(), rel, status)
    except (OSError, WorkspaceError):
        return None, f"{rel} changed while it was read (a link or a special file on its path)"


def _inspect_path(workspace: Path, rel: str, status: Status) -> tuple[bytes | None, str | None]:
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return None, f"{rel} is not a path inside the workspace"
    for i in range(1, len(parts)):
        folder = "/".join(parts[:i])
        try:
            st = os.lstat(workspace / folder)
        except FileNotFoundError:
            return None, None  # landing makes the folders
        if stat.S_ISLNK(st.st_mode):
            return None, (
                f"{folder} is a symbolic link in the workspace: lovia does not write through "
                "a link (it could lead outside the workspace)"
            )
        if not stat.S_ISDIR(st.st_mode):
            return None, None  # a file where the run has a folder: the run deleted it too
    try:
        st = os.lstat(workspace / rel)
    except FileNotFoundError:
        return None, None
    if stat.S_ISLNK(st.st_mode):
        link = os.fsencode(os.readlink(workspace / rel))
        if status == "deleted":
            return link, None  # removing the link itself follows nothing
        return link, f"{rel} is a symbolic link in the workspace: lovia does not write through it"
    if not stat.S_ISREG(st.st_mode):
        return None, f"{rel} is not a regular file in the workspace"
    return _fs.read_bytes(workspace / rel)[0], None


async def _merge(ours: bytes, base: bytes, theirs: bytes) -> bytes | None:
    """``git merge-file -p``: the merged bytes, or ``None`` when the changes overlap."""
    from lovia.workspace.text_merge import merge_file

    return await merge_file(ours, base, theirs)


def text_of(data: bytes | None) -> str | None:
    """A version as text for the wire (``None`` when absent or not UTF-8)."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def require_confirmed(run_id: str, plans: list[Landing], confirmed: list[str]) -> None:
    """Refuse to land a protected path the user did not confirm after seeing the warning."""
    paths = [
        plan.change.path
        for plan in plans
        if plan.change.protected and plan.verdict != "unchanged"
        and plan.change.path not in confirmed
    ]  # fmt: skip
    if paths:
        raise p.ProtocolError(
            p.PROTECTED_PATHS_UNCONFIRMED,
            protected_warning(paths),
            {"runId": run_id, "paths": paths, "field": "confirmProtected"},
        )


def wire_file(repo: Path, plan: Landing) -> p.WorktreeFile:
    change = plan.change
    return p.WorktreeFile(
        path=change.path,
        uri=path_uri(repo / change.path),
        status=change.status,
        binary=change.binary,
        old_text=text_of(change.ours),
        new_text=text_of(plan.result) if plan.verdict != "conflict" else None,
        patch=change.patch,
        verdict=plan.verdict,
        reason=plan.reason,
        protected=change.protected,
    )


__all__ = [
    "Change",
    "Landing",
    "LandingStopped",
    "Status",
    "Verdict",
    "changes",
    "modes",
    "plan",
    "require_confirmed",
    "text_of",
    "wire_file",
    "write",
]
