"""One table from command name to handler, and the entry points that use it.

Later families override earlier ones, so the order below is the lookup priority
(lowest first); a name in no table is scanned by :meth:`Analyzer.generic`.
"""

from __future__ import annotations

from lovia.workspace._shell import Word, parse
from lovia.workspace.command_guard import (
    archives,
    build,
    containers,
    editors,
    files,
    interpreters,
    net,
    packages,
    vcs,
    wrappers,
)
from lovia.workspace.command_guard.core import Analysis, Analyzer, Handler, Invocation

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


def _no_files(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    """Builtins and tools that take no file arguments."""


def _h_export(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    """``export NAME=value``: the same as an assignment before a command (``PATH=…``)."""
    for w in args:
        if "=" in w.text and not w.text.startswith(("-", "=")):
            an.assignment(w, bare_ok=False)
            if w.expansion:
                an.uncertain("shell expansion in an assignment")


def _h_alias(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    """``alias ls='cat .env'``: the value is a command the shell runs later (by that name)."""
    for w in args:
        _name, sep, value = w.text.partition("=")
        if sep:
            an.uncertain("alias defines a command")
            an.run_string(value)
            if w.expansion:
                an.uncertain("alias with a non-literal command")


HANDLERS: dict[str, Handler] = {
    **files.HANDLERS,
    **interpreters.HANDLERS,
    **dict.fromkeys(_NO_FILE_ARGS, _no_files),
    **wrappers.HANDLERS,
    **archives.HANDLERS,
    **net.HANDLERS,
    **vcs.HANDLERS,
    **build.HANDLERS,
    **packages.HANDLERS,
    **containers.HANDLERS,
    **editors.HANDLERS,
    **dict.fromkeys(("export", "local", "declare", "typeset", "readonly"), _h_export),
    "alias": _h_alias,
}


def analyze(command: str) -> Analysis:
    """Parse ``command`` and collect claims, invoked commands and uncertainties."""
    an = Analyzer(HANDLERS)
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
