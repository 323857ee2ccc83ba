"""A task's workspace: the server's own, built by the server's function with its defaults.

A batch has no settings file and nobody to ask, but it is held to the same rules as an editor
session: :func:`lovia_server.host.acl.folder_config` with the default
:class:`~lovia_server.protocol.settings.PermissionSettings` (denied paths such as ``.env``,
``id_rsa*``, ``~/.ssh``, ``~/.aws``; the protected paths) under every preset. What differs
is stated here and nowhere else:

* under ``coding`` an ordinary write inside the tree is allowed (``write: allow``), where the
  editor's review-first makes it ask: a headless run has nobody to review, and its edits
  come back as the task's patch. Protected paths still ask (and so are decided by the task's
  approval rules), denied paths stay denied;
* nothing is written outside the tree (``write_outside: deny`` under every preset, also for
  an approved command in the sandbox): the task's product is its patch, and under
  ``trusted`` an editor's "write outside?" card would otherwise be answered by a blanket
  ``approvals: allow`` that nobody reads;
* shell commands get no network in the sandbox (``network: deny``, no allowed domains),
  whatever the approvals say; whether the sandbox is used stays the batch's option.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Literal

from lovia.workspace import LocalWorkspace, WorkspacePolicy
from lovia_server.host.acl import folder_config
from lovia_server.protocol.settings import PermissionSettings, Preset, SandboxSettings


def task_permissions(preset: Preset) -> PermissionSettings:
    """The server's default permission settings, with a batch's ``coding`` writes."""
    return PermissionSettings(preset=preset, write="allow" if preset == "coding" else None)


def task_workspace(
    root: Path, preset: Preset, *, sandbox: bool | Literal["auto"] = "auto", plan: bool = False
) -> LocalWorkspace:
    """The workspace a task's agent works in: ``root`` under ``preset`` with the server's
    defaults; ``sandbox`` is the batch's ``auto`` / ``True`` (required) / ``False``; ``plan``:
    in plan mode (a ``mode: plan`` command), as the server narrows a plan-mode run."""
    enabled: Literal["auto", "on", "off"] = (
        "auto" if sandbox == "auto" else "on" if sandbox else "off"
    )
    config = folder_config(
        root,
        [root],
        task_permissions(preset),
        preset,
        sandbox=SandboxSettings(enabled=enabled, network="deny"),
        plan=plan,
    )
    inside_only = dataclasses.replace(config.policy, write_outside="deny")
    return dataclasses.replace(config, policy=inside_only)


def task_policy(root: Path, preset: Preset) -> WorkspacePolicy:
    """The policy of :func:`task_workspace` without probing for a sandbox: what the driver and
    the tree code judge paths with (which files are shipped, which changes are patched)."""
    return task_workspace(root, preset, sandbox=False).policy


def is_denied(policy: WorkspacePolicy, root: Path, rel: str) -> bool:
    """Whether the file at ``rel`` under ``root`` (a path in the tree, not resolved: the tree's
    own entries are judged, links included) is denied, or lies in a denied folder."""
    parts = Path(rel).parts
    for end in range(1, len(parts) + 1):
        sub = "/".join(parts[:end])
        if policy.is_denied(rel=sub, abs_posix=(root / sub).as_posix()):
            return True
    return False


__all__ = ["is_denied", "task_permissions", "task_policy", "task_workspace"]
