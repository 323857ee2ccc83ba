"""Version control: ``git`` (global ``-C``/``--git-dir``/``--work-tree`` and subcommands)."""

from __future__ import annotations

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.argv import scan_argv
from lovia.workspace.command_guard.core import Analyzer, Handler

# global options that take a value (all but -c / --config-env name a path)
_GIT_GLOBAL: dict[str, None] = dict.fromkeys(
    ("-C", "--git-dir", "--work-tree", "-c", "--config-env", "--namespace", "--exec-path")
)
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


def _h_git(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    sc = scan_argv(args, _GIT_GLOBAL, stop_at_operand=True)
    for v in sc.values:
        if v.opt in ("-c", "--config-env"):
            key = v.value.text.lower()
            if "alias." in key or "!" in key or key.startswith("core."):
                an.uncertain("git -c with an alias, core setting or shell command")
            continue
        an.claim_value(v, "either")
        if v.opt in ("-C", "--work-tree"):
            an.cd(v.value)
    if not sc.operands:
        return
    sub = sc.operands[0].text
    rest = sc.operands[1:]
    if sub == "add":
        operands = an.generic(name, rest, "read", value_opts={"--pathspec-from-file": "read"})
        for w in operands:
            an.claim(w, "read", recursive=True)
        if scan_argv(rest, {"--pathspec-from-file": None}).has("-A", "--all", "-u", "--update"):
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


HANDLERS: dict[str, Handler] = {"git": _h_git}
