"""Subagents in git worktrees of their own, for agents run in-process (no server).

``Subagents(isolation=WorktreeIsolation())`` lets the model spawn a child with
``isolation: "worktree"``: the child gets a fresh worktree on a branch ``lovia/<slug>-<id>``
from its workspace's ``HEAD`` plus, by default, the uncommitted changes (denied paths never
carried), locked while lovia owns it, outside the user's tree. The child's workspace (same
ACL, same shell settings) is rooted there. When it ends its work is committed on the branch
and its report ends with the diff's summary; the worktree is removed and the **branch kept**
for the user (``git merge``), or both removed when the child changed nothing.

The lovia server has its own provider (its worktrees are listed and landed by
``lovia/worktree/*``); both use :mod:`lovia.workspace.git_worktrees`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lovia.exceptions import UserError
from lovia.plugins.subagent_isolation import IsolatedChild
from lovia.workspace import git_worktrees as g
from lovia.workspace.paths import resolve_path
from lovia.workspace.policy import WorkspacePolicy
from lovia.workspace.workspace import LocalWorkspace, WorkspaceSessionBinding
from lovia.workspace.worktree_summary import PATCH_CHARS, summarize

if TYPE_CHECKING:
    from lovia.agent import Agent
    from lovia.plugins.subagents import ChildSpec


@dataclass(frozen=True)
class WorktreeIsolation:
    """Puts each isolated child in a git worktree of its own (see the module docstring)."""

    directory: str | None = None
    """Where worktrees go; ``None``: ``$XDG_STATE_HOME/lovia/worktrees/<repo>-<hash>``."""
    include_uncommitted: bool = True
    """Start from ``HEAD`` plus the workspace's uncommitted changes (else ``HEAD`` only)."""
    keep_worktree: bool = False
    """Leave the worktree in place after the child (else only its branch stays)."""
    patch_chars: int = PATCH_CHARS
    """How much of the unified diff the report carries."""

    @property
    def kind(self) -> str:
        return "worktree"

    async def isolate(self, spec: ChildSpec) -> IsolatedChild:
        local = _local_workspace(spec.agent)
        root = await asyncio.to_thread(Path(local.root).resolve)
        repo = await asyncio.to_thread((await g.repo_root(root)).resolve)
        name = f"{g.slug(spec.prompt)}-{spec.id}-{secrets.token_hex(3)}"
        path = self._directory(repo) / name
        branch = f"lovia/{name}"
        base = await g.add(repo, path, branch)
        try:
            await g.lock(repo, path)
            if self.include_uncommitted:
                base = await g.carry_uncommitted(repo, path, denied_by(local.policy, repo))
        except BaseException:
            await g.remove(repo, path)
            await g.delete_branch(repo, branch)
            raise
        cwd = path / root.relative_to(repo) if root.is_relative_to(repo) else path
        agent = spec.agent.clone(workspace=dataclasses.replace(local, root=str(cwd)))

        async def finish() -> str:
            return await self._finish(repo, path, branch, base, spec.prompt, local.policy)

        return IsolatedChild(agent=agent, root=str(cwd), finish=finish, key=branch)

    async def _finish(
        self, repo: Path, path: Path, branch: str, base: str, prompt: str, policy: WorkspacePolicy
    ) -> str:
        tip = await g.commit_all(path, f"lovia: {_title(prompt)}")
        summary = await summarize(
            path,
            base,
            tip,
            branch=branch,
            patch_chars=self.patch_chars,
            skip=denied_by(policy, repo),
        )
        if not summary.files:
            await g.remove(repo, path)
            await g.delete_branch(repo, branch)
            return "It changed no files (its worktree and branch were removed)."
        if self.keep_worktree:
            where = f"Its worktree stays at {path}; the work is committed on {branch}"
        else:
            await g.remove(repo, path)
            where = f"Its work is committed on branch {branch}"
        return (
            f"{summary.render()}\n{where}, not in your workspace: `git merge {branch}` takes "
            f"it, `git branch -D {branch}` drops it."
        )

    def _directory(self, repo: Path) -> Path:
        if self.directory is not None:
            return Path(self.directory).expanduser()
        base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
        key = hashlib.sha256(str(repo).encode()).hexdigest()[:12]
        return base / "lovia" / "worktrees" / f"{repo.name or 'root'}-{key}"


def denied_by(policy: WorkspacePolicy, root: Path) -> Callable[[str], bool]:
    """Whether ``policy`` (at ``root``) denies a path relative to ``root``: never carried into
    a worktree, never summarized."""

    def denied(rel: str) -> bool:
        resolved = resolve_path(root, rel)
        decision = policy.decide_path(rel=resolved.rel, abs_posix=resolved.abs_posix, op="read")
        return decision == "deny"

    return denied


def _local_workspace(agent: Agent[Any]) -> LocalWorkspace:
    workspace = agent.workspace
    if isinstance(workspace, WorkspaceSessionBinding):
        workspace = workspace.workspace
    if not isinstance(workspace, LocalWorkspace):
        raise UserError(
            f"Subagent {agent.name!r} has no local workspace to isolate",
            hint="Worktree isolation needs a child agent with Workspace.local(...) inside a "
            "git repository; spawn it without isolation otherwise.",
        )
    return workspace


def _title(prompt: str) -> str:
    first = prompt.strip().splitlines()[0] if prompt.strip() else "subagent"
    return first[:72]


__all__ = ["WorktreeIsolation", "denied_by"]
