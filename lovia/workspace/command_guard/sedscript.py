"""A small parser for sed scripts: does a script only print, delete and substitute?

Used by the read-only table (a ``sed -n '1,20p' f`` only reads) and by the guard, which
treats ``r``/``w``/``e`` commands and ``s///w``/``s///e`` flags as reading, writing or
running something it cannot see.
"""

from __future__ import annotations

from typing import Literal

Problem = Literal["effect", "unknown"]

_SED_SIMPLE = frozenset("pdqQ=lnNPDgGhHxz")


def sed_script_problem(script: str) -> tuple[Problem, str] | None:
    """None when a sed script only prints, deletes, quits or substitutes.

    Otherwise ``("effect", why)`` for a command that reads or writes a file or runs one
    (``r R w W e``, ``s///w``, ``s///e``), ``("unknown", why)`` for anything else this
    small parser does not model (text commands, labels...).
    """
    s = script
    i = 0
    n = len(s)

    def skip_ws(j: int) -> int:
        while j < n and s[j] in " \t":
            j += 1
        return j

    def delimited(j: int, delim: str) -> int:
        """Index after the closing ``delim`` of a regex or replacement starting at ``j``."""
        while j < n:
            c = s[j]
            if c == "\\":
                j += 2
                continue
            if c == "\n":
                raise ValueError("newline inside an expression")
            if c == delim:
                return j + 1
            j += 1
        raise ValueError("unterminated expression")

    def address(j: int) -> int:
        if j < n and s[j].isdigit():
            while j < n and (s[j].isdigit() or s[j] == "~"):
                j += 1
            return j
        if j < n and s[j] == "$":
            return j + 1
        if j < n and s[j] in "/\\":
            if s[j] == "\\":
                if j + 1 >= n:
                    raise ValueError("bad address")
                delim = s[j + 1]
                j = delimited(j + 2, delim)
            else:
                j = delimited(j + 1, "/")
            while j < n and s[j] in "IM":
                j += 1
        return j

    try:
        depth = 0
        while i < n:
            i = skip_ws(i)
            if i >= n:
                break
            if s[i] in ";\n":
                i += 1
                continue
            if s[i] == "}":
                depth -= 1
                if depth < 0:
                    return "unknown", "unbalanced braces"
                i += 1
                continue
            i = address(i)
            if i < n and s[i] == ",":
                i = address(skip_ws(i + 1))
                if i < n and s[i] == "+":
                    i += 1
                    while i < n and s[i].isdigit():
                        i += 1
            i = skip_ws(i)
            if i < n and s[i] == "!":
                i = skip_ws(i + 1)
            if i >= n:
                return "unknown", "a missing command"
            c = s[i]
            i += 1
            if c == "{":
                depth += 1
                continue
            elif c in _SED_SIMPLE:
                if c in "qQlL":
                    while i < n and s[i].isdigit():
                        i += 1
            elif c in "sy":
                if i >= n or s[i] in "\\\n ":
                    return "unknown", f"bad {c} command"
                delim = s[i]
                i = delimited(i + 1, delim)
                i = delimited(i, delim)
                if c == "s":
                    while i < n and s[i] in "gpiImM0123456789":
                        i += 1
                    if i < n and s[i] in "ewW":
                        return "effect", "s///e or s///w"
            elif c in "rRwWe":
                return "effect", f"the {c!r} command"
            else:
                return "unknown", f"the {c!r} command"
            i = skip_ws(i)
            if i < n and s[i] not in ";\n}":
                return "unknown", f"unexpected {s[i]!r}"
        if depth:
            return "unknown", "unbalanced braces"
    except ValueError as exc:
        return "unknown", str(exc)
    return None


__all__ = ["Problem", "sed_script_problem"]
