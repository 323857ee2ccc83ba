"""Protected paths: files that configure the editor, git or the agent itself.

A write there can turn one approved edit into standing power (an allow-all command rule in
``.vscode/settings.json``, a git hook, a CI workflow, a shell profile, an agent file the host
imports), so such writes always ask, whatever the preset, the path rules or an earlier "always"
answer say. Reads are not affected. Leaf module: the policy matches these patterns itself.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol


class ProtectingPolicy(Protocol):
    """What the helpers below read from a :class:`~lovia.workspace.policy.WorkspacePolicy` (a
    protocol: the policy imports this module)."""

    def is_protected(self, *, rel: str | None, abs_posix: str) -> bool: ...


DEFAULT_PROTECTED_PATHS: tuple[str, ...] = (
    # editors and IDEs: settings, tasks, launch configurations, workspace files
    ".vscode",
    "*.code-workspace",
    ".idea",
    ".zed",
    ".nvim.lua",
    ".nvimrc",
    ".exrc",
    ".devcontainer",
    # git: any git dir or link (nested too), its config, hooks and modules; CI
    ".git",
    ".gitmodules",
    ".gitattributes",
    ".github/workflows",
    ".gitlab-ci.yml",
    # lovia's own settings, skills and memory (in the project and the user's home)
    ".lovia",
    "~/.lovia",
    # the user's shell profiles and configuration
    "~/.bashrc",
    "~/.bash_profile",
    "~/.bash_login",
    "~/.bash_logout",
    "~/.profile",
    "~/.zshrc",
    "~/.zshenv",
    "~/.zprofile",
    "~/.zlogin",
    "~/.gitconfig",
    "~/.config",
    "~/.local/bin",
    # agent instructions the next session reads (lovia.workspace.project_instructions)
    "AGENTS.md",
    "CLAUDE.md",
    ".github/copilot-instructions.md",
    ".github/instructions",
    # command files whose prompts a user runs (lovia.workspace.project_commands)
    ".claude/commands",
    ".github/prompts",
)
"""Written by lovia as patterns in the forms ``denied_paths`` takes; matched case-insensitively.
Hosts may add to the list (``WorkspacePolicy(protected_paths=...)``); see docs/security.md."""

PROTECTED_WARNING = (
    "This change alters agent or editor configuration ({paths}). Such files can give the agent "
    "more power or run code later, so they always need your approval."
)


def protected_warning(paths: list[str]) -> str:
    """The plain sentence an approval card shows for a change to protected paths."""
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return PROTECTED_WARNING.format(paths=shown)


def protected_path(
    policy: ProtectingPolicy, root: Path, path: str, *, base: Path | None = None
) -> str | None:
    """``path`` as shown (root-relative inside) when writing it would touch a protected path."""
    from lovia.workspace.paths import resolve_path  # the policy imports this module

    try:
        resolved = resolve_path(root, path, base=base)
    except (OSError, RuntimeError, ValueError):
        return None
    if policy.is_protected(rel=resolved.rel, abs_posix=resolved.abs_posix):
        git = _enclosing_git(root, resolved.abs)
        if git is not None:
            resolved = resolve_path(root, str(git))
        return resolved.display()
    return None


def protects(policy: ProtectingPolicy, root: Path, rel: str) -> bool:
    """Whether writing ``rel`` (relative to ``root``) for the user, landing a worktree run or
    restoring a restore point, touches a protected path: as the path is spelled or where it
    resolves to (the file tools' judgement, :func:`protected_path`)."""
    if policy.is_protected(rel=rel, abs_posix=(root / rel).as_posix()):
        return True
    return protected_path(policy, root, rel) is not None


def _enclosing_git(root: Path, target: Path) -> Path | None:
    """``sub/.git/config`` that does not exist, run in a subdirectory of a repository: the
    repository's own ``.git/config`` (what git will write)."""
    parts = target.parts
    if ".git" not in parts or os.path.lexists(target):
        return None
    at = parts.index(".git")
    tail = parts[at + 1 :]
    here = Path(*parts[:at])
    while True:
        if (here / ".git").is_dir():
            return here / ".git" / Path(*tail) if tail else here / ".git"
        if here == root or here.parent == here or not here.is_relative_to(root):
            return None
        here = here.parent


def protected_command_targets(
    policy: ProtectingPolicy, root: Path, command: str, cwd: str = "."
) -> list[str]:
    """Protected paths a shell command names as something it may write (or recursively
    rewrite: ``git checkout .`` reaches ``.git``), for the approval card's warning."""
    from lovia.workspace.command_guard import analyze, extract_path_claims
    from lovia.workspace.errors import WorkspaceError
    from lovia.workspace.paths import resolve_path

    try:
        base = resolve_path(root, cwd).abs
    except (OSError, RuntimeError, ValueError, WorkspaceError):
        return []
    texts: list[tuple[str, bool]] = [
        (t, False) for op, t in extract_path_claims(command) if op == "write"
    ]
    for claim in analyze(command).claims:
        if claim.op in ("write", "either"):
            texts.append((claim.text, claim.recursive))
    found: list[str] = []
    for text, recursive in texts:
        for candidate in _with_children(root, base, text, recursive):
            hit = protected_path(policy, root, candidate, base=base)
            if hit is not None and hit not in found:
                found.append(hit)
    return found


def _with_children(root: Path, base: Path, text: str, recursive: bool) -> list[str]:
    if not recursive:
        return [text]
    top = Path(os.path.expanduser(text))
    top = top if top.is_absolute() else base / top
    try:
        names = sorted(os.listdir(top))[:500]
    except OSError:
        return [text]
    return [text, *(str(top / n) for n in names)]


__all__ = [
    "DEFAULT_PROTECTED_PATHS",
    "PROTECTED_WARNING",
    "ProtectingPolicy",
    "protected_command_targets",
    "protected_path",
    "protected_warning",
    "protects",
]
