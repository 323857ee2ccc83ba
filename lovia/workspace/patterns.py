"""Path pattern matching for the ACL: relative, bare and absolute (``/``, ``~``) forms.

Leaf module: the policy, the command guard and the sandbox all match patterns here.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable
from fnmatch import fnmatchcase, translate
from pathlib import Path


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


def _pattern_matches(pattern: str, rel: str | None, abs_posix: str, *, fold: bool = False) -> bool:
    """Does ``pattern`` cover the resolved path? ``fold`` matches case-insensitively (deny and
    protected patterns: ``.ENV`` is ``.env`` on macOS and Windows file systems)."""
    if not pattern:
        return False
    if pattern.startswith(("/", "~")):
        canon = _canonical_abs_pattern(pattern)  # resolved as spelled, then folded
        if not canon:
            return False
        if fold:
            canon, abs_posix = canon.casefold(), abs_posix.casefold()
        return fnmatchcase(abs_posix, canon) or fnmatchcase(abs_posix, canon + "/*")
    if fold:
        pattern, abs_posix = pattern.casefold(), abs_posix.casefold()
        rel = rel.casefold() if rel is not None else None
    stripped = pattern.rstrip("/")
    if "/" in stripped:
        return rel is not None and _path_matches(rel, pattern)
    if rel is not None:
        return _path_matches(rel, pattern)
    return _path_matches(abs_posix.lstrip("/"), pattern)


def any_pattern_matches(
    patterns: tuple[str, ...], rel: str | None, abs_posix: str, *, fold: bool
) -> bool:
    """``any(_pattern_matches(p, rel, abs_posix, fold=fold) for p in patterns)``, with the
    patterns compiled into three regexes (absolute, with a path, bare) once: a walk over a
    big tree judges every entry against every denied pattern."""
    return pattern_set_matcher(patterns, fold=fold)(rel, abs_posix)


_Match = Callable[[str], "re.Match[str] | None"]
PathTest = Callable[[str | None, str], bool]
"""``test(rel, abs_posix)``: whether a pattern set covers the path."""


def pattern_set_matcher(patterns: tuple[str, ...], *, fold: bool) -> PathTest:
    """The compiled test behind :func:`any_pattern_matches` (absolute patterns resolved as
    :func:`_canonical_abs_pattern` resolves them, once per pattern set and ``$HOME``)."""
    return _set_matcher(patterns, fold, os.environ.get("HOME"))


@functools.lru_cache(maxsize=64)
def _set_matcher(patterns: tuple[str, ...], fold: bool, home: str | None) -> PathTest:
    absolute = [c for p in patterns if p.startswith(("/", "~")) if (c := _canonical_abs_pattern(p))]
    compiled = _compiled_patterns(patterns, absolute, fold)
    if compiled is None:  # a pattern fnmatch cannot compile: the plain loop raises as before

        def each(rel: str | None, abs_posix: str) -> bool:
            return any(_pattern_matches(p, rel, abs_posix, fold=fold) for p in patterns)

        return each
    abs_re, path_re, bare_re = compiled

    def test(rel: str | None, abs_posix: str) -> bool:
        if fold:
            abs_posix = abs_posix.casefold()
            rel = rel.casefold() if rel is not None else None
        if abs_re is not None and abs_re(abs_posix) is not None:
            return True
        if rel is not None:
            if path_re is not None and path_re(rel) is not None:
                return True
            segments = rel.split("/")
        else:
            segments = abs_posix.lstrip("/").split("/")
        return bare_re is not None and any(bare_re(seg) is not None for seg in segments)

    return test


def _compiled_patterns(
    patterns: tuple[str, ...], absolute: list[str], fold: bool
) -> tuple[_Match | None, _Match | None, _Match | None] | None:
    """(absolute, with a path, bare) matchers, each the union of :func:`fnmatch.translate` of
    what :func:`_pattern_matches` compares with ``fnmatchcase``."""
    abs_parts = [t for c in absolute for t in (c, c + "/*")]
    path_parts: list[str] = []
    bare_parts: list[str] = []
    for pattern in patterns:
        if not pattern or pattern.startswith(("/", "~")):
            continue
        pat = pattern.rstrip("/")
        if not pat:
            continue
        if "/" in pat:
            path_parts += [pat, pat + "/*"]
        else:
            bare_parts.append(pat)

    def union(parts: list[str]) -> _Match | None:
        if not parts:
            return None
        folded = [p.casefold() if fold else p for p in parts]
        return re.compile("|".join(f"(?:{translate(p)})" for p in folded)).match

    try:
        return union(abs_parts), union(path_parts), union(bare_parts)
    except re.error:
        return None


def name_matcher(patterns: Iterable[str], *, fold: bool) -> Callable[[str], bool]:
    """One compiled test of a name against bare patterns, exactly as ``fnmatchcase`` per pattern
    (the union of :func:`fnmatch.translate`): a mask walk tests every entry of a big tree, and
    one regex per entry is what keeps that walk complete and fast."""
    pats = [p.casefold() if fold else p for p in patterns if p]
    if not pats:
        return lambda name: False
    match = re.compile("|".join(f"(?:{translate(p)})" for p in pats)).match
    if fold:
        return lambda name: match(name.casefold()) is not None
    return lambda name: match(name) is not None


def names_matcher(patterns: Iterable[str], *, fold: bool) -> Callable[[list[str]], set[int] | None]:
    """The indexes of a folder's ``names`` that :func:`name_matcher` may find (a superset;
    None: test each). Each pattern is reduced to a literal its names must start with, end
    with or hold, tested by ``str`` methods: a walk over a big tree then runs the exact test
    on the few names that can match instead of on every entry."""
    starts: list[str] = []
    ends: list[str] = []
    within: list[str] = []
    for pattern in patterns:
        pat = pattern.casefold() if fold else pattern
        if not pat:
            continue
        lead = pat[: min((i for i in map(pat.find, "*?[") if i >= 0), default=len(pat))]
        if lead:
            starts.append(lead)
        elif "[" in pat:
            return lambda names: None
        elif tail := pat[max(pat.rfind("*"), pat.rfind("?")) + 1 :]:
            ends.append(tail)
        elif chunk := max(re.split(r"[*?]", pat), key=len):
            within.append(chunk)
        else:
            return lambda names: None  # "*": every name
    if not (starts or ends or within):
        return lambda names: set()

    # three scans of the folder's names joined by NUL, in C: a name starts with a literal
    # (NUL, then it), ends with one (the same over the reversed text), or holds one
    def alternatives(chunks: list[str]) -> str:
        return "|".join(map(re.escape, sorted(set(chunks), key=len, reverse=True)))

    head_scan = re.compile("\x00(?:" + alternatives(starts) + ")").finditer if starts else None
    back = [c[::-1] for c in ends]
    tail_scan = re.compile("\x00(?:" + alternatives(back) + ")").finditer if ends else None
    inside_scan = re.compile(alternatives(within)).finditer if within else None

    def found(names: list[str]) -> set[int]:
        joined = "\x00" + "\x00".join(names) + "\x00"
        if fold:
            joined = joined.casefold()
        hits: set[int] = set()
        if head_scan is not None:
            hits.update(joined.count("\x00", 0, m.start()) for m in head_scan(joined))
        if tail_scan is not None:
            last = len(names) - 1
            rev = joined[::-1]
            hits.update(last - rev.count("\x00", 0, m.start()) for m in tail_scan(rev))
        if inside_scan is not None:
            hits.update(joined.count("\x00", 0, m.start()) - 1 for m in inside_scan(joined))
        return hits

    return found


def pattern_prefix(pattern: str, *, fold: bool) -> str | None:
    """The literal start every path a relative (``a/b*``) or absolute pattern covers begins
    with, for the form :func:`_pattern_matches` compares (root-relative, or the resolved
    absolute path); None for a pattern that can cover nothing."""
    pat = pattern
    if pat.startswith(("/", "~")):
        canon = _canonical_abs_pattern(pat)
        if not canon:
            return None
        pat = canon
    if fold:
        pat = pat.casefold()
    cut = min((i for i in (pat.find(c) for c in "*?[") if i >= 0), default=len(pat))
    return pat[:cut]


def may_cover_below(prefix: str, folder: str) -> bool:
    """Whether a pattern whose paths all start with ``prefix`` can cover something inside
    ``folder`` (same form: root-relative with ``""`` for the root, or absolute)."""
    if not folder:
        return True
    below = folder.rstrip("/") + "/"
    return prefix.startswith(below) or below.startswith(prefix)
