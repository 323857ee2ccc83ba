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


def _no_files(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    """Builtins and tools that take no file arguments."""


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
