"""Shells and language interpreters: ``sh -c`` payloads are analysed as commands, inline
code (``python -c``, ``node -e``) is scanned for quoted path literals."""

from __future__ import annotations

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.argv import scan_argv, tail_word
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
# interpreter options whose value is a file or directory (module paths, include dirs)
_NODE_PATHS = dict.fromkeys(
    ("-r", "--require", "--import", "--loader", "--experimental-loader", "--env-file")
)
_PATH_OPTIONS: dict[str, dict[str, None]] = {
    "node": _NODE_PATHS,
    "nodejs": _NODE_PATHS,
    "bun": dict.fromkeys(("-r", "--preload", "--env-file", "--cwd")),
    "deno": dict.fromkeys(("--config", "-c", "--import-map", "--env-file")),
    "perl": dict.fromkeys(("-I",)),
    "ruby": dict.fromkeys(("-I", "-r", "-C")),
    "php": dict.fromkeys(("-c", "-f", "-t")),
}
_SHELL_VALUE_OPTS = frozenset({"-o", "-O", "+o", "+O", "--rcfile", "--init-file"})


def shell(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
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
                if t in ("--rcfile", "--init-file") and i + 1 < len(args):
                    an.claim(args[i + 1], "read")
                i += 2
                continue
            if t.startswith(("--rcfile=", "--init-file=")):
                an.claim(tail_word(w, t.index("=") + 1), "read")
                i += 1
                continue
            if not t.startswith("--") and "c" in t[1:]:
                payload_next = True
            i += 1
            continue
        break
    rest = args[i:]
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
    path_opts = _PATH_OPTIONS.get(name)
    if path_opts:
        for v in scan_argv(args, path_opts).values:
            an.claim_value(v, "either")
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
                an.code_literals(args[i + 1])
                skip_next = True
        if name == "perl" and t.startswith("-") and not t.startswith("--") and "i" in t[1:]:
            inplace = True
        if not t.startswith("-"):
            operands.append(w)
    for w in operands:
        an.claim(w, "write" if inplace else "either")
    if not saw_code and not operands and heredoc is not None:
        an.code_literals(Word(text=heredoc))


HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(_INTERPRETERS, interpreter),
    **dict.fromkeys(_SHELLS, shell),
}
