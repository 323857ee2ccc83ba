"""Is a command line read-only? Judged by the table in :mod:`.readonly_table`.

A command is read-only when every simple command in it is a program of the table, run
with options the table lists for it (in any spelling the shared argv scanner knows:
separate, glued, clustered, ``--opt=value``), and the line has nothing the table cannot
vouch for: no assignments (``GIT_DIR=x git``), no substitutions or expansions, no
redirection that writes (only ``< file``, ``N>&M`` and ``/dev/null``), no here-documents,
no shell keywords, no command named by a path, and no command that ``PATH`` resolves to
a file inside the workspace (or to a venv wrapper). Pipes, ``&&``, ``||``, ``;`` and
``cd DIR`` between such commands keep it read-only.

:func:`classify` answers with the reason it is not, or with the path values of table
options (``grep -f FILE``) to judge next to the analyzer's claims. The decision itself
(every path allowed, nothing uncertain, the history scan) is :mod:`.judge`'s.

``python -m lovia.workspace.command_guard.readonly_docs`` rewrites the table in
``docs/workspace.md``; ``--check`` fails when it is out of date.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lovia.workspace._shell import SimpleCommand, Word, parse
from lovia.workspace.command_guard import gitrepo
from lovia.workspace.command_guard.argv import Scan, scan_argv
from lovia.workspace.command_guard.core import Claim, _is_pathish
from lovia.workspace.command_guard.readonly_table import (
    BUILTINS,
    GIT_GLOBAL,
    GIT_GLOBAL_VALUES,
    TABLE,
    ReadOnlyProgram,
)
from lovia.workspace.command_guard.sedscript import sed_script_problem
from lovia.workspace.venv_shims import is_shim_dir

_RESERVED = frozenset(
    {"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until"}
    | {"time", "for", "select", "case", "function", "in", "esac", "[[", "]]"}
)
_NUMERIC_RE = re.compile(r"^-\d+$")
_NULL_DEVICES = frozenset({"/dev/null"})


@dataclass
class ReadOnly:
    """A read-only command: the path values of its table options, and where git runs."""

    claims: list[Claim] = field(default_factory=list)
    git_dirs: list[tuple[str, ...]] = field(default_factory=list)


class NotReadOnly(Exception):
    """Why a command is not read-only (the message)."""


def classify(command: str, *, env: Mapping[str, str] | None = None, root: Path) -> ReadOnly | str:
    """A :class:`ReadOnly` when ``command`` only reads, else the reason it is not."""
    if "\x00" in command:
        return "NUL byte"
    parsed = parse(command)
    if parsed.error:
        return f"unparsable: {parsed.error}"
    if not parsed.commands:
        return "empty command"
    result = ReadOnly()
    bases: list[str] = [""]
    env = env if env is not None else os.environ
    try:
        for cmd in parsed.commands:
            if cmd.nested:
                raise NotReadOnly("a command substitution")
            bases = _simple(cmd, result, bases, env, root)
    except NotReadOnly as exc:
        return str(exc)
    return result


def _literal(word: Word, what: str) -> None:
    if word.expansion or word.ansi_c or word.brace or word.hash_inside or word.procsub:
        raise NotReadOnly(f"{what} is not a literal")


def _simple(
    cmd: SimpleCommand, result: ReadOnly, bases: list[str], env: Mapping[str, str], root: Path
) -> list[str]:
    if cmd.assignments:
        raise NotReadOnly("a variable assignment")
    if cmd.heredoc is not None:
        raise NotReadOnly("a here-document")
    for redirect in cmd.redirects:
        target = redirect.target
        if target is None or redirect.op in ("<<", "<<-", "<<<"):
            raise NotReadOnly("a here-document")
        _literal(target, "a redirection target")
        if redirect.op in ("<&", ">&") and (target.text.isdigit() or target.text == "-"):
            continue
        if redirect.op == "<":
            continue  # the analyzer claims it as a read
        if redirect.op in (">", ">>", "&>", "&>>", ">|") and target.text in _NULL_DEVICES:
            continue
        raise NotReadOnly(f"a redirection that writes ({redirect.op})")
    if not cmd.words:
        raise NotReadOnly("no command")
    head = cmd.words[0]
    if head.text in _RESERVED and not head.quoted:
        raise NotReadOnly(f"the shell keyword {head.text!r}")
    _literal(head, "the command name")
    if head.glob or "/" in head.text:
        raise NotReadOnly("a command named by a path")
    name = head.text
    spec = TABLE.get(name)
    if spec is None:
        raise NotReadOnly(f"{name!r} is not in the read-only table")
    if name not in BUILTINS:
        reason = _resolves_outside(name, env, root)
        if reason is not None:
            raise NotReadOnly(reason)
    args = cmd.words[1:]
    for w in args:
        _literal(w, "an argument")
    if name == "git":
        _git(args, result, bases, env, root)
    else:
        _check(name, spec, args, result, bases, env)
    if name == "cd":
        targets = [w.text for w in args if not w.text.startswith("-")]
        dest = targets[0] if targets else "~"
        if dest == "-":
            raise NotReadOnly("cd -")
        joined = [
            dest if dest.startswith(("/", "~")) else os.path.join(b, dest) if b else dest
            for b in bases
        ]
        bases = list(dict.fromkeys(bases + joined))
        if len(bases) > 8:
            raise NotReadOnly("too many directory changes")
    return bases


def _resolves_outside(name: str, env: Mapping[str, str], root: Path) -> str | None:
    """None when ``name`` runs a program outside the workspace on the command's ``PATH``."""
    path = env.get("PATH")
    if path is None:
        return "no PATH"
    for entry in path.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            return "PATH has a relative entry"
        candidate = os.path.join(entry, name)
        try:
            found = os.path.isfile(candidate) and os.access(candidate, os.X_OK)
        except OSError:
            found = False
        if not found:
            continue
        real = Path(os.path.realpath(candidate))
        entry_real = Path(os.path.realpath(entry))
        for p in (real, entry_real):
            if p == root or root in p.parents:
                return f"{name!r} resolves to a file inside the workspace"
        if is_shim_dir(entry):
            return f"{name!r} resolves to a tool of the workspace's virtual environment"
        return None
    return f"{name!r} is not on PATH"


def _scan(
    spec: ReadOnlyProgram, name: str, args: list[Word], result: ReadOnly, bases: list[str]
) -> tuple[Scan, list[Word]]:
    """Check ``args`` against ``spec``; record its path values; return the scan, operands."""
    words: list[Word] = []
    end = False
    i = 0
    while i < len(args):
        w = args[i]
        i += 1
        t = w.text
        if not end and t == "--":
            end = True
        elif not end and spec.numeric and _NUMERIC_RE.match(t):
            continue
        elif not end and t in spec.pairs:
            if i + 1 >= len(args):
                raise NotReadOnly(f"{name} {t} without its two values")
            if t in spec.paths:
                _path_claim(args[i + 1], result, bases)
            i += 2
            continue
        words.append(w)
    sc = scan_argv(
        words,
        dict.fromkeys(spec.values),
        optional=spec.optional,
        clusters=True,
        prefixes=(),
    )
    for opt in sorted(sc.flags):
        if opt in spec.flags or opt in spec.values or opt in spec.optional:
            continue
        why = spec.forbidden.get(opt)
        raise NotReadOnly(f"{name} {opt}: {why}" if why else f"{name} {opt} is not in the table")
    for v in sc.unknown_values:
        if v.opt not in spec.optional:
            raise NotReadOnly(f"{name} {v.opt}= takes no value")
    for v in sc.values:
        if v.opt in spec.paths:
            _path_claim(v.value, result, bases)
    operands = sc.operands
    if spec.operands == "none" and operands:
        raise NotReadOnly(f"{name} takes no operands here")
    if spec.operands_with and operands and not sc.has(*spec.operands_with):
        raise NotReadOnly(f"{name} with operands changes something")
    if spec.max_operands is not None and len(operands) > spec.max_operands:
        raise NotReadOnly(f"{name} with more than {spec.max_operands} operand(s) writes")
    return sc, operands


def _expression(
    spec: ReadOnlyProgram, name: str, args: list[Word], result: ReadOnly, bases: list[str]
) -> None:
    """``find [-P] START... EXPRESSION``: every expression word must be in the table."""
    i = 0
    while i < len(args) and args[i].text in spec.flags and args[i].text.startswith("-"):
        i += 1  # leading options (-P)
    while i < len(args) and not args[i].text.startswith(("-", "(", ")", "!", ",")):
        i += 1  # start points: claimed by the analyzer
    while i < len(args):
        t = args[i].text
        i += 1
        if t in spec.values:
            if i >= len(args):
                raise NotReadOnly(f"{name} {t} without a value")
            if t in spec.paths:
                _path_claim(args[i], result, bases)
            i += 1
        elif t not in spec.flags:
            why = spec.forbidden.get(t)
            raise NotReadOnly(f"{name} {t}: {why}" if why else f"{name} {t} is not in the table")


def _path_claim(word: Word, result: ReadOnly, bases: list[str]) -> None:
    result.claims.append(
        Claim(
            op="read",
            text=word.text,
            bases=tuple(bases),
            bare=not _is_pathish(word.text),
            glob=word.pattern if word.glob else None,
        )
    )


def _check(
    name: str,
    spec: ReadOnlyProgram,
    args: list[Word],
    result: ReadOnly,
    bases: list[str],
    env: Mapping[str, str],
) -> None:
    if spec.expression:
        _expression(spec, name, args, result, bases)
        return
    sc, operands = _scan(spec, name, args, result, bases)
    if spec.check == "sed":
        scripts = [v.value.text for v in sc.values if v.opt in ("-e", "--expression")]
        if not scripts and operands:
            scripts = [operands[0].text]
        for script in scripts:
            problem = sed_script_problem(script)
            if problem is not None:
                raise NotReadOnly(f"sed script: {problem[1]}")
    elif spec.check == "awk":
        programs = [v.value.text for v in sc.values if v.opt in ("-e", "--source")]
        if not programs and operands:
            programs = [operands[0].text]
        for text in programs:
            found = _AWK_UNSAFE.search(text)
            if found:
                raise NotReadOnly(f"awk program uses {found.group(0)!r}")
    elif spec.check == "jq":
        if operands:
            found = _JQ_UNSAFE.search(operands[0].text)
            if found:
                raise NotReadOnly(f"jq program uses {found.group(0)!r}")
    elif spec.check == "rg" and env.get("RIPGREP_CONFIG_PATH") and not sc.has("--no-config"):
        raise NotReadOnly("rg reads options from RIPGREP_CONFIG_PATH")
    if name == "strings" and any(w.text.startswith("@") for w in operands):
        raise NotReadOnly("strings reads options from an @file")


# ARGV/ARGC: a program can add files to read (BEGIN { ARGV[1] = "/etc/passwd"; ARGC = 2 })
_AWK_UNSAFE = re.compile(r"system|getline|\||>|ENVIRON|@|PROCINFO|ARGV|ARGC")
_JQ_UNSAFE = re.compile(r"\benv\b|\$ENV|\$__prog|\bimport\b|\binclude\b|\binput_filename\b")


def _git(
    args: list[Word], result: ReadOnly, bases: list[str], env: Mapping[str, str], root: Path
) -> None:
    unsafe = gitrepo.unsafe_git_env(env)
    if unsafe is not None:
        raise NotReadOnly(f"git with {unsafe} set")
    sc = scan_argv(args, dict.fromkeys(GIT_GLOBAL_VALUES), stop_at_operand=True, prefixes=())
    for opt in sorted(sc.flags):
        if opt not in GIT_GLOBAL.flags:
            why = GIT_GLOBAL.forbidden.get(opt)
            raise NotReadOnly(f"git {opt}: {why}" if why else f"git {opt} is not in the table")
    if sc.unknown_values:
        raise NotReadOnly(f"git {sc.unknown_values[0].opt}= is not in the table")
    if not sc.operands:
        if sc.has("--version"):
            return
        raise NotReadOnly("git without a subcommand")
    spec: ReadOnlyProgram = TABLE["git"]
    words = list(sc.operands)
    label = "git"
    while spec.subcommands is not None:
        if not words:
            raise NotReadOnly(f"{label} without a subcommand")
        sub = words[0].text
        nxt = spec.subcommands.get(sub)
        if nxt is None:
            raise NotReadOnly(f"{label} {sub} is not in the read-only table")
        label = f"{label} {sub}"
        spec = nxt
        words = words[1:]
    _check(label, spec, words, result, bases, env)
    result.git_dirs.append(tuple(bases))


def git_problem(
    dirs: list[tuple[str, ...]], cwd: Path, env: Mapping[str, str], root: Path
) -> str | None:
    """Why git in these directories may run a program the repository configures."""
    git = gitrepo.git_program(env.get("PATH"), root)
    if git is None:
        return "no git outside the workspace"
    for bases in dirs:
        for base in bases:
            start = Path(os.path.expanduser(base)) if base.startswith("~") else cwd / base
            repo = gitrepo.find_repo(start)
            if repo is None:
                continue
            keys = gitrepo.program_config(repo, git, env.get("PATH"))
            if keys is None:
                return "the repository's configuration cannot be read"
            if keys:
                return f"the repository's configuration sets {keys[0]}"
    return None


__all__ = [
    "NotReadOnly",
    "ReadOnly",
    "classify",
    "git_problem",
]
