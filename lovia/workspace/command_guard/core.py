"""The guard's core: claims, the analyzer that walks parsed commands, the generic scan.

Program-specific handlers live in the family modules (:mod:`.files`, :mod:`.vcs`...);
:mod:`.dispatch` puts them in one table that the analyzer consults by command name.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Literal

from lovia.workspace._shell import SimpleCommand, Word, escape_glob, parse
from lovia.workspace.command_guard.argv import OptValue, Scan, scan_argv, tail_word
from lovia.workspace.command_guard.lexical import is_pseudo_device

ClaimOp = Literal["read", "write", "either"]


#: ``(path as the program prints it, base name, kind f/d/l/o)`` -> (printed?, pruned?)
Shown = Callable[[str, str, str], tuple[bool, bool]]


@dataclass
class CommandWalk:
    """How a recursive command walks a tree, where the program says so precisely.

    The guard's default is strict: every entry below is read. Listing programs
    (``find``, ``ls -R``, ``tree``, ``du``) only print *names*; a searcher such as ``rg``
    skips hidden entries; ``grep --exclude-dir`` skips directories. The read-only
    judgement (:mod:`.readonly`) uses this to tell a listing of names in allowed
    directories from one that shows what is inside a denied directory.
    """

    names_only: bool = False
    skip_hidden: bool = False
    skip_dirs: tuple[str, ...] = ()
    max_depth: int | None = None
    shown: Shown | None = None


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
    walk: CommandWalk | None = None
    #: an option's value found by the generic scan (``-n5``, ``--since=2.weeks``): the
    #: read-only judgement replaces these with the table's own path options
    from_option: bool = False


@dataclass
class HistoryUse:
    """A git command that prints what the repository's objects hold (``show``, ``log -p``).

    ``pathspecs`` limit it (None: unlimited or not literal; ``maybe_paths`` are operands
    before ``--`` that limit it when they exist, as git decides); ``paths`` are paths it
    names inside revisions (``HEAD:.env``), relative to the repository's top unless they
    start with ``./`` or ``../``; ``any_object`` is set when it may print objects by id;
    ``elsewhere`` when ``--git-dir``/``--work-tree`` point git at another repository.
    """

    bases: tuple[str, ...] = ("",)
    pathspecs: tuple[str, ...] | None = None
    paths: tuple[str, ...] = ()
    any_object: bool = False
    maybe_paths: tuple[str, ...] = ()
    elsewhere: bool = False
    #: every operand is a ``REV:PATH``: only those paths are printed
    only_paths: bool = False
    #: ``git diff``/``git grep`` without revisions: only the index's files are printed
    #: (when every operand before ``--`` turns out to be a path)
    index_only: bool = False


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
    history: list[HistoryUse] = field(default_factory=list)


_RESERVED = frozenset(
    {"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time"}
)
_HEADER_KEYWORDS = frozenset({"for", "select", "case", "function", "in", "esac"})
_ALWAYS_RECURSIVE = frozenset({"rg", "ag", "ack", "tree", "du", "find"})
_RECURSIVE_FLAGS = frozenset(
    {"-r", "-R", "--recursive", "-a", "--archive", "--dereference-recursive"}
)
_DESTRUCTIVE = frozenset({"rm", "shred", "unlink", "rmdir"})
# programs whose clustered short -r/-R means "recursive"
_SHORT_R_RECURSIVE = frozenset(
    {
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
    }
)
# recursive programs that walk "." when given no operand
_DEFAULT_DOT = frozenset({"rg", "ag", "ack", "tree", "du", "grep", "egrep", "fgrep", "find", "ls"})

_FILE_URL_RE = re.compile(r"(?i)^(?:[a-z0-9+.-]*\+)?file:(?://[^/]*)?(/.*)$")
_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_QUOTED_LITERAL_RE = re.compile(r"""(?:'([^'\n]{1,4096})'|"([^"\n]{1,4096})")""")
_MAX_BASES = 8
# environment variables that carry a program's options (MAKEFLAGS, NODE_OPTIONS...)
_OPTION_VARIABLE_SUFFIXES = ("FLAGS", "OPTIONS", "OPTS", "ARGS")
# environment variables whose value is a command some program runs (judged as a command)
PROGRAM_VARIABLES = frozenset(
    {
        "GIT_EXTERNAL_DIFF",
        "GIT_PAGER",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_ASKPASS",
        "GIT_PROXY_COMMAND",
        "PAGER",
        "MANPAGER",
        "SYSTEMD_PAGER",
        "EDITOR",
        "VISUAL",
        "BROWSER",
        "SSH_ASKPASS",
        "SUDO_ASKPASS",
        "LESSOPEN",
        "LESSCLOSE",
        "RSYNC_RSH",
        "RSYNC_CONNECT_PROG",
        "CVS_RSH",
        "PROMPT_COMMAND",
    }
)
# environment variables that load code or configuration the guard cannot see
LOADER_VARIABLES = frozenset(
    {
        "PATH",
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "DYLD_INSERT_LIBRARIES",
        "DYLD_LIBRARY_PATH",
        "BASH_ENV",
        "ENV",
        "GIT_CONFIG",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_EXEC_PATH",
        "GIT_TEMPLATE_DIR",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_COMMON_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_INDEX_FILE",
        "GIT_NAMESPACE",
        "PERL5OPT",
        "RUBYOPT",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "RIPGREP_CONFIG_PATH",
        "CURL_HOME",
        "WGETRC",
        "TAR_OPTIONS",
        "GZIP",
        "LESSKEYIN",
        "INPUTRC",
    }
)
_LOADER_PREFIXES = ("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_")
# environment variables naming a file the program writes (GIT_TRACE=/tmp/x)
_WRITE_VARIABLE_PREFIXES = ("GIT_TRACE",)


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


Handler = Callable[["Analyzer", str, list[Word], "str | None"], None]


class Analyzer:
    """Walks parsed commands and records claims, invocations and uncertainties."""

    def __init__(self, handlers: Mapping[str, Handler]) -> None:
        self.handlers = handlers
        self.result = Analysis()
        self.bases: list[str] = [""]
        self.all_bases: list[str] = [""]
        self.depth = 0
        self._option_values = False

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
        walk: CommandWalk | None = None,
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
                walk=walk,
                from_option=self._option_values,
            )
        )

    def assignment(self, word: Word, *, bare_ok: bool = True) -> None:
        """``NAME=value``: the value may be a path; ``*FLAGS``/``*OPTIONS`` hold options.

        ``MAKEFLAGS='-f x'``, ``NODE_OPTIONS='-r x'``, ``CFLAGS='-include x'`` pass
        paths to the program through the environment: each word is claimed.
        """
        name, _, value = word.text.partition("=")
        name = name.rstrip("+")
        if name in LOADER_VARIABLES or name.startswith(_LOADER_PREFIXES):
            self.uncertain(f"{name} changes what programs load or run")
        if not value:
            return
        if name in PROGRAM_VARIABLES:
            self.payload(tail_word(word, len(word.text) - len(value)), f"{name}=")
        op: ClaimOp = "write" if name.startswith(_WRITE_VARIABLE_PREFIXES) else "read"
        self.claim(word, op, text=value, bare_ok=bare_ok)
        if name.endswith(_OPTION_VARIABLE_SUFFIXES):
            tokens = [
                Word(text=t, pattern=escape_glob(t), expansion=word.expansion)
                for t in value.split()
            ]
            for w in self.options(tokens, {}, unknown_op="either").operands:
                self.claim(w, "either")

    def glued_value(self, word: Word, op: ClaimOp) -> None:
        """``-xVALUE``: a path glued to a short option (or a cluster of flags).

        The value keeps the word's glob, so ``-f.e*`` is expanded like ``.e*``.
        """
        text = word.text
        start = next((i for i in range(2, len(text)) if text[i] in "/~."), None)
        if start is not None:
            self.claim(tail_word(word, start), op)
        if len(text) > 2 and start != 2:
            self.claim(tail_word(word, 2), op)  # bare: only an existing path counts

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
            self.assignment(assignment)
            if assignment.expansion and "=" in assignment.text:
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
        handler = self.handlers.get(name)
        if handler is not None:
            handler(self, name, args, heredoc)
            return
        self.generic(name, args, "either")

    # ------------------------------------------------------------------ generic args

    def claim_value(self, value: OptValue, op: ClaimOp) -> None:
        """Claim an option's value, whatever its spelling (``-C x``, ``-Cx``, ``--dir=x``)."""
        self.claim(value.value, op, bare_ok=True)
        if value.form == "glued" and value.value.text.startswith("=") and len(value.value.text) > 1:
            self.claim(tail_word(value.value, 1), op, bare_ok=True)  # Go style: -o=/x

    def run_values(self, scan: Scan, opts: Collection[str], what: str) -> None:
        """Analyse the values of ``opts`` as shell commands the program runs."""
        for v in scan.values:
            if v.opt in opts:
                self.payload(v.value, f"{what} {v.opt}")

    def options(
        self,
        args: list[Word],
        value_opts: Mapping[str, ClaimOp | None],
        *,
        unknown_op: ClaimOp | None = None,
        stop_at_operand: bool = False,
        clusters: bool = True,
        code: Collection[str] = (),
    ) -> Scan:
        """Scan ``args`` with the shared argv scanner and claim every option value.

        Declared options (``value_opts``) claim their value with the mapped op (``None``:
        the value is not a path, so only a path-looking value is claimed, as ``either``;
        ``code`` options hold shell code, judged by the caller). Undeclared
        ``--opt=value`` and glued short options claim what looks like a path, with
        ``unknown_op`` (``None``: guessed from the option name).
        """
        sc = scan_argv(
            args,
            value_opts,
            stop_at_operand=stop_at_operand,
            clusters=clusters,
            prefixes=[o for o, op in value_opts.items() if op is not None],
        )
        self._option_values = True
        try:
            for v in sc.values:
                op = value_opts.get(v.opt)
                if op is not None:
                    self.claim_value(v, op)
                elif v.opt not in code:  # not a path; a path-looking value is still judged
                    self.claim(v.value, "either", bare_ok=False)
            for v in sc.unknown_values:
                vop = unknown_op or _guess_option_op(v.opt)
                self.claim(v.value, vop)
            for w in sc.unknown:
                self.glued_value(w, unknown_op or _guess_option_op(w.text[:2]))
        finally:
            self._option_values = False
        return sc

    def generic(
        self,
        name: str,
        args: list[Word],
        op: ClaimOp,
        *,
        value_opts: Mapping[str, ClaimOp | None] | None = None,
        skip_first_operand: bool = False,
        clusters: bool = True,
    ) -> list[Word]:
        """Claim operands with ``op``; option values by ``value_opts`` or by their name."""
        value_opts = value_opts or {}
        flags = {w.text for w in args if w.text.startswith("-")}
        recursive = (
            name in _ALWAYS_RECURSIVE
            or bool(flags & _RECURSIVE_FLAGS)
            or any(
                f.startswith("-")
                and not f.startswith("--")
                and ("r" in f[1:] or "R" in f[1:])
                and name in _SHORT_R_RECURSIVE
                for f in flags
            )
        )
        destructive = name in _DESTRUCTIVE or (name == "find" and "-delete" in flags)
        operands = self.options(args, value_opts, clusters=clusters).operands
        if skip_first_operand and operands:
            operands = operands[1:]
        for w in operands:
            if "=" in w.text and not w.text.startswith("="):
                key, value = w.text.split("=", 1)
                if value and not _is_pathish(key):
                    self.claim(w, op, text=value, bare_ok=op != "either")
            self.claim(w, op, recursive=recursive, destructive=destructive, bare_ok=True)
        if recursive and not operands and name in _DEFAULT_DOT:
            self.claim(Word(text="."), op, recursive=True, text=".")
        return operands

    # ------------------------------------------------------------------ families

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

    def code_literals(self, word: Word) -> None:
        """Claim quoted path-looking literals inside inline code (best effort)."""
        for m in _QUOTED_LITERAL_RE.finditer(word.text):
            literal = m.group(1) or m.group(2) or ""
            if _is_pathish(literal) and " " not in literal.strip():
                self.claim(Word(text=literal), "either", text=literal)


class _Collector:
    """Split args into operands, claiming option values on the way (unknown values: either)."""

    def __init__(self) -> None:
        self.flags: set[str] = set()

    def collect(
        self, an: Analyzer, name: str, args: list[Word], value_opts: Mapping[str, ClaimOp | None]
    ) -> list[Word]:
        sc = an.options(args, value_opts, unknown_op="either")
        self.flags = {w.text.split("=", 1)[0] for w in args if w.text.startswith("-")}
        self.flags |= sc.flags
        return sc.operands
