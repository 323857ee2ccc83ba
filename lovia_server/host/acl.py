"""The workspace ACL a host builds for one folder: a preset, the permission settings, and the
other open folders. Shared by the editor (LSP) and ACP hosts so both judge paths alike."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from lovia.workspace import CommandRule, LocalWorkspace, PathRule, Workspace
from lovia.workspace.plan_mode import plan_policy
from lovia.workspace.protected import DEFAULT_PROTECTED_PATHS
from lovia_server.host.agents import agent_file
from lovia_server.host.sandbox_setup import choose_sandbox
from lovia_server.protocol.settings import PermissionSettings, Preset, SandboxSettings


def folder_config(
    root: Path,
    folders: Sequence[Path],
    perms: PermissionSettings,
    preset: Preset,
    *,
    agent: str | None = None,
    sandbox: SandboxSettings | None = None,
    plan: bool = False,
) -> LocalWorkspace:
    """``root``'s workspace under ``preset`` with the settings' rules; the other ``folders`` are
    readable and writable as the root is. Under ``coding`` every write asks (review-first)
    unless ``perms.write`` says otherwise. Writes to the built-in protected paths, the
    settings' ``protectedPaths`` and the ``agent`` file (which the host imports) always ask.
    Shell commands run in the sandbox ``sandbox`` chooses (by default: bubblewrap where it
    works, see :mod:`lovia_server.host.sandbox_setup`), where protected paths are read-only for
    commands that ran without approval.
    Read-only commands run unasked unless ``perms.readOnlyCommands`` is off. The project's
    instruction files (``AGENTS.md`` and friends, docs/customization.md) are read. ``plan``:
    the policy in plan mode (:mod:`lovia.workspace.plan_mode`), narrowed last so nothing above
    can loosen it."""
    rules: list[PathRule] = []
    for rule in perms.pathRules:
        if rule.read is not None:
            rules.append(PathRule(rule.pattern, rule.read, ops=frozenset({"read"})))
        if rule.write is not None:
            rules.append(PathRule(rule.pattern, rule.write, ops=frozenset({"write"})))
    base = Workspace.local(str(root), mode=preset)
    inside_write = base.policy.write
    if preset != "readonly":
        if perms.write is not None:
            inside_write = perms.write
        elif preset == "coding":
            inside_write = "ask"  # review-first: every edit is shown before it lands
    for folder in folders:
        if folder != root:
            rules.append(PathRule(str(folder), "allow", ops=frozenset({"read"})))
            rules.append(PathRule(str(folder), inside_write, ops=frozenset({"write"})))
    command_rules = tuple(CommandRule(r.pattern, r.decision) for r in perms.commandRules)
    config = Workspace.local(
        str(root),
        mode=preset,
        denied_paths=tuple(perms.deniedPaths),
        path_rules=tuple(rules),
        command_rules=command_rules if preset != "readonly" else (),
        protected_paths=(
            *DEFAULT_PROTECTED_PATHS,
            *perms.protectedPaths,
            *([str(path)] if agent and (path := agent_file(agent, list(folders))) else []),
        ),
        executor=choose_sandbox(sandbox or SandboxSettings()).executor,
        project_instructions=True,
    )
    if inside_write != config.policy.write:
        config = dataclasses.replace(
            config, policy=dataclasses.replace(config.policy, write=inside_write)
        )
    if not perms.readOnlyCommands and config.policy.allow_read_only_commands:
        config = dataclasses.replace(
            config, policy=dataclasses.replace(config.policy, allow_read_only_commands=False)
        )
    if plan:
        config = dataclasses.replace(config, policy=plan_policy(config.policy))
    return config


__all__ = ["folder_config"]
