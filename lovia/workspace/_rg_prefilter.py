"""ripgrep as ``grep_files``'s prefilter over a big tree.

Opening and judging every file of a 150,000-file tree in Python costs seconds; ``rg`` walks and
reads it natively. It is asked only which files hold a literal that every match of the
agent's pattern must hold (so it can only list too many, never too few), and it never opens a
denied file: the denied patterns become its exclude globs. The session then judges and searches
just those files, in the order its own walk would have met them. Whatever this module cannot
translate exactly answers None, and the session walks the tree itself as before.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from lovia.workspace.patterns import _canonical_abs_pattern, may_cover_below, pattern_prefix

MIN_NEEDLE = 3
"""A shorter literal lists most files of a tree: the session's own walk is cheaper then."""

_WILDCARDS = "*?["
_GLOB_SPECIAL = "[]{}\\"
# characters ``str.splitlines`` breaks at: no line the session searches holds one
_LINE_BREAKS = frozenset("\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
# non-ASCII characters ``re.IGNORECASE`` takes for an ASCII one (tests/lovia/workspace checks it)
_ASCII_FOLD_EXTRA = "\u0130\u0131\u017f\u212a"


_NON_ASCII_GLOB = "!*[\u0080-\U0010ffff]*"
"""Names with a non-ASCII character are left to the session: a denied pattern compares
``casefold``-ed names (``ß`` is ``ss``), which a case-insensitive glob matches exactly only for
ASCII names."""
_NON_ASCII_NAME = b"*[\x80-\xff]*"  # find's test for the same names (bytes, in the C locale)


@functools.cache
def _fold_class(ch: str) -> str:
    """Every character ``re.IGNORECASE`` takes for the ASCII ``ch``."""
    pool = {ch, ch.lower(), ch.upper(), *_ASCII_FOLD_EXTRA}
    same = sorted(c for c in pool if re.fullmatch(re.escape(ch), c, re.IGNORECASE))
    return "".join(same)


def _hex(ch: str) -> str:
    return f"\\x{{{ord(ch):X}}}"


def needle(regex: re.Pattern[str]) -> str | None:
    """An rg regex for the longest literal every match of ``regex`` holds, or None.

    Literals next to each other in the pattern's top-level sequence (through plain groups;
    anchors and lookarounds consume nothing, so they do not split one) form a run. Under
    ``IGNORECASE`` only ASCII characters take part, each as the class of every character
    Python's ``re`` takes for it; rg then matches case-sensitively.
    """
    parser: Any = importlib.import_module("re._parser")
    try:
        parsed = parser.parse(regex.pattern, regex.flags)
    except Exception:  # what re compiled its parser reads; if not, no needle
        return None
    fold = bool(parsed.state.flags & re.IGNORECASE)
    runs: list[list[str]] = [[]]

    def flush() -> None:
        if runs[-1]:
            runs.append([])

    def walk(items: Any) -> None:
        for op, av in items:
            name = str(op)
            if name == "LITERAL":
                ch = chr(av)
                if ch in _LINE_BREAKS or 0xD800 <= av <= 0xDFFF or (fold and not ch.isascii()):
                    flush()
                elif fold:
                    same = _fold_class(ch)
                    runs[-1].append(_hex(ch) if len(same) == 1 else f"[{''.join(map(_hex, same))}]")
                else:
                    runs[-1].append(_hex(ch))
            elif name in ("AT", "ASSERT", "ASSERT_NOT"):
                continue  # zero-width: the text on both sides is one piece of the match
            elif name == "SUBPATTERN" and not av[1] and not av[2]:
                walk(av[3])
            else:
                flush()

    walk(parsed)
    best = max(runs, key=len)
    return "".join(best) if len(best) >= MIN_NEEDLE else None


def exclude_globs(denied: tuple[str, ...], top_abs: str, top_rel: str) -> list[str] | None:
    """rg ``--iglob`` excludes under the search root ``top`` that cover every path a denied
    pattern covers (as :func:`lovia.workspace.patterns._pattern_matches` with ``fold``), or
    None when a pattern cannot be spelled as one."""
    globs: list[str] = []
    top_f = top_abs.rstrip("/").casefold()
    rel_f = "" if top_rel in (".", "") else top_rel.casefold() + "/"
    for pattern in denied:
        if not pattern:
            continue
        if pattern.startswith(("/", "~")):
            canon = _canonical_abs_pattern(pattern)
            prefix = pattern_prefix(pattern, fold=True)
            if not canon or prefix is None or not may_cover_below(prefix, top_f):
                continue  # covers nothing under the search root
            folded = canon.casefold()
            if any(c in folded for c in _WILDCARDS + _GLOB_SPECIAL):
                return None
            if not folded.startswith(top_f + "/"):
                return None  # it covers the root itself: the session judges
            globs.append("!/" + folded[len(top_f) + 1 :])
            continue
        folded = pattern.rstrip("/").casefold()
        if not folded:
            continue
        if folded.startswith("!") or any(c in folded for c in _GLOB_SPECIAL):
            return None
        if "/" in folded:
            if any(c in folded for c in _WILDCARDS):
                return None  # fnmatch's ``*`` crosses ``/``, a glob's does not
            if rel_f and not folded.startswith(rel_f):
                if rel_f.startswith(folded + "/"):
                    return None
                continue
            globs.append("!/" + folded[len(rel_f) :])
            continue
        globs.append("!" + folded)
    globs.append(_NON_ASCII_GLOB)
    return globs


def _lines(data: bytes) -> list[str]:
    return [os.fsdecode(p).removeprefix("./") for p in data.split(b"\0") if p]


def candidates(
    top: Path,
    pattern: str,
    globs: list[str],
    *,
    include_hidden: bool,
) -> tuple[list[str], list[str]] | None:
    """``(files rg found the needle in, paths left to the session)``, both relative to
    ``top``; None when ``rg`` or ``find`` is missing or failed.

    The second list, from ``find``, holds the symbolic links (rg follows none) and every name
    with a non-ASCII byte (rg excluded those; a folder is listed, not entered): the session
    judges and walks them itself. rg reads files of any size (asking each file's size costs
    more than the rare big one); the session skips those over its cap when it reads.
    """
    rg, find = shutil.which("rg"), shutil.which("find")
    if rg is None or find is None:
        return None
    rg_cmd = [rg, "--no-config", "--no-ignore", "--no-messages", "--files-with-matches"]
    rg_cmd += ["--null", "--text", "--encoding", "none", "--case-sensitive"]
    if include_hidden:
        rg_cmd.append("--hidden")
    for glob in globs:
        rg_cmd += ["--iglob", glob]
    rg_cmd += ["--regexp", pattern, "--", "."]
    find_cmd: list[str | bytes] = [find, ".", "-mindepth", "1"]
    if not include_hidden:
        find_cmd += ["(", "-name", ".*", "-prune", ")", "-o"]
    find_cmd += ["(", "-name", _NON_ASCII_NAME, "-prune", "-print0", ")"]
    find_cmd += ["-o", "(", "-type", "l", "-print0", ")"]
    env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C"}
    spawn: dict[str, Any] = {
        "cwd": top,
        "env": env,
        "stdin": subprocess.DEVNULL,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.DEVNULL,
    }
    try:
        with (
            subprocess.Popen(rg_cmd, **spawn) as rg_proc,
            subprocess.Popen(find_cmd, **spawn) as find_proc,
        ):
            found, _ = rg_proc.communicate()
            odd, _ = find_proc.communicate()
    except OSError:
        return None
    # rg: 0 found, 1 none, 2 some file unreadable (the walk skips those too); find: 1 the same
    if rg_proc.returncode not in (0, 1, 2) or find_proc.returncode not in (0, 1):
        return None
    if rg_proc.returncode == 2 and not found:
        return None  # no way to tell "unreadable files" from "rg refused": walk instead
    return _lines(found), _lines(odd)


def walk_key(rel: str) -> tuple[tuple[int, str], ...]:
    """Sort key of a path below the search root in the session walk's order: a folder's files
    by name, then its subfolders by name, depth first."""
    parts = rel.split("/")
    return (*((1, p) for p in parts[:-1]), (0, parts[-1]))
