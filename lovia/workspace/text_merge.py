"""Three-way merge of one file (``git merge-file -p``): the one helper for every place that
lands a change computed on an older version of a file over a newer one — an approved edit over
the user's unsaved text (:class:`~lovia.workspace.local.LocalWorkspaceSession`), a worktree
run's work over the workspace (``lovia_server.host.worktree_landing``).

git runs with :func:`~lovia.workspace.git_env.own_git_env` in an empty temporary folder, so no
repository's configuration (a merge driver, an fsmonitor) takes part.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from lovia.workspace.git_env import own_git_env


async def merge_file(ours: bytes, base: bytes, theirs: bytes) -> bytes | None:
    """``git merge-file -p``: the merged bytes, or ``None`` when the changes overlap (or sit
    on adjacent lines, which git cannot order). Raises ``OSError`` when git cannot start."""
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


async def merge_text(ours: str, base: str, theirs: str) -> str | None:
    """:func:`merge_file` on texts: ``theirs``' change from ``base`` applied over ``ours``, or
    ``None`` when it overlaps a change of ``ours``."""
    if ours == base:
        return theirs
    if theirs in (base, ours):
        return ours
    merged = await merge_file(*(t.encode("utf-8", "surrogatepass") for t in (ours, base, theirs)))
    return None if merged is None else merged.decode("utf-8", "surrogatepass")


__all__ = ["merge_file", "merge_text"]
