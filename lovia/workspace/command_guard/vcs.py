"""Version control: ``git`` (global ``-C``/``--git-dir``/``--work-tree`` and subcommands)."""

from __future__ import annotations

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.core import Analyzer, Handler

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


HANDLERS: dict[str, Handler] = {"git": _h_git}
