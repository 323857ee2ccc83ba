"""One allow/ask/deny ACL for paths and shell commands.

``decide_path`` judges a *resolved* path (the caller resolves symlinks first, see
:mod:`lovia.workspace.paths`); ``decide_command`` judges a command line by its
command words. The session (:class:`~lovia.workspace.local.LocalWorkspaceSession`)
merges both with the paths a command mentions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from lovia.workspace.decision import (
    DECISIONS as _DECISIONS,
)
from lovia.workspace.decision import (
    CommandDecider,
    Decision,
    FileOp,
    merge_decisions,
)
from lovia.workspace.decision import (
    normalize as _normalize,
)
from lovia.workspace.patterns import (
    _canonical_abs_pattern,
    _path_matches,
    _pattern_matches,
    any_pattern_matches,
    segment_regex,
)
from lovia.workspace.protected import DEFAULT_PROTECTED_PATHS

WorkspaceMode: TypeAlias = Literal["readonly", "coding", "trusted"]


@dataclass(frozen=True)
class PathRule:
    """``pattern`` → ``action`` for the ``ops`` it names; first match wins."""

    pattern: str
    action: Decision
    ops: frozenset[FileOp] = frozenset({"read", "write"})

    def __post_init__(self) -> None:
        ops: Any = self.ops
        if isinstance(ops, str):
            ops = (ops,)
        object.__setattr__(self, "ops", frozenset(ops))


@dataclass(frozen=True)
class CommandRule:
    """Commands whose words start with ``pattern``'s words get ``action``."""

    pattern: str
    action: Decision


# --------------------------------------------------------------------------- commands

_SPLIT_RE = re.compile(r"\|\||&&|;|\n|\r|\||(?<![<>])&(?![&>])")


def split_command_segments(command: str) -> list[str]:
    """Lexical split on control operators (quotes ignored: extra splits only add strictness)."""
    return [seg.strip() for seg in _SPLIT_RE.split(command) if seg.strip()]


def _rule_matches(rule_words: list[str], words: list[str]) -> bool:
    return words[: len(rule_words)] == rule_words


@dataclass(frozen=True)
class WorkspacePolicy:
    """The workspace ACL. See ``docs/workspace.md`` for the model."""

    write: Decision = "allow"
    read_outside: Decision = "deny"
    write_outside: Decision = "deny"
    path_rules: tuple[PathRule, ...] = ()
    denied_paths: tuple[str, ...] = ()
    allow_shell: bool = True
    shell_default: Decision = "ask"
    command_rules: tuple[CommandRule, ...] = ()
    command_decider: CommandDecider | None = field(default=None)
    protected_paths: tuple[str, ...] = DEFAULT_PROTECTED_PATHS
    """Writes here always ask (never looser; ``deny`` stays ``deny``): editor, git and agent
    configuration. Matched case-insensitively, like ``denied_paths``."""
    allow_read_only_commands: bool = False
    """Run commands the read-only table knows (``ls``, ``git status``...) without asking when
    their only ``ask`` is ``shell_default`` or the guard's caution about a tree they walk
    (see :mod:`lovia.workspace.command_guard.readonly`). Beyond the spec; on under
    :meth:`coding` and :meth:`trusted`, off on a bare ``WorkspacePolicy()``."""
    plan_mode: bool = False
    """Plan mode (:mod:`lovia.workspace.plan_mode`): every write is ``deny`` and every
    ``ask`` (a path, or a command the read-only table does not vouch for) becomes ``deny``,
    so nothing is changed and nothing asks. Only narrows; build it with ``plan_policy``."""

    def __post_init__(self) -> None:
        for name in ("path_rules", "denied_paths", "command_rules", "protected_paths"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = (value,)
            object.__setattr__(self, name, tuple(value))
        if self.allow_shell is False and self.shell_default != "deny":
            object.__setattr__(self, "shell_default", "deny")

    # ------------------------------------------------------------------ presets

    @classmethod
    def readonly(
        cls,
        *,
        denied_paths: Iterable[str] = (),
        path_rules: Iterable[PathRule] = (),
        protected_paths: Iterable[str] = DEFAULT_PROTECTED_PATHS,
    ) -> WorkspacePolicy:
        return cls(
            protected_paths=tuple(protected_paths),
            write="deny",
            read_outside="deny",
            write_outside="deny",
            allow_shell=False,
            shell_default="deny",
            denied_paths=tuple(denied_paths),
            path_rules=tuple(path_rules),
        )

    @classmethod
    def coding(
        cls,
        *,
        command_rules: Iterable[CommandRule] = (),
        denied_paths: Iterable[str] = (),
        path_rules: Iterable[PathRule] = (),
        command_decider: CommandDecider | None = None,
        protected_paths: Iterable[str] = DEFAULT_PROTECTED_PATHS,
        allow_read_only_commands: bool = True,
    ) -> WorkspacePolicy:
        return cls(
            protected_paths=tuple(protected_paths),
            write="allow",
            read_outside="ask",
            write_outside="deny",
            allow_shell=True,
            shell_default="ask",
            command_rules=tuple(command_rules),
            denied_paths=tuple(denied_paths),
            path_rules=tuple(path_rules),
            command_decider=command_decider,
            allow_read_only_commands=allow_read_only_commands,
        )

    @classmethod
    def trusted(
        cls,
        *,
        command_rules: Iterable[CommandRule] = (),
        denied_paths: Iterable[str] = (),
        path_rules: Iterable[PathRule] = (),
        command_decider: CommandDecider | None = None,
        protected_paths: Iterable[str] = DEFAULT_PROTECTED_PATHS,
    ) -> WorkspacePolicy:
        return cls(
            protected_paths=tuple(protected_paths),
            write="allow",
            read_outside="allow",
            write_outside="ask",
            allow_shell=True,
            shell_default="allow",
            command_rules=tuple(command_rules),
            denied_paths=tuple(denied_paths),
            path_rules=tuple(path_rules),
            command_decider=command_decider,
            allow_read_only_commands=True,
        )

    # ------------------------------------------------------------------ paths

    def decide_path(self, *, rel: str | None, abs_posix: str, op: FileOp) -> Decision:
        """Judge a resolved path: denied patterns, then the first matching rule, then defaults;
        a write to a protected path is at least ``ask``."""
        if self.is_denied(rel=rel, abs_posix=abs_posix):
            return "deny"
        decision = self._decide_unprotected(rel, abs_posix, op)
        if self.plan_mode and (op == "write" or decision == "ask"):
            return "deny"
        if (
            op == "write"
            and decision == "allow"
            and self.is_protected(rel=rel, abs_posix=abs_posix)
        ):
            return "ask"  # never looser: a deny stays a deny
        return decision

    def _decide_unprotected(self, rel: str | None, abs_posix: str, op: FileOp) -> Decision:
        for rule in self.path_rules:
            action = _normalize(rule.action)
            # restricting rules fold case (stricter); an allow rule grants only what it spells
            if op in rule.ops and _pattern_matches(
                rule.pattern, rel, abs_posix, fold=action != "allow"
            ):
                return action
        if rel is not None:
            return "allow" if op == "read" else _normalize(self.write)
        return _normalize(self.read_outside if op == "read" else self.write_outside)

    def is_denied(self, *, rel: str | None, abs_posix: str) -> bool:
        """Whether a ``denied_paths`` pattern covers the path (case-insensitively)."""
        return any_pattern_matches(self.denied_paths, rel, abs_posix, fold=True)

    def is_protected(self, *, rel: str | None, abs_posix: str) -> bool:
        """Whether a ``protected_paths`` pattern covers the path (case-insensitively)."""
        return any_pattern_matches(self.protected_paths, rel, abs_posix, fold=True)

    @property
    def path_restricted(self) -> bool:
        """True when some path could be judged other than ``allow``."""
        return bool(
            self.denied_paths
            or self.protected_paths
            or any(_normalize(r.action) != "allow" for r in self.path_rules)
            or _normalize(self.write) != "allow"
            or _normalize(self.read_outside) != "allow"
            or _normalize(self.write_outside) != "allow"
        )

    @property
    def restricted_patterns(self) -> tuple[str, ...]:
        """Every pattern that can yield a non-``allow`` decision (denied paths first)."""
        extra = tuple(r.pattern for r in self.path_rules if _normalize(r.action) != "allow")
        return tuple(self.denied_paths) + extra

    # ------------------------------------------------------------------ commands

    def _decide_segment(self, segment: str, words: list[str]) -> tuple[Decision, bool]:
        """The segment's decision, and whether it is only ``shell_default`` (no hook or rule)."""
        if self.command_decider is not None:
            verdict = self.command_decider(segment)
            if verdict in _DECISIONS and not (self.plan_mode and verdict == "allow"):
                return _normalize(verdict), False
        for rule in self.command_rules:
            if _rule_matches(rule.pattern.split(), words):
                action = _normalize(rule.action)
                if self.plan_mode and action == "allow":
                    break  # plan mode: only the read-only table lets a command run
                return action, False
        default = _normalize(self.shell_default)
        if self.plan_mode and default == "allow":
            default = "ask"
        return default, True

    def decide_command(self, command: str) -> Decision:
        """Static judgement of a command line by its command words (paths are the session's job).

        The lexical word-prefix rules of the spec apply to each segment; in addition the
        command is parsed like the shell would, and every command it runs — behind quotes
        or backslashes (``"rm"``, ``\\rm``), a path (``/bin/rm``), a wrapper (``env``,
        ``xargs``, ``sudo``, ``nohup``...), a substitution (``$(rm ...)``, backticks) or
        a shell payload (``sh -c '...'``, ``eval``) — is judged by the same rules. The
        result is the most restrictive of all. A command word that is itself an expansion
        (``$CMD``) or that cannot be parsed is at least ``ask``.
        """
        return self.decide_command_source(command)[0]

    def decide_command_source(self, command: str) -> tuple[Decision, bool]:
        """:meth:`decide_command`, and whether every ``ask`` in it came from ``shell_default``.

        The second value is False when a command hook or rule said ``ask``/``deny`` for
        some part, or the command runs something the parse cannot name: only then may the
        session's read-only table lift the ``ask`` (a user's rules always win).
        """
        if not self.allow_shell:
            return "deny", False
        segments = split_command_segments(command)
        if not segments:
            return _normalize(self.shell_default), True
        worst: Decision = "allow"
        by_default = True

        def add(decision: Decision, default: bool) -> None:
            nonlocal worst, by_default
            worst = merge_decisions(worst, decision)
            if decision != "allow" and not default:
                by_default = False

        for seg in segments:
            add(*self._decide_segment(seg, seg.split()))
            if worst == "deny":
                return "deny", False
        # imported on first use (the guard never imports this module: no cycle)
        from lovia.workspace import command_guard

        for inv in command_guard.invocations(command):
            if inv.unknown:
                add("ask", False)
                continue
            text = " ".join(inv.words)
            add(*self._decide_segment(text, inv.words))
            if worst == "deny":
                return "deny", False
        return worst, by_default


__all__ = [
    "CommandDecider",
    "CommandRule",
    "Decision",
    "FileOp",
    "PathRule",
    "WorkspaceMode",
    "WorkspacePolicy",
    "merge_decisions",
    "split_command_segments",
]

# re-exported for the modules and tests that import them from here
_ = (_canonical_abs_pattern, _path_matches, _pattern_matches, _normalize, segment_regex)
