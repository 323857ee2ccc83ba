"""Judging: resolve each claim against the policy, scan recursive targets, test globs.

Long because every claim kind is judged against the same policy walk and its caches; a split
(claims / recursive scans / globs) is left for later.
"""

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

from lovia.workspace.command_guard import gitrepo, readonly
from lovia.workspace.command_guard.core import Analysis, Claim, ClaimOp, CommandWalk, HistoryUse
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


def _static(policy: GuardPolicy, command: str) -> tuple[Decision, bool]:
    """The static decision, and whether only ``shell_default`` made it restrictive."""
    source = getattr(policy, "decide_command_source", None)
    if source is not None:
        decision, by_default = source(command)
        return decision, bool(by_default)
    return policy.decide_command(command), False


_SCAN_BUDGET = 20_000
# a walk the program describes (read-only judgement) only looks at names: it may go further
_WALK_BUDGET = 100_000
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


def _walk_worst(
    policy: GuardPolicy, root: Path, top: Path, op: ClaimOp, walk: CommandWalk, shown_as: str
) -> Decision:
    """The read-only judgement of a walk the program describes precisely (:class:`CommandWalk`).

    Symbolic links inside the tree are not followed (the walks that follow them have no
    ``CommandWalk``). A searcher (``rg``, ``grep -r``) reads every file it reaches: a restricted
    entry it does not skip makes it ``ask``. A lister prints names: names in allowed
    directories are fine (as with ``ls``), but an entry it prints from inside a restricted
    directory shows that directory's contents, so it is ``ask``.
    """
    if walk.max_depth == 0:
        return "allow"
    deadline = time.monotonic() + _SCAN_SECONDS
    seen = 0
    prefix = shown_as.rstrip("/")
    # (directory, how the program prints it, depth, inside a restricted directory)
    stack: list[tuple[Path, str, int, bool]] = [(top, prefix, 0, False)]
    while stack:
        d, printed_as, depth, restricted = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for entry in it:
                seen += 1
                if seen > _WALK_BUDGET or (seen % 512 == 0 and time.monotonic() > deadline):
                    return "ask"
                name = entry.name
                if walk.skip_hidden and name.startswith("."):
                    continue
                try:
                    if entry.is_symlink():
                        kind = "l"
                    elif entry.is_dir(follow_symlinks=False):
                        kind = "d"
                    elif entry.is_file(follow_symlinks=False):
                        kind = "f"
                    else:
                        kind = "o"
                except OSError:
                    return "ask"
                if kind == "d" and any(fnmatchcase(name, g) for g in walk.skip_dirs):
                    continue
                path = Path(entry.path)
                text = f"{printed_as}/{name}"
                printed, pruned = walk.shown(text, name, kind) if walk.shown else (True, False)
                descend = (
                    kind == "d"
                    and not pruned
                    and (walk.max_depth is None or depth + 1 < walk.max_depth)
                )
                if restricted:
                    if printed:
                        return "ask"
                    if descend:
                        stack.append((path, text, depth + 1, True))
                    continue
                if kind == "l":
                    continue
                decision = _judge_resolved(policy, root, path, op)
                if decision != "allow":
                    if kind != "d":
                        if walk.names_only:
                            continue  # its name, in an allowed directory
                        return "ask"
                    if not descend:
                        continue
                    if walk.names_only and walk.shown is not None:
                        stack.append((path, text, depth + 1, True))
                        continue
                    return "ask"
                if descend:
                    stack.append((path, text, depth + 1, False))
    return "allow"


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
    return _judge_analysis(policy, root, analyze(command), cwd, env)


def _restrictive(policy: GuardPolicy) -> bool:
    return (
        policy.path_restricted
        or policy.shell_default != "allow"
        or policy.command_decider is not None
        or any(r.action != "allow" for r in policy.command_rules)
    )


def _judge_analysis(
    policy: GuardPolicy,
    root: Path,
    analysis: Analysis,
    cwd: Path,
    env: Mapping[str, str] | None,
    *,
    read_only: readonly.ReadOnly | None = None,
) -> Decision:
    """Judge an analysis: uncertainty, every claim, and what history commands may print.

    With ``read_only`` (a command the read-only table vouches for) the walks of recursive
    claims are judged as the program walks (:class:`CommandWalk`), and option values are the
    table's path options instead of the generic scan's guesses.
    """
    worst: Decision = "allow"
    if analysis.uncertain and _restrictive(policy):
        worst = "ask"
    if not policy.path_restricted:
        return worst
    env = dict(env or os.environ)
    base_cache: dict[str, list[Path]] = {}

    def bases_for(bases: tuple[str, ...]) -> list[Path]:
        out: list[Path] = []
        for b in bases:
            if b not in base_cache:
                try:
                    base_cache[b] = [resolve_path(root, b, base=cwd).abs] if b else [cwd]
                except WorkspaceError:
                    base_cache[b] = []
            out.extend(base_cache[b])
        return out or [cwd]

    claims = analysis.claims
    if read_only is not None:
        claims = [c for c in claims if not c.from_option] + read_only.claims
    for claim in claims:
        for base in bases_for(claim.bases):
            d = _judge_claim(policy, root, claim, base, env, read_only=read_only is not None)
            worst = merge_decisions(worst, d)
            if worst == "deny":
                return "deny"
    for use in analysis.history:
        for base in bases_for(use.bases):
            worst = merge_decisions(worst, _judge_history(policy, root, use, base, env))
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
    restrictive wins. Beyond the spec: when the policy allows read-only commands
    (``allow_read_only_commands``, on under ``coding``), a command the read-only table
    vouches for whose only ``ask`` came from ``shell_default`` and the guard's caution
    runs without asking once every path it reads is allowed (:func:`_read_only`).
    """
    static, by_default = _static(policy, command)
    if static == "deny":
        return "deny"
    try:
        cwd_abs = resolve_path(root, os.fspath(cwd)).abs
    except WorkspaceError:
        return "deny" if getattr(policy, "plan_mode", False) else merge_decisions(static, "ask")
    cwd_decision = _judge_resolved(policy, root, cwd_abs, "read")
    decisions: list[Decision] = [static, cwd_decision]
    for op, text in extract_path_claims(command):
        try:
            claimed = resolve_path(root, text, base=cwd_abs).abs
        except WorkspaceError:
            decisions.append("ask")
            continue
        decisions.append(_judge_resolved(policy, root, claimed, op))
    if "deny" in decisions:
        return "deny"
    analysis = analyze(command)
    decisions.append(_judge_analysis(policy, root, analysis, cwd_abs, env))
    decision = merge_decisions(*decisions)
    if (
        decision == "ask"
        and by_default
        and cwd_decision == "allow"
        and getattr(policy, "allow_read_only_commands", False)
        and _read_only(policy, root, command, analysis, cwd_abs, env) == "allow"
    ):
        return "allow"
    if decision == "ask" and getattr(policy, "plan_mode", False):
        return "deny"  # plan mode never asks: only what runs unasked may run
    return decision


def _read_only(
    policy: GuardPolicy,
    root: Path,
    command: str,
    analysis: Analysis,
    cwd: Path,
    env: Mapping[str, str] | None,
) -> Decision:
    """``allow`` when ``command`` is read-only and reads only allowed paths, else ``ask``.

    The lexical claims are not used here: the table knows which words are paths (an
    ``echo /etc/x`` reads nothing); a lexical ``deny`` has already been returned.
    """
    if analysis.uncertain:
        return "ask"
    env = dict(env or os.environ)
    verdict = readonly.classify(command, env=env, root=root)
    if isinstance(verdict, str):
        return "ask"
    if verdict.git_dirs and readonly.git_problem(verdict.git_dirs, cwd, env, root) is not None:
        return "ask"
    return _judge_analysis(policy, root, analysis, cwd, env, read_only=verdict)


def read_only_reason(
    policy: GuardPolicy,
    root: Path,
    command: str,
    cwd: str | Path = ".",
    *,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """Why ``command`` is not run as read-only (None when it is); for tests and tools."""
    try:
        cwd_abs = resolve_path(root, os.fspath(cwd)).abs
    except WorkspaceError:
        return "the working directory cannot be resolved"
    env = dict(env or os.environ)
    verdict = readonly.classify(command, env=env, root=root)
    if isinstance(verdict, str):
        return verdict
    analysis = analyze(command)
    if analysis.uncertain:
        return f"uncertain: {analysis.uncertain[0]}"
    if verdict.git_dirs:
        problem = readonly.git_problem(verdict.git_dirs, cwd_abs, env, root)
        if problem is not None:
            return problem
    if _judge_resolved(policy, root, cwd_abs, "read") != "allow":
        return "the working directory is not readable without asking"
    if _judge_analysis(policy, root, analysis, cwd_abs, env, read_only=verdict) != "allow":
        return "a path it reads is not allowed without asking"
    return None


# ----- history commands


_history_judged: dict[tuple[object, ...], tuple[tuple[str, Decision], ...]] = {}


def _restricted_history(
    policy: GuardPolicy, root: Path, repo: gitrepo.Repo, paths: frozenset[str]
) -> tuple[tuple[str, Decision], ...]:
    """The history's paths (absolute) that the policy does not allow reading."""
    key = (
        tuple(policy.restricted_patterns),
        getattr(policy, "read_outside", None),
        getattr(policy, "path_rules", None),
        root,
        repo.top,
        paths,
    )
    cached = _history_judged.get(key)
    if cached is not None:
        return cached
    top = repo.top
    out: list[tuple[str, Decision]] = []
    # ``relative_to_root`` on strings (a history holds every path of the tree: pathlib's
    # parsing was most of the time at 150,000 paths); both are normalised and absolute
    root_s = root.as_posix()
    prefix = root_s.rstrip("/") + "/"
    for p in paths:
        absolute = os.path.normpath(os.path.join(top, p))
        if absolute == root_s:
            rel: str | None = "."
        elif absolute.startswith(prefix):
            rel = absolute[len(prefix) :]
        else:
            rel = None
        d = policy.decide_path(rel=rel, abs_posix=absolute, op="read")
        if d != "allow":
            out.append((absolute, d))
    result = tuple(sorted(out))
    if len(_history_judged) > 32:
        _history_judged.clear()
    _history_judged[key] = result
    return result


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _judge_history(
    policy: GuardPolicy, root: Path, use: HistoryUse, base: Path, env: Mapping[str, str]
) -> Decision:
    """What a history command may print, judged against every path the repository holds.

    A path it names in a revision (``HEAD:.env``) is judged like a read of that path;
    any restricted path in the history that the command's pathspecs do not exclude makes
    it ``ask``. No git outside the workspace, another repository, a history over budget:
    ``ask``. Outside a repository git prints nothing: ``allow``.
    """
    repo = gitrepo.find_repo(base)
    top = repo.top if repo is not None else base
    worst: Decision = "allow"
    for p in use.paths:
        relative = p.startswith(("./", "../")) or p in (".", "..")
        absolute = os.path.normpath(os.path.join(base if relative else top, p))
        d = policy.decide_path(
            rel=relative_to_root(root, Path(absolute)), abs_posix=absolute, op="read"
        )
        worst = merge_decisions(worst, d)
    if worst == "deny":
        return "deny"
    if use.elsewhere or gitrepo.unsafe_git_env(env) is not None:
        return "ask"
    if repo is None:
        return worst
    git = gitrepo.git_program(env.get("PATH"), root)
    if git is None:
        return "ask"
    index_only = use.index_only and all(
        os.path.lexists(os.path.join(base, s)) for s in use.maybe_paths
    )
    if index_only:
        paths = gitrepo.index_paths(repo, git, env.get("PATH"))
    else:
        paths = gitrepo.history_paths(repo, git, env.get("PATH"))
    if paths is None:
        return "ask"
    restricted = _restricted_history(policy, root, repo, paths)
    if not restricted:
        return worst
    named = [
        os.path.normpath(os.path.join(base if p.startswith(("./", "../")) else repo.top, p))
        for p in use.paths
    ]
    scope: list[str] | None = None
    if use.any_object:
        scope = None
    elif use.only_paths:
        scope = named
    else:
        specs = [os.path.normpath(os.path.join(base, s)) for s in use.pathspecs or ()]
        specs += [
            os.path.normpath(os.path.join(base, s))
            for s in use.maybe_paths
            if not s.startswith("-") and os.path.lexists(os.path.join(base, s))
        ]
        scope = specs or None
    for absolute, _d in restricted:
        if scope is None or any(_under(absolute, s) for s in scope):
            return merge_decisions(worst, "ask")
    return worst


def _judge_claim(
    policy: GuardPolicy,
    root: Path,
    claim: Claim,
    base: Path,
    env: Mapping[str, str],
    *,
    read_only: bool = False,
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
                if read_only and claim.walk is not None:
                    sub = _walk_worst(policy, root, resolved.abs, claim.op, claim.walk, text)
                else:
                    sub = _subtree_worst(policy, root, resolved.abs, claim.op)
                if not claim.destructive and sub == "deny":
                    sub = "ask"
                worst = merge_decisions(worst, sub)
    if claim.glob is not None:
        worst = merge_decisions(worst, _judge_glob(policy, root, claim, base, read_only=read_only))
    return worst


def _judge_glob(
    policy: GuardPolicy, root: Path, claim: Claim, base: Path, *, read_only: bool = False
) -> Decision:
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
            op=claim.op,
            text=m,
            recursive=claim.recursive,
            destructive=claim.destructive,
            walk=claim.walk,
        )
        worst = merge_decisions(
            worst, _judge_claim(policy, root, sub_claim, base, {}, read_only=read_only)
        )
        if worst == "deny":
            break
    return worst
