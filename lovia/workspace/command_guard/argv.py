"""One argv scanner for every program handler.

It knows the spellings a value-taking option has on the command line, so a handler
declares *which* options take a value and never re-parses spellings itself:

* separate: ``-C dir``, ``--directory dir``, ``-include file`` (a declared multi-letter
  single-dash option);
* glued: ``-Cdir``, ``-sCdir`` (flags clustered before the option), ``-isystem/x``;
* equals: ``--directory=dir``, ``-C=dir`` is *glued* (the value is ``=dir``, as getopt
  reads it);
* ``--`` ends the options; a lone ``-`` is an operand.

Values of undeclared options are reported too (``unknown``), so a handler can still
claim a path glued to an option it does not know (``--out=/x``, ``-o/x``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Literal

from lovia.workspace._shell import Word

Form = Literal["separate", "glued", "equals"]


class OptValue:
    """The value of one option occurrence, as a word of its own.

    (Plain classes, not dataclasses: the guard is imported on first use and these
    are cheaper to define.)
    """

    __slots__ = ("form", "opt", "source", "value")

    def __init__(self, opt: str, value: Word, form: Form, source: Word) -> None:
        self.opt = opt
        self.value = value
        self.form = form
        self.source = source


class Scan:
    """The result of :func:`scan_argv`."""

    __slots__ = ("flags", "operands", "unknown", "unknown_values", "values")

    def __init__(self) -> None:
        self.operands: list[Word] = []
        self.values: list[OptValue] = []
        #: option names seen (``-x`` for every letter of a cluster, ``--name`` without value)
        self.flags: set[str] = set()
        #: option words whose spelling the scan could not attribute (undeclared options)
        self.unknown: list[Word] = []
        #: ``--name=value`` words of undeclared long options
        self.unknown_values: list[OptValue] = []

    def has(self, *opts: str) -> bool:
        return any(o in self.flags for o in opts)


def tail_word(word: Word, cut: int) -> Word:
    """The part of ``word`` after its first ``cut`` characters (a glued/``=`` value).

    Option names hold no glob characters, so the glob pattern is cut at the same place.
    """
    return Word(
        text=word.text[cut:],
        pattern=word.pattern[cut:] if word.pattern[:cut] == word.text[:cut] else "",
        raw=word.raw,
        quoted=word.quoted,
        expansion=word.expansion,
        glob=word.glob,
        brace=word.brace,
        hash_inside=word.hash_inside,
        tilde=False,
        procsub=word.procsub,
        ansi_c=word.ansi_c,
    )


def scan_argv(
    args: list[Word],
    values: Mapping[str, object] | None = None,
    *,
    stop_at_operand: bool = False,
    plus_options: bool = False,
    clusters: bool = True,
    optional: Collection[str] = (),
    prefixes: Collection[str] | None = None,
) -> Scan:
    """Split ``args`` into options, option values and operands.

    ``values`` names every option that takes a value (``-C``, ``--directory``,
    ``-include``); its mapped value is the handler's business. With
    ``stop_at_operand`` the first operand ends the options (``sh script args``,
    ``env cmd``); ``plus_options`` treats ``+x`` like ``-x`` (shell ``set`` style).
    """
    values = values or {}
    out = Scan()
    i = 0
    n = len(args)
    end = False
    while i < n:
        w = args[i]
        t = w.text
        i += 1
        is_opt = len(t) > 1 and (t[0] == "-" or (plus_options and t[0] == "+"))
        if end or not is_opt:
            out.operands.append(w)
            if stop_at_operand:
                out.operands.extend(args[i:])
                break
            continue
        if t == "--":
            end = True
            if stop_at_operand:
                out.operands.extend(args[i:])
                break
            continue
        if t.startswith("--"):
            name, eq, _value = t.partition("=")
            cut = len(name) + 1
            if name not in values:
                name = _expand_prefix(name, values if prefixes is None else prefixes)
            out.flags.add(name)
            if eq:
                ov = OptValue(name, tail_word(w, cut), "equals", w)
                (out.values if name in values else out.unknown_values).append(ov)
            elif name in values and name not in optional and i < n:
                out.values.append(OptValue(name, args[i], "separate", w))
                i += 1
            continue
        # a declared multi-letter single-dash option: -include FILE, -isystem/x, -o=x (go)
        long1 = _single_dash_long(t, values)
        if long1 is not None:
            out.flags.add(long1)
            if t == long1:
                if i < n:
                    out.values.append(OptValue(long1, args[i], "separate", w))
                    i += 1
            else:
                out.values.append(OptValue(long1, tail_word(w, len(long1)), "glued", w))
            continue
        if t in values and t not in optional:  # "-o" itself, or a word like "-newer"
            out.flags.add(t)
            if i < n:
                out.values.append(OptValue(t, args[i], "separate", w))
                i += 1
            continue
        # a cluster of short options: -xvf FILE, -xvfFILE, -CDIR, -sC DIR
        prefix = t[0]
        attributed = False
        for j in range(1, len(t) if clusters else 2):
            opt = prefix + t[j]
            out.flags.add(opt)
            if opt in optional:
                attributed = True
                break
            if opt in values:
                attributed = True
                if j + 1 < len(t):
                    out.values.append(OptValue(opt, tail_word(w, j + 1), "glued", w))
                elif i < n:
                    out.values.append(OptValue(opt, args[i], "separate", w))
                    i += 1
                break
        if not attributed:
            out.unknown.append(w)
    return out


def _expand_prefix(name: str, options: Collection[str]) -> str:
    """``--targ`` → ``--target-directory`` when exactly one declared option starts so."""
    if len(name) < 4:
        return name
    found = [o for o in options if o.startswith(name) and o.startswith("--")]
    return found[0] if len(found) == 1 else name


def _single_dash_long(t: str, values: Mapping[str, object]) -> str | None:
    """The longest declared multi-letter single-dash option that ``t`` spells."""
    best: str | None = None
    for opt in values:
        long1 = len(opt) > 2 and opt[0] == "-" and opt[1] != "-"
        if long1 and t.startswith(opt) and (best is None or len(opt) > len(best)):
            best = opt
    return best


__all__ = ["Form", "OptValue", "Scan", "scan_argv", "tail_word"]
