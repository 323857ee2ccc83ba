"""Judging: resolve each claim against the policy, scan recursive targets, test globs."""

from __future__ import annotations

import contextlib
import glob as _glob
import os
import re
import time
from collections.abc import Mapping
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Protocol

from lovia.workspace.command_guard.core import Claim, ClaimOp
from lovia.workspace.command_guard.dispatch import analyze
from lovia.workspace.command_guard.lexical import extract_path_claims
from lovia.workspace.decision import CommandDecider, Decision, FileOp, merge_decisions
from lovia.workspace.errors import WorkspaceError
from lovia.workspace.paths import relative_to_root, resolve_abs, resolve_path
from lovia.workspace.patterns import _canonical_abs_pattern


class _Rule(Protocol):
    @property
    def action(self) -> Decision: ...


class GuardPolicy(Protocol):
    """What the guard reads from a policy (:class:`~lovia.workspace.policy.GuardPolicy`).

    A protocol, so the guard never imports the policy module (the policy imports the guard).
    """

    @property
    def path_restricted(self) -> bool: ...
    @property
    def restricted_patterns(self) -> tuple[str, ...]: ...
    @property
    def shell_default(self) -> Decision: ...
    @property
    def command_decider(self) -> CommandDecider | None: ...
    @property
    def command_rules(self) -> tuple[_Rule, ...]: ...
    def decide_path(self, *, rel: str | None, abs_posix: str, op: FileOp) -> Decision: ...
    def decide_command(self, command: str) -> Decision: ...


_SCAN_BUDGET = 20_000
_SCAN_SECONDS = 0.5
_GLOB_MATCH_CAP = 2_000


def _combine_either(read: Decision, write: Decision) -> Decision:
    if read == "deny":
        return "deny"
    if write == "allow":
        return read
    return merge_decisions(read, "ask")


def _judge_resolved(policy: GuardPolicy, root: Path, abs_path: Path, op: ClaimOp) -> Decision:
    rel = relative_to_root(root, abs_path)
    posix = abs_path.as_posix()
    if op == "either":
        return _combine_either(
            policy.decide_path(rel=rel, abs_posix=posix, op="read"),
            policy.decide_path(rel=rel, abs_posix=posix, op="write"),
        )
    return policy.decide_path(rel=rel, abs_posix=posix, op=op)


def _subtree_worst(policy: GuardPolicy, root: Path, top: Path, op: ClaimOp) -> Decision:
    """Worst decision for anything below directory ``top`` (bounded walk; over budget → ask)."""
    now = time.monotonic()
    worst: Decision = "allow"
    seen = 0
    deadline = now + _SCAN_SECONDS
    stack = [top]
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for entry in it:
                seen += 1
                if seen > _SCAN_BUDGET or (seen % 512 == 0 and time.monotonic() > deadline):
                    worst = merge_decisions(worst, "ask")
                    stack.clear()
                    break
                p = Path(entry.path)
                try:
                    is_link = entry.is_symlink()
                    target = resolve_abs(p) if is_link else p
                except (OSError, WorkspaceError):
                    worst = merge_decisions(worst, "ask")
                    continue
                d_entry = _judge_resolved(policy, root, target, op)
                if d_entry != "allow":
                    worst = merge_decisions(worst, d_entry)
                    if worst == "deny":
                        stack.clear()
                        break
                    continue
                with contextlib.suppress(OSError):
                    if not is_link and entry.is_dir(follow_symlinks=False):
                        stack.append(p)
    return worst


# ----- glob "could match" test


def _literal_prefix(pat: str) -> str:
    out = []
    for ch in pat:
        if ch in "*?[]":
            break
        out.append(ch)
    return "".join(out)


def _literal_suffix(pat: str) -> str:
    out = []
    for ch in reversed(pat):
        if ch in "*?[]":
            break
        out.append(ch)
    return "".join(reversed(out))


def _has_magic(pat: str) -> bool:
    return any(c in pat for c in "*?[")


def _shell_match(name: str, pat: str) -> bool:
    if name.startswith(".") and pat[:1] in ("*", "?"):
        return False
    return fnmatchcase(name, pat)


def _segment_could_match(glob_seg: str, pat_seg: str) -> bool:
    """Could a file name matched by shell glob ``glob_seg`` also match ``pat_seg``?"""
    if not _has_magic(glob_seg):
        return fnmatchcase(glob_seg, pat_seg)
    if not _has_magic(pat_seg):
        return _shell_match(pat_seg, glob_seg)
    gp, pp = _literal_prefix(glob_seg), _literal_prefix(pat_seg)
    if not (gp.startswith(pp) or pp.startswith(gp)):
        return False
    gs, ps = _literal_suffix(glob_seg), _literal_suffix(pat_seg)
    if not (gs.endswith(ps) or ps.endswith(gs)):
        return False
    # the shell never matches a leading '.' with '*' or '?' (a bracket may, in some shells)
    return not (pp.startswith(".") and glob_seg[:1] in ("*", "?"))


def _segments_could_match(glob_segs: list[str], pat_segs: list[str]) -> bool:
    for g, p in zip(glob_segs, pat_segs, strict=False):
        if "*" in p and _has_magic(g):
            return True  # a pattern star spans '/' (fnmatch); give up precision
        if not _segment_could_match(g, p):
            return "*" in p
    return True


def _glob_could_hit(
    policy: GuardPolicy, root: Path, glob_abs_segs: list[str], rel_segs: list[str] | None
) -> bool:
    """Could the glob match a path some restricted pattern applies to?"""
    magic = [s for s in (rel_segs if rel_segs is not None else glob_abs_segs) if _has_magic(s)]
    for pattern in policy.restricted_patterns:
        if pattern.startswith(("/", "~")):
            canon = _canonical_abs_pattern(pattern)
            if canon and _segments_could_match(glob_abs_segs, canon.strip("/").split("/")):
                return True
            continue
        stripped = pattern.rstrip("/")
        if not stripped:
            continue
        if "/" in stripped:
            if rel_segs is not None and _segments_could_match(rel_segs, stripped.split("/")):
                return True
            continue
        if any(_segment_could_match(s, stripped) for s in magic):
            return True
    return False


def _expand_user(text: str) -> str:
    if text.startswith("~"):
        try:
            return str(Path(text).expanduser())
        except RuntimeError:
            return text
    return text


def _var_expand(text: str, env: Mapping[str, str], cwd: Path) -> str | None:
    if "$" not in text:
        return None
    names = dict(env)
    names.setdefault("PWD", str(cwd))

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return names.get(name, m.group(0))

    out = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)", sub, text)
    return out if out != text else None


def judge_command(
    policy: GuardPolicy,
    root: Path,
    command: str,
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
) -> Decision:
    """The hardened path judgement of ``command`` run in ``cwd`` (static rules excluded)."""
    analysis = analyze(command)
    worst: Decision = "allow"
    if analysis.uncertain and (
        policy.path_restricted
        or policy.shell_default != "allow"
        or policy.command_decider is not None
        or any(r.action != "allow" for r in policy.command_rules)
    ):
        worst = "ask"
    if not policy.path_restricted:
        return worst
    env = dict(env or os.environ)
    base_cache: dict[str, list[Path]] = {}

    def bases_for(claim: Claim) -> list[Path]:
        out: list[Path] = []
        for b in claim.bases:
            if b not in base_cache:
                try:
                    base_cache[b] = [resolve_path(root, b, base=cwd).abs] if b else [cwd]
                except WorkspaceError:
                    base_cache[b] = []
            out.extend(base_cache[b])
        return out or [cwd]

    for claim in analysis.claims:
        for base in bases_for(claim):
            worst = merge_decisions(worst, _judge_claim(policy, root, claim, base, env))
            if worst == "deny":
                return "deny"
    return worst


def decide_command(
    policy: GuardPolicy,
    root: Path,
    command: str,
    cwd: str | Path = ".",
    *,
    env: Mapping[str, str] | None = None,
) -> Decision:
    """The full decision for running ``command`` in ``cwd``: what the session enforces.

    Static command rules (never loosened), then the read decision for ``cwd``, the
    spec's lexical claims, and the hardened analysis (:func:`judge_command`); the most
    restrictive wins.
    """
    static = policy.decide_command(command)
    if static == "deny":
        return "deny"
    try:
        cwd_abs = resolve_path(root, os.fspath(cwd)).abs
    except WorkspaceError:
        return merge_decisions(static, "ask")
    decisions: list[Decision] = [static, _judge_resolved(policy, root, cwd_abs, "read")]
    for op, text in extract_path_claims(command):
        try:
            claimed = resolve_path(root, text, base=cwd_abs).abs
        except WorkspaceError:
            decisions.append("ask")
            continue
        decisions.append(_judge_resolved(policy, root, claimed, op))
    if "deny" in decisions:
        return "deny"
    decisions.append(judge_command(policy, root, command, cwd_abs, env=env))
    return merge_decisions(*decisions)


def _judge_claim(
    policy: GuardPolicy, root: Path, claim: Claim, base: Path, env: Mapping[str, str]
) -> Decision:
    texts = [claim.text]
    expanded = _var_expand(claim.text, env, base)
    if expanded is not None:
        texts.append(expanded)
    worst: Decision = "allow"
    for text in texts:
        try:
            resolved = resolve_path(root, text, base=base)
        except WorkspaceError:
            worst = merge_decisions(worst, "ask")
            continue
        d = _judge_resolved(policy, root, resolved.abs, claim.op)
        if claim.bare and d == "deny" and not os.path.lexists(base / _expand_user(text)):
            d = "ask"  # a bare word that names nothing on disk may not be a path at all
        worst = merge_decisions(worst, d)
        if claim.recursive and d != "deny":
            try:
                is_dir = resolved.abs.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                sub = _subtree_worst(policy, root, resolved.abs, claim.op)
                if not claim.destructive and sub == "deny":
                    sub = "ask"
                worst = merge_decisions(worst, sub)
    if claim.glob is not None:
        worst = merge_decisions(worst, _judge_glob(policy, root, claim, base))
    return worst


def _judge_glob(policy: GuardPolicy, root: Path, claim: Claim, base: Path) -> Decision:
    pattern = _expand_user(claim.glob or "")
    if "\x00" in pattern:
        return "ask"
    absolute = pattern if pattern.startswith("/") else os.path.join(str(base), pattern)
    segs = [s for s in absolute.split("/") if s not in ("", ".")]
    # resolve the literal prefix (symlinks followed), keep the wildcard tail
    idx = next((i for i, s in enumerate(segs) if _has_magic(s)), len(segs))
    try:
        prefix = resolve_abs("/" + "/".join(segs[:idx]))
    except WorkspaceError:
        return "ask"
    tail = segs[idx:]
    if ".." in tail:
        return "ask"
    glob_abs_segs = [s for s in prefix.as_posix().split("/") if s] + tail
    rel = relative_to_root(root, prefix)
    rel_segs: list[str] | None = None
    if rel is not None:
        rel_segs = ([] if rel == "." else rel.split("/")) + tail
    worst: Decision = "allow"
    # anything the glob can reach is at least as restricted as its directory's default
    probe = prefix.joinpath(*["x" if _has_magic(s) else s for s in tail]) if tail else prefix
    worst = merge_decisions(worst, _judge_resolved(policy, root, probe, claim.op))
    if _glob_could_hit(policy, root, glob_abs_segs, rel_segs):
        worst = merge_decisions(worst, "ask")
    try:
        matches = _glob.glob(pattern, root_dir=str(base), include_hidden=False)
    except (OSError, ValueError, RecursionError):
        return merge_decisions(worst, "ask")
    if len(matches) > _GLOB_MATCH_CAP:
        worst = merge_decisions(worst, "ask")
        matches = matches[:_GLOB_MATCH_CAP]
    for m in matches:
        sub_claim = Claim(
            op=claim.op, text=m, recursive=claim.recursive, destructive=claim.destructive
        )
        worst = merge_decisions(worst, _judge_claim(policy, root, sub_claim, base, {}))
        if worst == "deny":
            break
    return worst
