"""What a shell command touches: path claims, commands it runs, and what is uncertain.

Two layers:

* :func:`extract_path_claims` — the spec's lexical claim list (``shlex`` based,
  redirect targets are writes, path-looking words are reads). Its output is part of
  the public contract and kept exactly.
* :func:`analyze` / :func:`judge_command` — the hardened guard the session actually
  enforces. It parses the command like the shell would (:mod:`._shell`), knows which
  common commands write (``tee``, ``cp``, ``mv``, ``dd of=``, ``sed -i``, ``<>``…),
  unwraps wrappers and payloads (``env``, ``xargs``, ``sudo``, ``sh -c``, ``eval``,
  ``find -exec``, ``$(...)``), follows ``cd``, expands globs against the file system,
  checks whether a glob *could* match a restricted pattern, scans the trees that
  recursive commands walk, and flags everything it cannot judge (expansions, brace
  expansion, ``#`` inside a word, unparsable input, arguments fed by ``xargs``...) so
  the result is at least ``ask``. It never loosens a decision.
"""

from __future__ import annotations

import contextlib
import glob as _glob
import os
import re
import shlex
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Literal, Protocol

from lovia.workspace._shell import SimpleCommand, Word, parse
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


ClaimOp = Literal["read", "write", "either"]

# --------------------------------------------------------------------------- spec layer

_PUNCT = "();<>|&"
_WRITE_REDIRECTS = frozenset({">", ">>", "&>", "&>>", ">&", ">|"})
_SKIP_REDIRECTS = frozenset({"<<", "<<-", "<<<"})
_PSEUDO_DEVICES = frozenset(
    {
        "/dev/null",
        "/dev/zero",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/tty",
        "/dev/random",
        "/dev/urandom",
    }
)


def is_pseudo_device(token: str) -> bool:
    return token in _PSEUDO_DEVICES or token.startswith("/dev/fd/")


def _pathish(token: str) -> str | None:
    candidate = token
    if candidate.startswith("-"):
        if "=" not in candidate:
            return None
        candidate = candidate.split("=", 1)[1]
    elif "=" in candidate:
        value = candidate.split("=", 1)[1]
        if value.startswith(("/", "~", ".")):
            candidate = value
    if not candidate or "://" in candidate:
        return None
    if "/" in candidate or "." in candidate or candidate.startswith("~"):
        return candidate
    return None


def extract_path_claims(command: str) -> list[tuple[FileOp, str]]:
    """Lexical path claims of ``command`` in token order (the spec's contract).

    Redirect targets (``>``, ``>>``, ``&>``, ``&>>``, ``>&``, ``>|``) are writes, ``<``
    targets and path-looking words are reads. Tokenisation errors give ``[]``. The
    session does not rely on this alone: see :func:`judge_command`.
    """
    lex = shlex.shlex(command, posix=True, punctuation_chars=_PUNCT)
    lex.whitespace_split = True
    try:
        tokens = list(lex)
    except ValueError:
        return []
    claims: list[tuple[FileOp, str]] = []
    pending: str | None = None
    for tok in tokens:
        if tok and all(c in _PUNCT for c in tok):
            if tok in _WRITE_REDIRECTS:
                pending = "write"
            elif tok == "<":
                pending = "read"
            elif tok in _SKIP_REDIRECTS:
                pending = "skip"
            else:
                pending = None
            continue
        if pending is not None:
            op, pending = pending, None
            if op == "skip" or tok.isdigit() or tok == "-" or is_pseudo_device(tok):
                continue
            claims.append(("write" if op == "write" else "read", tok))
            continue
        path = _pathish(tok)
        if path is not None and not is_pseudo_device(path):
            claims.append(("read", path))
    return claims


# --------------------------------------------------------------------------- hardened layer


@dataclass
class Claim:
    """A path a command may touch. ``text`` is unresolved; ``bases`` are cwd candidates."""

    op: ClaimOp
    text: str
    bases: tuple[str, ...] = ("",)
    recursive: bool = False
    destructive: bool = False
    bare: bool = False
    glob: str | None = None


@dataclass
class Invocation:
    """One command the line runs, as normalised words (``/bin/rm`` → ``rm``)."""

    words: list[str]
    unknown: bool = False


@dataclass
class Analysis:
    claims: list[Claim] = field(default_factory=list)
    invocations: list[Invocation] = field(default_factory=list)
    uncertain: list[str] = field(default_factory=list)


_RESERVED = frozenset(
    {"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time"}
)
_HEADER_KEYWORDS = frozenset({"for", "select", "case", "function", "in", "esac"})
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox-sh", "fish"})
_INTERPRETERS = frozenset(
    {
        "python",
        "python2",
        "python3",
        "pypy",
        "pypy3",
        "node",
        "nodejs",
        "deno",
        "bun",
        "ruby",
        "perl",
        "php",
        "lua",
        "Rscript",
        "osascript",
        "tclsh",
    }
)
_NO_FILE_ARGS = frozenset(
    {
        "echo",
        "printf",
        "true",
        "false",
        ":",
        "test",
        "[",
        "[[",
        "]]",
        "sleep",
        "seq",
        "yes",
        "date",
        "expr",
        "basename",
        "dirname",
        "pwd",
        "export",
        "local",
        "declare",
        "typeset",
        "readonly",
        "unset",
        "set",
        "shift",
        "return",
        "exit",
        "break",
        "continue",
        "let",
        "read",
        "wait",
        "trap",
        "umask",
        "ulimit",
        "printenv",
        "whoami",
        "id",
        "uname",
        "hostname",
        "which",
        "type",
        "hash",
        "jobs",
        "kill",
        "getopts",
        "shopt",
    }
)
_READERS = frozenset(
    {
        "cat",
        "tac",
        "head",
        "tail",
        "less",
        "more",
        "grep",
        "egrep",
        "fgrep",
        "zgrep",
        "rg",
        "ag",
        "ack",
        "ls",
        "dir",
        "tree",
        "wc",
        "diff",
        "cmp",
        "comm",
        "file",
        "stat",
        "du",
        "df",
        "md5sum",
        "sha1sum",
        "sha224sum",
        "sha256sum",
        "sha384sum",
        "sha512sum",
        "b2sum",
        "cksum",
        "sum",
        "jq",
        "cut",
        "nl",
        "od",
        "hexdump",
        "strings",
        "readlink",
        "realpath",
        "column",
        "fold",
        "fmt",
        "paste",
        "join",
        "expand",
        "unexpand",
        "rev",
        "zcat",
        "bzcat",
        "xzcat",
        "zless",
        "lsattr",
        "getfacl",
        "iconv",
        "base64",
        "base32",
        "tr",
        "pr",
        "look",
        "numfmt",
        "cd",
        "pushd",
        "sort",
        "find",
    }
)
_ALWAYS_RECURSIVE = frozenset({"rg", "ag", "ack", "tree", "du", "find"})
_RECURSIVE_FLAGS = frozenset(
    {"-r", "-R", "--recursive", "-a", "--archive", "--dereference-recursive"}
)
_MODIFIERS = frozenset(
    {
        "rm",
        "rmdir",
        "unlink",
        "shred",
        "touch",
        "mkdir",
        "mkfifo",
        "mknod",
        "chmod",
        "chown",
        "chgrp",
        "chattr",
        "setfacl",
        "chcon",
        "truncate",
        "tee",
        "sponge",
        "gzip",
        "gunzip",
        "bzip2",
        "bunzip2",
        "xz",
        "unxz",
        "zstd",
        "unzstd",
        "lz4",
        "compress",
        "uncompress",
        "shuf",
    }
)
_DESTRUCTIVE = frozenset({"rm", "shred", "unlink", "rmdir"})
_COPIERS = frozenset({"cp", "mv", "install", "rsync", "scp", "ln", "link", "rename"})
# git subcommands that rewrite files in the work tree
_GIT_WORKTREE = frozenset(
    {
        "checkout",
        "restore",
        "reset",
        "clean",
        "stash",
        "merge",
        "pull",
        "rebase",
        "cherry-pick",
        "revert",
        "switch",
        "apply",
        "am",
        "rm",
        "mv",
        "worktree",
        "clone",
        "init",
        "submodule",
    }
)

_SHELL_VALUE_OPTS = frozenset({"-o", "-O", "+o", "+O", "--rcfile", "--init-file"})

# wrapper -> options that take a separate value
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R"}),
    "doas": frozenset({"-u", "-C"}),
    "nice": frozenset({"-n"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "ionice": frozenset({"-c", "-n", "-p", "-P", "-u"}),
    "setsid": frozenset(),
    "unbuffer": frozenset(),
    "caffeinate": frozenset({"-t", "-w"}),
    "fakeroot": frozenset(),
    "catchsegv": frozenset(),
    "valgrind": frozenset(),
    "strace": frozenset(
        {"-o", "-e", "-p", "-s", "-E", "-P", "-u", "-a", "-b", "-I", "-O", "-S", "-X"}
    ),
    "ltrace": frozenset({"-o", "-e", "-p", "-s", "-a", "-n", "-u"}),
    "busybox": frozenset(),
    "toybox": frozenset(),
    "chronic": frozenset(),
    "ifne": frozenset(),
    "tsp": frozenset(),
    "proxychains": frozenset({"-f"}),
    "proxychains4": frozenset({"-f"}),
    "torsocks": frozenset(),
    "firejail": frozenset(),
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "xargs": frozenset(
        {
            "-a",
            "--arg-file",
            "-d",
            "--delimiter",
            "-E",
            "-e",
            "-I",
            "-i",
            "-L",
            "-l",
            "-n",
            "--max-args",
            "-P",
            "--max-procs",
            "-s",
            "--max-chars",
            "--process-slot-var",
        }
    ),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "chrt": frozenset(),
    "taskset": frozenset(),
    "flock": frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}),
    "watch": frozenset({"-n", "--interval", "-d", "--differences", "-q", "--equexit"}),
    "parallel": frozenset({"-j", "--jobs", "-S", "--sshlogin"}),
}
# wrappers whose first operand is not the command (timeout DURATION, taskset MASK...)
_WRAPPER_SKIP_OPERANDS = {"timeout": 1, "chrt": 1, "taskset": 1, "flock": 1}
# "tool run CMD" style wrappers: (tool, subcommand) -> value options
_RUNNERS: dict[tuple[str, str], frozenset[str]] = {
    ("uv", "run"): frozenset(
        {
            "--with",
            "--python",
            "-p",
            "--package",
            "--extra",
            "--group",
            "--env-file",
            "--directory",
            "--project",
            "--index",
            "--with-requirements",
            "--from",
        }
    ),
    ("uvx", ""): frozenset({"--with", "--python", "-p", "--from", "--index"}),
    ("poetry", "run"): frozenset({"-C", "--directory", "-P", "--project"}),
    ("pipenv", "run"): frozenset(),
    ("pdm", "run"): frozenset({"-p", "--project"}),
    ("hatch", "run"): frozenset(),
    ("conda", "run"): frozenset({"-n", "--name", "-p", "--prefix"}),
    ("mamba", "run"): frozenset({"-n", "--name", "-p", "--prefix"}),
    ("micromamba", "run"): frozenset({"-n", "--name", "-p", "--prefix"}),
    ("bundle", "exec"): frozenset(),
    ("npm", "exec"): frozenset({"-c", "--call", "-p", "--package"}),
    ("pnpm", "exec"): frozenset(),
    ("yarn", "exec"): frozenset(),
    ("npx", ""): frozenset({"-p", "--package", "-c", "--call"}),
    ("pipx", "run"): frozenset({"--spec"}),
    ("nix", "run"): frozenset(),
}

_FILE_URL_RE = re.compile(r"(?i)^(?:[a-z0-9+.-]*\+)?file:(?://[^/]*)?(/.*)$")
_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_QUOTED_LITERAL_RE = re.compile(r"""(?:'([^'\n]{1,4096})'|"([^"\n]{1,4096})")""")
_SED_WRITE_RE = re.compile(r"(?:^|[;{}\n/0-9$])\s*[wWe](?:\s|$)|/[gpIiMme0-9]*w\s")
_MAX_BASES = 8


def _basename(text: str) -> str:
    name = text.rstrip("/").rsplit("/", 1)[-1]
    return name or text


def _is_pathish(text: str) -> bool:
    return "/" in text or "." in text or text.startswith("~")


def _guess_option_op(opt: str) -> ClaimOp:
    """What an unknown program's option probably does with a path value."""
    name = opt.lstrip("-").lower()
    if opt in ("-I", "-L", "-isystem") or name in ("include", "input", "in", "config"):
        return "read"
    if opt == "-o" or name.startswith(("out", "log-file", "logfile", "dest", "target")):
        return "write"
    return "either"


def _short_cluster_path(text: str) -> str | None:
    """``-I/usr/include`` → ``/usr/include``; ``-xvf./a`` → ``./a``; ``-la`` → None."""
    for i in range(2, len(text)):
        if text[i] in "/~.":
            return text[i:]
    return None


class _Analyzer:
    def __init__(self) -> None:
        self.result = Analysis()
        self.bases: list[str] = [""]
        self.all_bases: list[str] = [""]
        self.depth = 0

    # ------------------------------------------------------------------ recording

    def uncertain(self, reason: str) -> None:
        if reason not in self.result.uncertain:
            self.result.uncertain.append(reason)

    def claim(
        self,
        word: Word,
        op: ClaimOp,
        *,
        recursive: bool = False,
        destructive: bool = False,
        bare_ok: bool = True,
        text: str | None = None,
    ) -> None:
        value = word.text if text is None else text
        if not value or word.procsub:
            return
        if word.expansion:
            self.uncertain("shell expansion in an argument")
        if word.ansi_c:
            self.uncertain("$'...' quoting")
        if word.brace:
            self.uncertain("brace expansion")
        if word.hash_inside:
            self.uncertain("'#' inside a word")
        m = _FILE_URL_RE.match(value)
        if m:
            value = m.group(1)
            self.uncertain("file:// URL")
        elif _URL_RE.match(value):
            return
        if is_pseudo_device(value):
            return
        bare = not _is_pathish(value)
        if bare and not bare_ok:
            return
        pattern = None
        if word.glob and text is None:
            pattern = word.pattern
        self.result.claims.append(
            Claim(
                op=op,
                text=value,
                bases=tuple(self.bases),
                recursive=recursive,
                destructive=destructive,
                bare=bare,
                glob=pattern,
            )
        )

    def glued_value(self, word: Word, op: ClaimOp) -> None:
        """``-xVALUE``: a path glued to a short option (or a cluster of flags)."""
        text = word.text
        path = _short_cluster_path(text)
        if path is not None:
            self.claim(word, op, text=path)
        if len(text) > 2 and path != text[2:]:
            self.claim(word, op, text=text[2:])  # bare: only an existing path counts

    def invoke(self, words: list[str], *, unknown: bool = False) -> None:
        self.result.invocations.append(Invocation(words=words, unknown=unknown))

    # ------------------------------------------------------------------ nested strings

    def payload(self, word: Word | None, what: str) -> None:
        """Analyse a string the command will run as shell code (``sh -c``, ``eval``)."""
        if word is None:
            self.uncertain(f"{what} without a literal command")
            return
        if word.expansion or word.glob:
            self.uncertain(f"{what} with a non-literal command")
        self.run_string(word.text)

    def run_string(self, text: str) -> None:
        if self.depth > 8:
            self.uncertain("nesting too deep")
            return
        parsed = parse(text)
        if parsed.error:
            self.uncertain(f"unparsable command: {parsed.error}")
        self.depth += 1
        try:
            for cmd in parsed.commands:
                self.visit(cmd)
        finally:
            self.depth -= 1

    # ------------------------------------------------------------------ commands

    def visit(self, cmd: SimpleCommand) -> None:
        for assignment in cmd.assignments:
            value = assignment.text.split("=", 1)[1] if "=" in assignment.text else ""
            if value:
                self.claim(assignment, "read", text=value)
                if assignment.expansion:
                    self.uncertain("shell expansion in an assignment")
        for redirect in cmd.redirects:
            target = redirect.target
            if target is None or redirect.op in ("<<", "<<-", "<<<"):
                continue
            if redirect.op in ("<&", ">&") and (target.text.isdigit() or target.text == "-"):
                continue
            op: ClaimOp = "read" if redirect.op == "<" else "write"
            self.claim(target, op)
        words = list(cmd.words)
        while words and words[0].text in _RESERVED and not words[0].quoted:
            words = words[1:]
        if cmd.heredoc is not None and not cmd.heredoc_quoted:
            self.heredoc_substitutions(cmd.heredoc)
        if not words:
            return
        self.command(words, heredoc=cmd.heredoc)

    def heredoc_substitutions(self, body: str) -> None:
        if "$" not in body and "`" not in body:
            return
        # Substitutions in an unquoted here-document run; parse it as a quoted string.
        quoted = '"' + body.replace("\\", "\\\\").replace('"', '\\"') + '"'
        quoted = quoted.replace("\\\\$", "\\$").replace("\\\\`", "\\`")
        parsed = parse("echo " + quoted)
        if parsed.error:
            self.uncertain("here-document with expansions")
        for cmd in parsed.commands:
            if cmd.nested:
                self.visit(cmd)
        self.uncertain("here-document with expansions")

    def command(self, words: list[Word], *, heredoc: str | None = None) -> None:
        head = words[0]
        if head.expansion or head.glob or head.brace:
            self.invoke([head.text] + [w.text for w in words[1:]], unknown=True)
            self.uncertain("the command name is not a literal")
            for w in words[1:]:
                self.claim(w, "either")
            return
        if head.ansi_c:
            self.uncertain("$'...' quoting in the command name")
        name = _basename(head.text)
        if "/" in head.text:
            self.claim(head, "read")
        args = words[1:]
        self.invoke([name] + [w.text for w in args])
        if name in _HEADER_KEYWORDS:
            for w in args:
                self.claim(w, "read", bare_ok=False)
            return
        handler = _HANDLERS.get(name)
        if handler is not None:
            handler(self, name, args, heredoc)
            return
        if name in _WRAPPERS:
            self.wrapper(name, args)
            return
        if args and (name, args[0].text) in _RUNNERS:
            self.runner_wrapper(_RUNNERS[(name, args[0].text)], args[1:])
            return
        if (name, "") in _RUNNERS:
            self.runner_wrapper(_RUNNERS[(name, "")], args)
            return
        if name in _NO_FILE_ARGS:
            return
        if name in _SHELLS:
            self.shell(name, args, heredoc)
            return
        if name in _INTERPRETERS:
            self.interpreter(name, args, heredoc)
            return
        if name in _READERS:
            self.generic(name, args, "read")
            return
        if name in _MODIFIERS:
            self.generic(name, args, "write")
            return
        if name in _COPIERS:
            self.copier(name, args)
            return
        self.generic(name, args, "either")

    # ------------------------------------------------------------------ generic args

    def option_value(self, opt: str, value: Word, op: ClaimOp) -> None:
        self.claim(value, op, bare_ok=op != "either")

    def generic(
        self,
        name: str,
        args: list[Word],
        op: ClaimOp,
        *,
        value_opts: Mapping[str, ClaimOp] | None = None,
        skip_first_operand: bool = False,
    ) -> list[Word]:
        """Claim operands with ``op``; glued/--opt= option values as ``either``."""
        value_opts = value_opts or {}
        flags = {w.text for w in args if w.text.startswith("-")}
        recursive = (
            name in _ALWAYS_RECURSIVE
            or bool(flags & _RECURSIVE_FLAGS)
            or any(
                f.startswith("-")
                and not f.startswith("--")
                and ("r" in f[1:] or "R" in f[1:])
                and name
                in (
                    "rm",
                    "cp",
                    "grep",
                    "egrep",
                    "fgrep",
                    "chmod",
                    "chown",
                    "chgrp",
                    "ls",
                    "zip",
                    "scp",
                    "rsync",
                    "setfacl",
                    "chattr",
                )
                for f in flags
            )
        )
        destructive = name in _DESTRUCTIVE or (name == "find" and "-delete" in flags)
        operands: list[Word] = []
        i = 0
        end_of_opts = False
        while i < len(args):
            w = args[i]
            t = w.text
            if not end_of_opts and t == "--":
                end_of_opts = True
                i += 1
                continue
            if not end_of_opts and t.startswith("-") and len(t) > 1:
                if t.startswith("--") and "=" in t:
                    opt, value = t.split("=", 1)
                    vop = value_opts.get(opt, _guess_option_op(opt))
                    self.claim(w, vop, text=value, bare_ok=vop != "either")
                elif t in value_opts and i + 1 < len(args):
                    self.option_value(t, args[i + 1], value_opts[t])
                    i += 2
                    continue
                elif not t.startswith("--"):
                    glued = next(
                        (o for o in value_opts if len(o) == 2 and t.startswith(o) and len(t) > 2),
                        None,
                    )
                    if glued is not None:
                        self.claim(w, value_opts[glued], text=t[2:])
                    else:
                        self.glued_value(w, _guess_option_op(t[:2]))
                i += 1
                continue
            operands.append(w)
            i += 1
        if skip_first_operand and operands:
            operands = operands[1:]
        for w in operands:
            if "=" in w.text and not w.text.startswith("="):
                key, value = w.text.split("=", 1)
                if value and not _is_pathish(key):
                    self.claim(w, op, text=value, bare_ok=op != "either")
            self.claim(w, op, recursive=recursive, destructive=destructive, bare_ok=True)
        if (
            recursive
            and not operands
            and name in ("rg", "ag", "ack", "tree", "du", "grep", "egrep", "fgrep", "find", "ls")
        ):
            self.claim(Word(text="."), op, recursive=True, text=".")
        return operands

    # ------------------------------------------------------------------ families

    def wrapper(self, name: str, args: list[Word]) -> None:
        value_opts = _WRAPPERS[name]
        i = 0
        while i < len(args):
            t = args[i].text
            if name == "env" and "=" in t and not t.startswith("-"):
                value = t.split("=", 1)[1]
                if value:
                    self.claim(args[i], "read", text=value, bare_ok=False)
                i += 1
                continue
            if t == "--":
                i += 1
                break
            if not t.startswith("-") or t == "-":
                break
            opt = t.split("=", 1)[0]
            if name == "env" and opt in ("-S", "--split-string"):
                if "=" in t:
                    self.payload(Word(text=t.split("=", 1)[1]), "env -S")
                    return
                self.payload(args[i + 1] if i + 1 < len(args) else None, "env -S")
                return
            if name == "env" and opt in ("-C", "--chdir"):
                target = (
                    args[i + 1]
                    if "=" not in t and i + 1 < len(args)
                    else Word(text=t.split("=", 1)[-1])
                )
                self.claim(target, "read")
                self.cd(target)
            elif name in ("time", "strace", "ltrace") and opt == "-o" and i + 1 < len(args):
                self.claim(args[i + 1], "write")
            elif name == "xargs" and opt in ("-a", "--arg-file"):
                if "=" in t:
                    self.claim(args[i], "read", text=t.split("=", 1)[1])
                elif i + 1 < len(args):
                    self.claim(args[i + 1], "read")
            if opt in value_opts and "=" not in t:
                i += 2
            elif len(t) > 2 and t[:2] in value_opts and not t.startswith("--"):
                i += 1  # glued value
            else:
                i += 1
        rest = args[i:]
        skip = _WRAPPER_SKIP_OPERANDS.get(name, 0)
        if name == "flock" and len(rest) >= 2 and rest[1].text in ("-c", "--command"):
            self.claim(rest[0], "write")
            self.payload(rest[2] if len(rest) > 2 else None, "flock -c")
            return
        if name == "flock" and rest:
            self.claim(rest[0], "write")
        rest = rest[skip:]
        if name == "command" and args and args[0].text in ("-v", "-V"):
            return
        if name == "xargs":
            self.uncertain("xargs appends arguments read from its input")
            if not rest:
                return
        if name in ("watch", "parallel") and rest:
            self.run_string(" ".join(w.text for w in rest))
            if any(w.expansion for w in rest):
                self.uncertain(f"{name} with a non-literal command")
            return
        if rest:
            self.command(rest)

    def runner_wrapper(self, value_opts: frozenset[str], args: list[Word]) -> None:
        i = 0
        while i < len(args):
            t = args[i].text
            if t == "--":
                i += 1
                break
            if not t.startswith("-"):
                break
            opt = t.split("=", 1)[0]
            if opt in ("-c", "--call"):
                if "=" in t:
                    self.payload(Word(text=t.split("=", 1)[1]), "npm exec -c")
                else:
                    self.payload(args[i + 1] if i + 1 < len(args) else None, "npm exec -c")
                return
            if opt in ("--directory", "--project", "-C") and "=" not in t and i + 1 < len(args):
                self.claim(args[i + 1], "read")
            i += 2 if (opt in value_opts and "=" not in t) else 1
        rest = args[i:]
        if rest:
            self.command(rest)

    def cd(self, target: Word | None) -> None:
        if target is None or target.text in ("", "~"):
            new = ["~"]
        elif target.text == "-" or target.expansion or target.glob:
            self.uncertain("cd to a directory that cannot be determined")
            return
        else:
            t = target.text
            new = [
                t if t.startswith(("/", "~")) else (os.path.join(b, t) if b else t)
                for b in self.bases
            ]
        merged = list(dict.fromkeys(self.bases + new))
        if len(merged) > _MAX_BASES:
            self.uncertain("too many directory changes to follow")
            merged = merged[:_MAX_BASES]
        self.bases = merged
        self.all_bases = list(dict.fromkeys(self.all_bases + merged))[: _MAX_BASES * 2]

    def shell(self, name: str, args: list[Word], heredoc: str | None) -> None:
        i = 0
        payload_next = False
        while i < len(args):
            w = args[i]
            t = w.text
            if t == "--":
                i += 1
                break
            if t.startswith(("-", "+")) and len(t) > 1:
                if t in _SHELL_VALUE_OPTS:
                    i += 2
                    continue
                if not t.startswith("--") and "c" in t[1:]:
                    payload_next = True
                i += 1
                continue
            break
        rest = args[i:]
        if payload_next:
            self.payload(rest[0] if rest else None, f"{name} -c")
            return
        if rest:
            # a script file: its contents are not inspected
            self.claim(rest[0], "read")
            for w in rest[1:]:
                self.claim(w, "either")
            return
        if heredoc is not None:
            self.run_string(heredoc)
        else:
            self.uncertain(f"{name} reads commands from its input")

    def interpreter(self, name: str, args: list[Word], heredoc: str | None) -> None:
        code_flags = {"-c", "-e", "-E", "-r", "--eval", "-p", "--print"}
        saw_code = False
        inplace = False
        operands: list[Word] = []
        skip_next = False
        for i, w in enumerate(args):
            t = w.text
            if skip_next:
                skip_next = False
                continue
            is_code_flag = t in code_flags or (
                name == "perl" and t.startswith("-") and not t.startswith("--") and "e" in t[1:]
            )
            if is_code_flag:
                saw_code = True
                if i + 1 < len(args):
                    self.code_literals(args[i + 1])
                    skip_next = True
            if name == "perl" and t.startswith("-") and not t.startswith("--") and "i" in t[1:]:
                inplace = True
            if not t.startswith("-"):
                operands.append(w)
        for w in operands:
            self.claim(w, "write" if inplace else "either")
        if not saw_code and not operands and heredoc is not None:
            self.code_literals(Word(text=heredoc))

    def code_literals(self, word: Word) -> None:
        """Claim quoted path-looking literals inside inline code (best effort)."""
        for m in _QUOTED_LITERAL_RE.finditer(word.text):
            literal = m.group(1) or m.group(2) or ""
            if _is_pathish(literal) and " " not in literal.strip():
                self.claim(Word(text=literal), "either", text=literal)

    def copier(self, name: str, args: list[Word]) -> None:
        value_opts: dict[str, ClaimOp] = {
            "-t": "write",
            "--target-directory": "write",
            "-S": "read",
            "--suffix": "read",
            "-e": "read",
            "--rsh": "read",
            "--exclude-from": "read",
            "--include-from": "read",
            "--files-from": "read",
            "-m": "read",
            "--mode": "read",
            "-o": "read",
            "-g": "read",
            "--owner": "read",
            "--group": "read",
            "-i": "read",
            "-F": "read",
            "-P": "read",
        }
        if name in ("rsync",):
            value_opts.pop("-o", None)
            value_opts.pop("-g", None)
            value_opts.pop("-P", None)
        collector = _Collector()
        operands = collector.collect(self, name, args, value_opts)
        flags = collector.flags
        has_target = any(
            f == "--target-directory" or (f.startswith("-t") and not f.startswith("--"))
            for f in flags
        )
        recursive = bool(flags & _RECURSIVE_FLAGS) or any(
            not f.startswith("--") and ("r" in f[1:] or "R" in f[1:] or "a" in f[1:]) for f in flags
        )
        if name == "rsync" and any(f.startswith("--") and "remove-source" in f for f in flags):
            source_op: ClaimOp = "write"
        else:
            source_op = "write" if name in ("mv", "rename") else "read"
        if name in ("ln", "link") and len(operands) == 1:
            # ln TARGET: a link named after TARGET is written into the cwd; the target is
            # read (a hard link to a denied file is an alias of it)
            self.claim(operands[0], "read")
            self.claim(Word(text="."), "write", text=".")
            return
        if has_target or len(operands) <= 1:
            for w in operands:
                self.claim(w, source_op if has_target else "either", recursive=recursive)
            return
        *sources, dest = operands
        for w in sources:
            self.claim(w, source_op, recursive=recursive, destructive=name == "mv")
            if not (w.expansion or w.glob):
                joined = dest.text.rstrip("/") + "/" + _basename(w.text)
                self.claim(dest, "write", text=joined)
        self.claim(dest, "write", recursive=recursive)


class _Collector:
    """Split args into operands, claiming option values on the way."""

    def __init__(self) -> None:
        self.flags: set[str] = set()

    def collect(
        self, an: _Analyzer, name: str, args: list[Word], value_opts: Mapping[str, ClaimOp]
    ) -> list[Word]:
        operands: list[Word] = []
        i = 0
        end = False
        while i < len(args):
            w = args[i]
            t = w.text
            if not end and t == "--":
                end = True
                i += 1
                continue
            if not end and t.startswith("-") and len(t) > 1:
                self.flags.add(t.split("=", 1)[0])
                if t.startswith("--") and "=" in t:
                    opt, value = t.split("=", 1)
                    an.claim(
                        w, value_opts.get(opt, "either"), text=value, bare_ok=opt in value_opts
                    )
                elif t in value_opts:
                    if i + 1 < len(args):
                        an.claim(args[i + 1], value_opts[t], bare_ok=True)
                    i += 2
                    continue
                elif not t.startswith("--"):
                    if len(t) > 2 and t[:2] in value_opts:
                        an.claim(w, value_opts[t[:2]], text=t[2:])
                    else:
                        an.glued_value(w, "either")
                i += 1
                continue
            operands.append(w)
            i += 1
        return operands


# --------------------------------------------------------------------------- handlers

Handler = Callable[[_Analyzer, str, list[Word], "str | None"], None]


def _h_cd(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    operands = [w for w in args if not (w.text.startswith("-") and len(w.text) > 1)]
    target = operands[0] if operands else None
    if target is not None:
        an.claim(target, "read")
    an.cd(target)


def _h_tee(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    an.generic(name, args, "write")


def _h_dd(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    for w in args:
        key, sep, value = w.text.partition("=")
        if not sep:
            continue
        if key == "of":
            an.claim(w, "write", text=value)
        elif key == "if":
            an.claim(w, "read", text=value)


def _h_sed(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    inplace = False
    script_given = False
    operands: list[Word] = []
    i = 0
    while i < len(args):
        w = args[i]
        t = w.text
        if t.startswith("--in-place") or (
            t.startswith("-") and not t.startswith("--") and "i" in t[1:].split("e")[0]
        ):
            inplace = True
            i += 1
            continue
        if t in ("-e", "--expression", "-f", "--file") and i + 1 < len(args):
            script_given = True
            if t in ("-f", "--file"):
                an.claim(args[i + 1], "read")
            elif _SED_WRITE_RE.search(args[i + 1].text):
                an.uncertain("sed script that writes or executes")
            i += 2
            continue
        if t.startswith(("--expression=", "--file=")):
            script_given = True
            if t.startswith("--file="):
                an.claim(w, "read", text=t.split("=", 1)[1])
            i += 1
            continue
        if t.startswith("-") and len(t) > 1:
            if "e" in t[1:] or "f" in t[1:]:
                script_given = True
                if i + 1 < len(args):
                    if "f" in t[1:]:
                        an.claim(args[i + 1], "read")
                    i += 2
                    continue
            i += 1
            continue
        operands.append(w)
        i += 1
    if not script_given and operands:
        script = operands.pop(0)
        an.claim(script, "read", bare_ok=False)
        if _SED_WRITE_RE.search(script.text):
            an.uncertain("sed script that writes or executes")
    for w in operands:
        an.claim(w, "write" if inplace else "read")


def _h_awk(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    inplace = any(w.text in ("inplace",) for w in args) or any(
        w.text == "-i" and i + 1 < len(args) and args[i + 1].text == "inplace"
        for i, w in enumerate(args)
    )
    script_given = False
    operands: list[Word] = []
    i = 0
    while i < len(args):
        w = args[i]
        t = w.text
        if t in (
            "-f",
            "--file",
            "-i",
            "--include",
            "-v",
            "--assign",
            "-F",
            "--field-separator",
            "-e",
            "--source",
        ) and i + 1 < len(args):
            if t in ("-f", "--file"):
                script_given = True
                an.claim(args[i + 1], "read")
            if t in ("-e", "--source"):
                script_given = True
                _awk_script(an, args[i + 1])
            i += 2
            continue
        if t.startswith("-") and len(t) > 1:
            i += 1
            continue
        operands.append(w)
        i += 1
    if not script_given and operands:
        _awk_script(an, operands.pop(0))
    for w in operands:
        if "=" in w.text and not _is_pathish(w.text.split("=", 1)[0]):
            continue
        an.claim(w, "write" if inplace else "read")


def _awk_script(an: _Analyzer, script: Word) -> None:
    if any(tok in script.text for tok in (">", "|", "system", "getline")):
        an.uncertain("awk script that writes, pipes or executes")
        an.code_literals(script)


def _h_find(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    starts: list[Word] = []
    i = 0
    while i < len(args) and args[i].text in ("-H", "-L", "-P", "-O0", "-O1", "-O2", "-O3"):
        i += 1
    while i < len(args) and not (args[i].text.startswith(("-", "(", "!", ")"))):
        starts.append(args[i])
        i += 1
    if not starts:
        starts = [Word(text=".")]
    expr = args[i:]
    delete = any(w.text == "-delete" for w in expr)
    for w in starts:
        an.claim(w, "write" if delete else "read", recursive=True, destructive=delete)
    j = 0
    while j < len(expr):
        t = expr[j].text
        if t in ("-exec", "-execdir", "-ok", "-okdir"):
            k = j + 1
            inner: list[Word] = []
            while k < len(expr) and expr[k].text not in (";", "+"):
                inner.append(expr[k])
                k += 1
            j = k + 1
            if not inner:
                continue
            expanded: list[Word] = []
            for w in inner:
                if "{}" in w.text:
                    for s in starts:
                        expanded.append(
                            Word(
                                text=w.text.replace("{}", s.text),
                                pattern=w.text,
                                expansion=w.expansion,
                            )
                        )
                else:
                    expanded.append(w)
            before = len(an.result.claims)
            an.command(expanded)
            for c in an.result.claims[before:]:
                c.recursive = True
            continue
        if t in ("-fprint", "-fprint0", "-fprintf", "-fls") and j + 1 < len(expr):
            an.claim(expr[j + 1], "write")
            j += 2
            continue
        if t in ("-newer", "-anewer", "-cnewer", "-samefile") and j + 1 < len(expr):
            an.claim(expr[j + 1], "read")
            j += 2
            continue
        j += 1


def _h_grep(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    """grep/rg/ag/ack: the first operand is the pattern unless -e/-f/--regexp give it."""
    pattern_given = False
    value_opts = {
        "-e",
        "--regexp",
        "-f",
        "--file",
        "-g",
        "--glob",
        "-t",
        "--type",
        "-T",
        "--type-not",
        "-m",
        "--max-count",
        "-A",
        "-B",
        "-C",
        "--context",
        "-j",
        "--threads",
        "--include",
        "--exclude",
        "--exclude-dir",
        "-M",
        "--max-columns",
        "--color",
        "--colour",
        "-d",
        "--directories",
        "-D",
        "--devices",
        "--label",
        "--exclude-from",
        "--ignore-file",
        "--pre",
        "-E",
        "--encoding",
    }
    recursive = name in ("rg", "ag", "ack") or any(
        w.text in ("-r", "-R", "--recursive", "--dereference-recursive")
        or (
            w.text.startswith("-")
            and not w.text.startswith("--")
            and ("r" in w.text[1:] or "R" in w.text[1:])
        )
        for w in args
    )
    operands: list[Word] = []
    i = 0
    end = False
    while i < len(args):
        w = args[i]
        t = w.text
        if not end and t == "--":
            end = True
            i += 1
            continue
        if not end and t.startswith("-") and len(t) > 1:
            opt = t.split("=", 1)[0]
            if opt in ("-e", "--regexp", "-f", "--file"):
                pattern_given = True
            if opt in ("-f", "--file", "--exclude-from", "--ignore-file", "--pre"):
                value = (
                    t.split("=", 1)[1]
                    if "=" in t
                    else (args[i + 1].text if i + 1 < len(args) else "")
                )
                if value:
                    an.claim(Word(text=value), "read", text=value)
            if opt in value_opts and "=" not in t:
                i += 2
                continue
            i += 1
            continue
        operands.append(w)
        i += 1
    if not pattern_given and operands:
        operands = operands[1:]
    for w in operands:
        an.claim(w, "read", recursive=recursive)
    if recursive and not operands:
        an.claim(Word(text="."), "read", recursive=True, text=".")


def _h_eval(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    if any(w.expansion or w.glob for w in args):
        an.uncertain("eval of a non-literal command")
    an.run_string(" ".join(w.text for w in args))


def _h_source(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    if args:
        an.claim(args[0], "read")
        an.uncertain(f"{name} runs the commands of a file")
    for w in args[1:]:
        an.claim(w, "either")


def _h_su(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    for i, w in enumerate(args):
        if w.text in ("-c", "--command"):
            an.payload(args[i + 1] if i + 1 < len(args) else None, f"{name} -c")
            return
        if w.text.startswith("--command="):
            an.payload(Word(text=w.text.split("=", 1)[1]), f"{name} -c")
            return
    an.uncertain(f"{name} starts a shell")


def _h_curl(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    value_opts: dict[str, ClaimOp] = {
        "-o": "write",
        "--output": "write",
        "-c": "write",
        "--cookie-jar": "write",
        "-D": "write",
        "--dump-header": "write",
        "--trace": "write",
        "--trace-ascii": "write",
        "--stderr": "write",
        "--output-dir": "write",
        "--create-dirs": "write",
        "-T": "read",
        "--upload-file": "read",
        "-K": "read",
        "--config": "read",
        "-b": "read",
        "--cookie": "read",
        "--cacert": "read",
        "--cert": "read",
        "--key": "read",
        "--netrc-file": "read",
        "-E": "read",
    }
    data_opts = {
        "-d",
        "--data",
        "--data-binary",
        "--data-raw",
        "--data-urlencode",
        "-F",
        "--form",
        "--json",
    }
    remote_name = False
    i = 0
    while i < len(args):
        w = args[i]
        t = w.text
        if t in data_opts and i + 1 < len(args):
            _data_ref(an, args[i + 1])
            i += 2
            continue
        if t.split("=", 1)[0] in data_opts and "=" in t and t.startswith("--"):
            _data_ref(an, Word(text=t.split("=", 1)[1]))
        elif t in ("-O", "--remote-name", "--remote-name-all", "-J") or (
            t.startswith("-") and not t.startswith("--") and "O" in t[1:]
        ):
            remote_name = True
        i += 1
    an.generic(name, [w for w in args], "either", value_opts=value_opts)
    if remote_name:
        an.claim(Word(text="."), "write", text=".")


def _data_ref(an: _Analyzer, word: Word) -> None:
    text = word.text
    if "@" in text:
        ref = text.split("@", 1)[1]
        if ref and ref != "-":
            an.claim(word, "read", text=ref.split(";", 1)[0])
    elif text.startswith("<"):
        an.claim(word, "read", text=text[1:])


def _h_wget(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    value_opts: dict[str, ClaimOp] = {
        "-O": "write",
        "--output-document": "write",
        "-o": "write",
        "--output-file": "write",
        "-a": "write",
        "--append-output": "write",
        "-P": "write",
        "--directory-prefix": "write",
        "-i": "read",
        "--input-file": "read",
        "--load-cookies": "read",
        "--save-cookies": "write",
        "--post-file": "read",
        "--body-file": "read",
    }
    an.generic(name, args, "either", value_opts=value_opts)
    if not any(w.text.startswith(("-O", "--output-document")) for w in args):
        an.claim(Word(text="."), "write", text=".")


def _h_tar(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    mode = ""
    archive: list[Word] = []
    directory: Word | None = None
    operands: list[Word] = []
    i = 0
    first = True
    while i < len(args):
        w = args[i]
        t = w.text
        cluster: str | None = None
        if t.startswith("--"):
            opt, _, value = t.partition("=")
            key = opt[2:]
            if key in ("create", "append", "update", "catenate", "concatenate"):
                mode = "c"
            elif key in ("extract", "get"):
                mode = "x"
            elif key in ("list", "diff", "compare"):
                mode = "t"
            elif key in ("file", "directory", "files-from", "exclude-from"):
                target = Word(text=value) if value else (args[i + 1] if i + 1 < len(args) else None)
                if not value:
                    i += 1
                if target is not None:
                    if key == "file":
                        archive.append(target)
                    elif key == "directory":
                        directory = target
                    else:
                        an.claim(target, "read")
            i += 1
            first = False
            continue
        if t.startswith("-") and len(t) > 1:
            cluster = t[1:]
        elif first and t and t.isalpha():
            cluster = t
        first = False
        if cluster is None:
            operands.append(w)
            i += 1
            continue
        j = 0
        while j < len(cluster):
            ch = cluster[j]
            if ch in "crAu":
                mode = "c"
            elif ch == "x":
                mode = "x"
            elif ch in "td":
                mode = mode or "t"
            if ch in "fCTX":
                rest = cluster[j + 1 :]
                if rest:
                    value_word = Word(text=rest)
                else:
                    i += 1
                    value_word = args[i] if i < len(args) else Word()
                if ch == "f":
                    archive.append(value_word)
                elif ch == "C":
                    directory = value_word
                else:
                    an.claim(value_word, "read")
                break
            j += 1
        i += 1
    archive_op: ClaimOp = {"c": "write", "x": "read", "t": "read"}.get(mode, "either")  # type: ignore[assignment]
    for a in archive:
        an.claim(a, archive_op)
    saved = list(an.bases)
    if directory is not None:
        an.claim(directory, "write" if mode == "x" else "either")
        an.cd(directory)
    if mode == "x":
        an.claim(Word(text="."), "write", recursive=True, text=".")
        for w in operands:
            an.claim(w, "write")
    else:
        for w in operands:
            an.claim(w, "read" if mode == "c" else "either", recursive=True)
    an.bases = saved


def _h_zip(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    collector = _Collector()
    operands = collector.collect(
        an, name, args, {"-x": "read", "-i": "read", "-b": "write", "-O": "write", "--out": "write"}
    )
    if not operands:
        return
    an.claim(operands[0], "write")
    recursive = any(
        f in ("-r", "-R", "--recurse-paths") or (not f.startswith("--") and "r" in f[1:])
        for f in collector.flags
    )
    for w in operands[1:]:
        an.claim(w, "read", recursive=recursive)


def _h_unzip(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    collector = _Collector()
    operands = collector.collect(an, name, args, {"-d": "write", "-x": "read"})
    for w in operands[:1]:
        an.claim(w, "read")
    for w in operands[1:]:
        an.claim(w, "write")
    if "-d" not in collector.flags and not any(
        f in ("-l", "-t", "-p", "-Z") for f in collector.flags
    ):
        an.claim(Word(text="."), "write", recursive=True, text=".")


def _h_sort(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    an.generic(
        name,
        args,
        "read",
        value_opts={
            "-o": "write",
            "--output": "write",
            "-T": "write",
            "--temporary-directory": "write",
            "--files0-from": "read",
        },
    )


def _h_uniq(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    collector = _Collector()
    operands = collector.collect(an, name, args, {"-f": "read", "-s": "read", "-w": "read"})
    for k, w in enumerate(operands):
        an.claim(w, "write" if k == 1 else "read")


def _h_split(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    collector = _Collector()
    operands = collector.collect(
        an, name, args, {"-l": "read", "-b": "read", "-n": "read", "-a": "read", "-C": "read"}
    )
    for k, w in enumerate(operands):
        an.claim(w, "write" if k >= 1 else "read")
    if len(operands) < 2:
        an.claim(Word(text="."), "write", text=".")


def _h_patch(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    operands = an.generic(
        name,
        args,
        "write",
        value_opts={
            "-i": "read",
            "--input": "read",
            "-o": "write",
            "--output": "write",
            "-d": "read",
            "--directory": "read",
            "-r": "write",
            "-B": "write",
        },
    )
    if not operands:
        an.uncertain("patch writes the files named in the patch")


def _h_git(an: _Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    i = 0
    while i < len(args):
        t = args[i].text
        if t in ("-C", "--git-dir", "--work-tree", "-c", "--namespace", "--exec-path"):
            if i + 1 < len(args):
                if t != "-c":
                    an.claim(args[i + 1], "either")
                    if t in ("-C", "--work-tree"):
                        an.cd(args[i + 1])
                elif "alias." in args[i + 1].text or "!" in args[i + 1].text:
                    an.uncertain("git -c with an alias or shell command")
            i += 2
            continue
        if t.startswith(("--git-dir=", "--work-tree=")):
            an.claim(args[i], "either", text=t.split("=", 1)[1])
            i += 1
            continue
        if t.startswith("-"):
            i += 1
            continue
        break
    if i >= len(args):
        return
    sub = args[i].text
    rest = args[i + 1 :]
    if sub == "add":
        an.generic(name, rest, "read", value_opts={"--pathspec-from-file": "read"})
        for w in rest:
            if not w.text.startswith("-"):
                an.claim(w, "read", recursive=True)
        if any(w.text in ("-A", "--all", "-u", "--update") for w in rest):
            an.claim(Word(text="."), "read", recursive=True, text=".")
        return
    if sub in _GIT_WORKTREE:
        an.generic(name, rest, "either")
        an.claim(Word(text="."), "either", recursive=True, text=".")
        return
    if sub in ("config",) and any("alias" in w.text or "core." in w.text for w in rest):
        an.uncertain("git config can install commands")
    an.generic(
        name,
        rest,
        "either" if sub in ("archive", "bundle", "format-patch") else "read",
        value_opts={"-o": "write", "--output": "write", "--output-directory": "write"},
    )


_HANDLERS: dict[str, Handler] = {
    "grep": _h_grep,
    "egrep": _h_grep,
    "fgrep": _h_grep,
    "zgrep": _h_grep,
    "rg": _h_grep,
    "ag": _h_grep,
    "ack": _h_grep,
    "cd": _h_cd,
    "pushd": _h_cd,
    "tee": _h_tee,
    "dd": _h_dd,
    "sed": _h_sed,
    "gsed": _h_sed,
    "awk": _h_awk,
    "gawk": _h_awk,
    "mawk": _h_awk,
    "nawk": _h_awk,
    "find": _h_find,
    "eval": _h_eval,
    "source": _h_source,
    ".": _h_source,
    "su": _h_su,
    "runuser": _h_su,
    "curl": _h_curl,
    "wget": _h_wget,
    "tar": _h_tar,
    "bsdtar": _h_tar,
    "gtar": _h_tar,
    "zip": _h_zip,
    "unzip": _h_unzip,
    "sort": _h_sort,
    "uniq": _h_uniq,
    "split": _h_split,
    "csplit": _h_split,
    "patch": _h_patch,
    "git": _h_git,
}


def analyze(command: str) -> Analysis:
    """Parse ``command`` and collect claims, invoked commands and uncertainties."""
    an = _Analyzer()
    if "\x00" in command:
        an.uncertain("NUL byte in the command")
        return an.result
    parsed = parse(command)
    if parsed.error:
        an.uncertain(f"unparsable command: {parsed.error}")
    top = [c for c in parsed.commands if not c.nested]
    nested = [c for c in parsed.commands if c.nested]
    for cmd in top:
        an.visit(cmd)
    if nested:
        an.bases = list(an.all_bases)
        for cmd in nested:
            an.visit(cmd)
    return an.result


def invocations(command: str) -> list[Invocation]:
    """The commands ``command`` runs, normalised, for the static command rules."""
    result = analyze(command)
    out = list(result.invocations)
    if any(r.startswith("unparsable") or r.startswith("NUL") for r in result.uncertain):
        out.append(Invocation(words=[], unknown=True))
    return out


# --------------------------------------------------------------------------- judging

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


__all__ = [
    "Analysis",
    "Claim",
    "Invocation",
    "analyze",
    "decide_command",
    "extract_path_claims",
    "invocations",
    "is_pseudo_device",
    "judge_command",
]
