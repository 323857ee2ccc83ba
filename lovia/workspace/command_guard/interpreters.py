"""Shells and language interpreters: ``sh -c`` payloads are analysed as commands, inline
code (``python -c``, ``node -e``) is scanned for quoted path literals."""

from __future__ import annotations

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.argv import scan_argv
from lovia.workspace.command_guard.core import Analyzer, Handler

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
# per interpreter: (options whose value is code, options whose value is a path,
# options whose value is only ever glued: perl -i.bak, -Mstrict)
_Options = tuple[dict[str, None], dict[str, None], frozenset[str]]
_PYTHON: _Options = (
    dict.fromkeys(("-c",)),
    dict.fromkeys(("-W", "-X", "-Q", "-m")),  # not paths: consumed so they are no operand
    frozenset(),
)
_NODE: _Options = (
    dict.fromkeys(("-e", "--eval", "-p", "--print")),
    dict.fromkeys(
        ("-r", "--require", "--import", "--loader", "--experimental-loader", "--env-file")
    ),
    frozenset(),
)
_OPTIONS: dict[str, _Options] = {
    **dict.fromkeys(("python", "python2", "python3", "pypy", "pypy3"), _PYTHON),
    "node": _NODE,
    "nodejs": _NODE,
    "bun": (
        dict.fromkeys(("-e", "--eval", "-p", "--print")),
        dict.fromkeys(("-r", "--preload", "--env-file", "--cwd")),
        frozenset(),
    ),
    "deno": ({}, dict.fromkeys(("--config", "-c", "--import-map", "--env-file")), frozenset()),
    "perl": (
        dict.fromkeys(("-e", "-E")),
        dict.fromkeys(("-I",)),
        frozenset({"-i", "-M", "-m", "-l", "-0", "-F", "-x", "-C", "-D", "-d"}),
    ),
    "ruby": (
        dict.fromkeys(("-e",)),
        dict.fromkeys(("-I", "-r", "-C")),
        frozenset({"-i", "-F", "-0", "-W", "-x", "-K", "-T", "-E"}),
    ),
    "php": (dict.fromkeys(("-r",)), dict.fromkeys(("-c", "-f", "-t", "-z")), frozenset()),
    "lua": (dict.fromkeys(("-e",)), dict.fromkeys(("-l",)), frozenset()),
}
# any other interpreter: the usual inline-code flags
_DEFAULT_OPTIONS: _Options = (
    dict.fromkeys(("-c", "-e", "-E", "-r", "--eval", "-p", "--print")),
    {},
    frozenset(),
)
_SHELL_VALUE_OPTS = dict.fromkeys(("-o", "-O", "+o", "+O", "--rcfile", "--init-file"))


def shell(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    """``sh -c CODE`` is analysed as commands; a script file is claimed, not read."""
    sc = scan_argv(args, _SHELL_VALUE_OPTS, stop_at_operand=True, plus_options=True)
    for v in sc.values:
        if v.opt in ("--rcfile", "--init-file"):
            an.claim_value(v, "read")
    payload_next = sc.has("-c", "+c")
    rest = sc.operands
    if payload_next:
        an.payload(rest[0] if rest else None, f"{name} -c")
        return
    if rest:
        # a script file: its contents are not inspected
        an.claim(rest[0], "read")
        for w in rest[1:]:
            an.claim(w, "either")
        return
    if heredoc is not None:
        an.run_string(heredoc)
    else:
        an.uncertain(f"{name} reads commands from its input")


def interpreter(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    """Claim script and argument operands; scan inline code (``-c``, ``-e``...) for paths.

    Options are scanned like the interpreter reads them, so code behind clustered
    flags (``python -Bc``, ``node -pe``, ``ruby -ne``) is found too.
    """
    code, paths, optional = _OPTIONS.get(name, _DEFAULT_OPTIONS)
    sc = scan_argv(args, {**code, **paths}, stop_at_operand=True, optional=optional)
    saw_code = False
    rest = list(sc.operands)
    for v in sc.values:
        if v.opt in code:
            saw_code = True
            an.code_literals(v.value)
            if v.form == "glued" and "-" + v.value.text in code and rest:
                an.code_literals(rest.pop(0))  # node -pe CODE: -p -e, the code comes next
        else:
            an.claim_value(v, "either")
    inplace = name in ("perl", "ruby") and sc.has("-i")
    operands = [w for w in rest if not w.text.startswith("-")]
    for w in operands:
        an.claim(w, "write" if inplace else "either")
    if not saw_code and not operands and heredoc is not None:
        an.code_literals(Word(text=heredoc))


HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(_INTERPRETERS, interpreter),
    **dict.fromkeys(_SHELLS, shell),
}
