"""How a headless task answers an approval request: its rules, judged by the workspace's own
matchers (no second rule matcher).

* A command (a call with a ``command`` argument, the ``shell`` tool) is approved by
  ``shell:WORDS*`` rules only when *every* program it runs (behind ``;``, ``&&``, ``|``,
  ``$(…)``, ``sh -c``, ``env``/``xargs``… wrappers: :func:`lovia.workspace.command_guard.
  invocations`) starts with some rule's words, and every path it names is allowed by the
  workspace: :func:`lovia.workspace.command_guard.decide_command` with the rules as the only
  ``allow`` command rules and ``deny`` for the rest. The trailing ``*`` means "with any
  arguments": ``shell:pytest*`` approves ``pytest -q tests`` but not ``pytest -q; cat x``.
* A path (a call with a ``path`` argument) is resolved the way the workspace resolves it
  (``..`` and symlinks followed) and matched as a workspace path rule: a relative pattern
  (``write_file:src/*``) only inside the tree, an absolute or ``~`` pattern anywhere.
* A bare tool name approves the tool's calls inside the tree (a command: any program, every
  path it names allowed by the workspace).
* ``default: allow`` approves every other call that asks.

Writes to protected paths (``.git``, ``.vscode``, CI files: the warned approval of an editor)
are never approved by ``default: allow`` or a bare tool name: a file tool needs a rule whose
pattern names the path, and a command that names a protected path it writes is never
approved. Denied paths never reach this point: the workspace refuses them without asking.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from lovia.messages import ToolCall
from lovia.workspace import CommandRule, PathRule, WorkspaceError, WorkspacePolicy
from lovia.workspace.command_guard import decide_command
from lovia.workspace.paths import ResolvedPath, resolve_abs, resolve_path
from lovia.workspace.protected import protected_command_targets
from lovia_server.batch.task import ApprovalPolicy


def approves(rules: ApprovalPolicy, call: ToolCall, policy: WorkspacePolicy, root: Path) -> bool:
    """Whether ``rules`` approve ``call`` in the workspace at ``root`` under ``policy``."""
    args = _arguments(call)
    patterns: list[str] = []
    bare = False
    for rule in rules.allow:
        tool, sep, pattern = rule.partition(":")
        if tool == call.name:
            if sep:
                patterns.append(pattern)
            else:
                bare = True
    try:
        base = resolve_abs(root)
        command, cwd = args.get("command"), args.get("cwd") or "."
        if isinstance(command, str) and isinstance(cwd, str):
            return _approves_command(rules, command, cwd, patterns, bare, policy, base)
        path = args.get("path")
        if isinstance(path, str):
            return _approves_path(rules, resolve_path(base, path), patterns, bare, policy)
    except WorkspaceError:
        return False
    if "command" in args or "path" in args:
        return False  # not a string: nothing to judge, fail closed
    return bare or rules.default == "allow"


def command_rule(pattern: str) -> CommandRule:
    """``pytest -q*`` → the command words ``pytest -q`` (any arguments may follow)."""
    return CommandRule(pattern.removesuffix("*").strip(), "allow")


def _approves_command(
    rules: ApprovalPolicy,
    command: str,
    cwd: str,
    patterns: list[str],
    bare: bool,
    policy: WorkspacePolicy,
    root: Path,
) -> bool:
    if protected_command_targets(policy, root, command, cwd):
        return False
    if rules.default == "allow":
        return True
    allowed = [command_rule(p) for p in patterns] + ([CommandRule("", "allow")] if bare else [])
    if not allowed:
        return False
    only_rules = dataclasses.replace(
        policy,
        command_rules=tuple(allowed),
        shell_default="deny",
        command_decider=None,
        allow_read_only_commands=False,
    )
    return decide_command(only_rules, root, command, cwd) == "allow"


def _approves_path(
    rules: ApprovalPolicy,
    target: ResolvedPath,
    patterns: list[str],
    bare: bool,
    policy: WorkspacePolicy,
) -> bool:
    if any(_path_rule_matches(p, target, policy) for p in patterns):
        return True
    if policy.is_protected(rel=target.rel, abs_posix=target.abs_posix):
        return False
    return (bare and target.inside) or rules.default == "allow"


def _path_rule_matches(pattern: str, target: ResolvedPath, policy: WorkspacePolicy) -> bool:
    if not target.inside and not pattern.startswith(("/", "~")):
        return False
    matcher = WorkspacePolicy(
        write="deny",
        read_outside="deny",
        write_outside="deny",
        path_rules=(PathRule(pattern, "allow"),),
        denied_paths=policy.denied_paths,
        protected_paths=(),
    )
    return matcher.decide_path(rel=target.rel, abs_posix=target.abs_posix, op="write") == "allow"


def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        args = json.loads(call.arguments or "{}")
    except ValueError:
        return {"path": None}  # unreadable arguments: judged as nothing to approve
    return args if isinstance(args, dict) else {"path": None}


__all__ = ["approves", "command_rule"]
