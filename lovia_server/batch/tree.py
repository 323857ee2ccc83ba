"""A task's tree on the worker: packed on the driver, unpacked or cloned into a temporary
directory, committed as a baseline, and diffed against it at the end (the task's patch).

Git runs with the workspace's hardened configuration, because the agent may have written a
``.git/config`` of its own into the tree before the diff is taken.

Denied files (``.env``, keys: the task's policy, see :mod:`lovia_server.batch.task_workspace`)
never travel: a local directory is packed without them, a cloned tree has them removed
before the agent starts, and the patch leaves out every denied path (a deleted ``.env``
would otherwise carry its whole old contents). ``denied`` is that judgement, on a path
relative to the tree.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

from lovia.workspace.git_env import own_git_env
from lovia_server.batch.task import TaskSource

#: Folders never shipped from a local directory: VCS metadata (the worker makes a fresh
#: baseline) and environments that belong to the machine they were made on.
SKIPPED = frozenset({".git", ".venv", "node_modules", "__pycache__"})
_IDENTITY = ("-c", "user.name=lovia batch", "-c", "user.email=batch@lovia.invalid")


Denied = Callable[[str], bool]
"""Whether a path relative to the tree (``a/b.txt``, not resolved) is denied."""


class TreeError(Exception):
    """The task's tree could not be set up: a failure of the task's input, never retried."""


def pack(directory: str | Path, denied: Denied) -> bytes:
    """``directory`` as a gzip tar archive, without :data:`SKIPPED` folders and without the
    files and folders ``denied`` names."""
    root = Path(directory)
    if not root.is_dir():
        raise TreeError(f"source path {root} is not a directory")

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = Path(info.name).parts
        if any(part in SKIPPED for part in parts) or denied(info.name):
            return None
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for child in sorted(root.iterdir()):
            archive.add(child, arcname=child.name, filter=keep)
    return buffer.getvalue()


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *_IDENTITY, *args],
        cwd=root,
        env=own_git_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise TreeError(f"git {args[0]} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def materialise(source: TaskSource, packed: bytes | None, root: Path, denied: Denied) -> str:
    """Fill the empty directory ``root``; returns the baseline commit the patch is taken
    against. A clone's denied files are removed from the tree (the commit keeps them; the
    patch leaves their removal out)."""
    if source.git is not None:
        _git(root, "clone", "--quiet", "--no-checkout", "--", source.git, ".")
        commit = source.commit or "HEAD"
        try:  # resolved first, so a ref that looks like an option is only ever a name
            sha = _git(
                root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{commit}^{{commit}}"
            ).strip()
        except TreeError:
            raise TreeError(f"commit {commit!r} is not in {source.git}") from None
        _git(root, "checkout", "--quiet", "--detach", sha)
        _remove_denied(root, denied)
        return _git(root, "rev-parse", "HEAD").strip()
    if packed is None:
        raise TreeError("the local directory was not shipped with the task")
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as archive:
        archive.extractall(root, filter="data")
    _git(root, "init", "--quiet")
    _git(root, "add", "-A")
    _git(root, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", "batch baseline")
    return _git(root, "rev-parse", "HEAD").strip()


def _remove_denied(root: Path, denied: Denied) -> None:
    listed = _git(root, "ls-files", "-z")
    for rel in filter(None, listed.split("\0")):
        if denied(rel):
            (root / rel).unlink(missing_ok=True)


def patch(root: Path, base: str, denied: Denied) -> str:
    """Every change since ``base``, new files included, as one ``git diff``; changes to
    denied paths are left out (renames count as a removal and an addition, each judged)."""
    _git(root, "add", "-A")
    diff = ("diff", "--cached", "--no-renames", "--no-ext-diff", "--no-textconv")
    changed = _git(root, *diff, "--name-only", "-z", base)
    excluded = [f":(exclude,literal){rel}" for rel in changed.split("\0") if rel and denied(rel)]
    return _git(root, *diff, "--binary", base, "--", ".", *excluded)


__all__ = ["SKIPPED", "Denied", "TreeError", "materialise", "pack", "patch"]
