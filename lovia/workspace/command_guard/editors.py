"""Editors and debuggers: programs with a command language of their own.

``vim -c '!cat .env'``, ``vim -es``, ``emacs --batch --eval '(shell-command …)'``,
``gdb -batch -ex 'shell …'`` and ``script -c CMD`` run commands the guard cannot parse
as shell (except ``script -c``, which is shell): those forms are uncertain, the files
they edit are claimed like any operand.
"""

from __future__ import annotations

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.argv import scan_argv
from lovia.workspace.command_guard.core import Analyzer, Handler

_VIM = frozenset({"vim", "vi", "nvim", "view", "vimdiff", "gvim", "rvim", "ex", "nex"})
_VIM_VALUES = dict.fromkeys(("-c", "--cmd", "-S", "-s", "-u", "-U", "-w", "-W", "-T", "-i"))
_VIM_COMMANDS = frozenset({"-c", "--cmd", "-S", "-s", "-u", "-U", "-e", "-E", "-es", "-Es"})
_EMACS = frozenset({"emacs", "emacsclient", "xemacs"})
_EMACS_COMMANDS = frozenset(
    {"--eval", "-l", "--load", "-f", "--funcall", "--batch", "-batch", "--script", "-x"}
    | {"-e", "--execute", "--exec"}
)
_DEBUGGERS: dict[str, tuple[str, ...]] = {
    "gdb": ("-ex", "--eval-command", "-x", "--command", "-iex", "-ix", "--init-command"),
    "lldb": ("-o", "--one-line", "-s", "--source", "-O", "-S", "-k"),
}


def _h_vim(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    sc = scan_argv(args, _VIM_VALUES, clusters=False)
    if (
        name in ("ex", "nex")
        or sc.flags & _VIM_COMMANDS
        or any(w.text.startswith("+") for w in args)
    ):
        an.uncertain(f"{name} runs editor commands")
    for v in sc.values:
        if v.opt in ("-S", "-s", "-u", "-U", "-i"):
            an.claim_value(v, "read")
        elif v.opt in ("-w", "-W"):
            an.claim_value(v, "write")
    for w in sc.operands:
        if not w.text.startswith("+"):
            an.claim(w, "either")


def _h_emacs(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    if any(w.text.split("=", 1)[0] in _EMACS_COMMANDS for w in args):
        an.uncertain(f"{name} evaluates Lisp")
    an.generic(name, [w for w in args if not w.text.startswith("+")], "either")


def _h_debugger(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    opts = _DEBUGGERS[name]
    if any(w.text.split("=", 1)[0] in opts for w in args) or "-batch" in (w.text for w in args):
        an.uncertain(f"{name} runs debugger commands")
    an.generic(name, args, "either")


def _h_script(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    """util-linux ``script [-c CMD] [file]``: the command is shell; the file is written."""
    values = dict.fromkeys(("-c", "--command", "-T", "--log-timing", "-I", "--log-in"))
    values.update(dict.fromkeys(("-O", "--log-out", "-B", "--log-io", "-E", "--echo")))
    sc = scan_argv(args, values)
    command = next((v.value for v in sc.values if v.opt in ("-c", "--command")), None)
    if command is None:
        an.uncertain(f"{name} starts a shell")
    else:
        an.payload(command, f"{name} -c")
    for v in sc.values:
        if v.opt not in ("-c", "--command", "-E", "--echo"):
            an.claim_value(v, "write")
    for w in sc.operands[:1]:
        an.claim(w, "write")


HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(_VIM, _h_vim),
    **dict.fromkeys(_EMACS, _h_emacs),
    **dict.fromkeys(_DEBUGGERS, _h_debugger),
    "script": _h_script,
}
