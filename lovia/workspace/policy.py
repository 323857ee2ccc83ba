"""One allow/ask/deny ACL for paths and shell commands.

``decide_path`` judges a *resolved* path (the caller resolves symlinks first, see
:mod:`lovia.workspace.paths`); ``decide_command`` judges a command line by its
command words. The session (:class:`~lovia.workspace.local.LocalWorkspaceSession`)
merges both with the paths a command mentions.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal, TypeAlias

Decision: TypeAlias = Literal["allow", "ask", "deny"]
FileOp: TypeAlias = Literal["read", "write"]
WorkspaceMode: TypeAlias = Literal["readonly", "coding", "trusted"]
CommandDecider: TypeAlias = Callable[[str], "Decision | None"]

_SEVERITY: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}
_DECISIONS: tuple[Decision, ...] = ("allow", "ask", "deny")


def _normalize(decision: Any) -> Decision:
    """Anything that is not a valid decision fails closed to ``deny``."""
    if decision == "allow":
        return "allow"
    if decision == "ask":
        return "ask"
    return "deny"


def merge_decisions(*decisions: Decision) -> Decision:
    """The most restrictive decision (allow < ask < deny); ``allow`` for no arguments."""
    worst: Decision = "allow"
    for d in decisions:
        nd = _normalize(d)
        if _SEVERITY[nd] > _SEVERITY[worst]:
            worst = nd
            if worst == "deny":
                break
    return worst


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


# --------------------------------------------------------------------------- patterns


def segment_regex(seg: str) -> str:
    """Regex for one ``fnmatch`` segment pattern whose wildcards never cross ``/``.

    Classes follow :mod:`fnmatch` (``[!x]`` negates, a leading ``^`` is literal).
    """
    out: list[str] = []
    i = 0
    n = len(seg)
    while i < n:
        c = seg[i]
        i += 1
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i
            if j < n and seg[j] == "!":
                j += 1
            if j < n and seg[j] == "]":
                j += 1
            while j < n and seg[j] != "]":
                j += 1
            if j >= n:
                out.append("\\[")
                continue
            body = re.sub(r"([\[&~|])", r"\\\1", seg[i:j].replace("\\", "\\\\"))
            i = j + 1
            if body.startswith("!"):
                body = "^/" + body[1:]
            elif body.startswith("^"):
                body = "\\" + body
            out.append(f"[{body}]")
        else:
            out.append(re.escape(c))
    return "".join(out)


@functools.lru_cache(maxsize=4096)
def _segment_prefilter(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(r"(?:^|/)(?:" + segment_regex(pattern) + r")(?:/|$)")
    except re.error:  # odd classes (reversed ranges...): no prefilter, exact test only
        return None


def _path_matches(rel: str, pattern: str) -> bool:
    """Match a root-relative POSIX path against a relative or bare pattern."""
    pat = pattern.rstrip("/")
    if not pat:
        return False
    if "/" in pat:
        return fnmatchcase(rel, pat) or fnmatchcase(rel, pat + "/*")
    # one regex over the whole path first (a superset); the exact test only on a hit
    prefilter = _segment_prefilter(pat)
    if prefilter is not None and prefilter.search(rel) is None:
        return False
    return any(fnmatchcase(seg, pat) for seg in rel.split("/"))


@functools.lru_cache(maxsize=1024)
def _canonical_abs_pattern(pattern: str) -> str | None:
    """``~``-expand and resolve the existing prefix of an absolute pattern (cached)."""
    pat = pattern
    if pat.startswith("~"):
        expanded = os.path.expanduser(pat)
        if expanded.startswith("~"):
            return None
        pat = expanded
    try:
        canon = str(Path(pat).resolve())
    except (OSError, RuntimeError, ValueError):
        canon = os.path.normpath(pat)
    canon = canon.rstrip("/")
    return canon or None


def _pattern_matches(pattern: str, rel: str | None, abs_posix: str) -> bool:
    if not pattern:
        return False
    if pattern.startswith(("/", "~")):
        canon = _canonical_abs_pattern(pattern)
        if not canon:
            return False
        return fnmatchcase(abs_posix, canon) or fnmatchcase(abs_posix, canon + "/*")
    stripped = pattern.rstrip("/")
    if "/" in stripped:
        return rel is not None and _path_matches(rel, pattern)
    if rel is not None:
        return _path_matches(rel, pattern)
    return _path_matches(abs_posix.lstrip("/"), pattern)


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

    def __post_init__(self) -> None:
        for name in ("path_rules", "denied_paths", "command_rules"):
            value = getattr(self, name)
            if isinstance(value, str):
                value = (value,)
            object.__setattr__(self, name, tuple(value))
        if self.allow_shell is False and self.shell_default != "deny":
            object.__setattr__(self, "shell_default", "deny")

    # ------------------------------------------------------------------ presets

    @classmethod
    def readonly(
        cls, *, denied_paths: Iterable[str] = (), path_rules: Iterable[PathRule] = ()
    ) -> WorkspacePolicy:
        return cls(
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
    ) -> WorkspacePolicy:
        return cls(
            write="allow",
            read_outside="ask",
            write_outside="deny",
            allow_shell=True,
            shell_default="ask",
            command_rules=tuple(command_rules),
            denied_paths=tuple(denied_paths),
            path_rules=tuple(path_rules),
            command_decider=command_decider,
        )

    @classmethod
    def trusted(
        cls,
        *,
        command_rules: Iterable[CommandRule] = (),
        denied_paths: Iterable[str] = (),
        path_rules: Iterable[PathRule] = (),
        command_decider: CommandDecider | None = None,
    ) -> WorkspacePolicy:
        return cls(
            write="allow",
            read_outside="allow",
            write_outside="ask",
            allow_shell=True,
            shell_default="allow",
            command_rules=tuple(command_rules),
            denied_paths=tuple(denied_paths),
            path_rules=tuple(path_rules),
            command_decider=command_decider,
        )

    # ------------------------------------------------------------------ paths

    def decide_path(self, *, rel: str | None, abs_posix: str, op: FileOp) -> Decision:
        """Judge a resolved path: denied patterns, then the first matching rule, then defaults."""
        for pattern in self.denied_paths:
            if _pattern_matches(pattern, rel, abs_posix):
                return "deny"
        for rule in self.path_rules:
            if op in rule.ops and _pattern_matches(rule.pattern, rel, abs_posix):
                return _normalize(rule.action)
        if rel is not None:
            return "allow" if op == "read" else _normalize(self.write)
        return _normalize(self.read_outside if op == "read" else self.write_outside)

    @property
    def path_restricted(self) -> bool:
        """True when some path could be judged other than ``allow``."""
        return bool(
            self.denied_paths
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

    def _decide_segment(self, segment: str, words: list[str]) -> Decision:
        if self.command_decider is not None:
            verdict = self.command_decider(segment)
            if verdict in _DECISIONS:
                return _normalize(verdict)
        for rule in self.command_rules:
            if _rule_matches(rule.pattern.split(), words):
                return _normalize(rule.action)
        return _normalize(self.shell_default)

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
        if not self.allow_shell:
            return "deny"
        segments = split_command_segments(command)
        if not segments:
            return _normalize(self.shell_default)
        worst: Decision = "allow"
        for seg in segments:
            worst = merge_decisions(worst, self._decide_segment(seg, seg.split()))
            if worst == "deny":
                return "deny"
        from lovia.workspace import command_guard

        for inv in command_guard.invocations(command):
            if inv.unknown:
                worst = merge_decisions(worst, "ask")
                continue
            text = " ".join(inv.words)
            worst = merge_decisions(worst, self._decide_segment(text, inv.words))
            if worst == "deny":
                return "deny"
        return worst


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
