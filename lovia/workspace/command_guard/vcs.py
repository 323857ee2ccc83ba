"""Version control: ``git`` (global ``-C``/``--git-dir``/``--work-tree`` and subcommands).

Besides the paths git works on, two things matter here:

* options and settings that make git run a program (``-c core.sshCommand=…``,
  ``--upload-pack``, ``rebase --exec``, ``submodule foreach``, ``git config diff.x.textconv
  …``): their values are analysed as commands, or the command is uncertain;
* commands that print what the repository's objects hold (``show``, ``log -p``, ``diff``,
  ``grep``, ``archive``, ``cat-file``…): a denied file that was ever committed comes back
  out of them, whatever the work tree holds. They are recorded as
  :class:`~.core.HistoryUse` and judged against the repository's history (:mod:`.judge`).
"""

from __future__ import annotations

import re

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.argv import Scan, scan_argv
from lovia.workspace.command_guard.core import Analyzer, Handler, HistoryUse

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
# configuration that makes git (or a program it starts) run a command
_EXEC_KEY_RE = re.compile(
    r"^(?:alias\.|core\.|diff\.|filter\.|gpg\.|credential|pager\.|include|sequence\.|"
    r"uploadpack\.|receive\.|sendemail\.|web\.|browser\.|man\.|difftool\.|mergetool\.|"
    r"merge\..+\.driver|interactive\.|init\.|protocol\.|remote\..+\.(?:uploadpack|"
    r"receivepack|proxy|vcs)|url\.|http\..*proxy|ssh\.|gc\.|maintenance\.|log\.showsig)",
    re.IGNORECASE,
)
# subcommands that print file contents out of the object database
_HISTORY_ALWAYS = frozenset(
    {
        "show",
        "diff",
        "grep",
        "archive",
        "format-patch",
        "range-diff",
        "fast-export",
        "bundle",
        "cat-file",
        "diff-tree",
        "diff-index",
        "diff-files",
        "stash",
        "difftool",
    }
)
# subcommands that print contents only with a patch option
_HISTORY_WITH_PATCH = frozenset({"log", "whatchanged", "reflog"})
_PATCH_FLAGS = frozenset(
    {
        "-p",
        "-u",
        "--patch",
        "-c",
        "--cc",
        "-W",
        "--function-context",
        "--patch-with-stat",
        "--patch-with-raw",
        "--combined-all-paths",
        "--textconv",
        "--ext-diff",
        "-S",
        "-G",
        "-L",
    }
)
_PATCH_PREFIXES = ("-U", "--unified", "--word-diff", "--color-words", "--pickaxe")
# value options of the history commands, so their values are not taken for operands
_HISTORY_VALUES = dict.fromkeys(
    (
        "-n",
        "--max-count",
        "--skip",
        "--since",
        "--after",
        "--until",
        "--before",
        "--author",
        "--committer",
        "--grep",
        "--date",
        "--encoding",
        "-S",
        "-G",
        "-L",
        "-e",
        "-f",
        "-A",
        "-B",
        "-C",
        "-m",
        "--max-depth",
        "--threads",
        "-o",
        "--output",
        "--output-directory",
        "--format",
        "--prefix",
        "--remote",
        "--exec",
        "--diff-filter",
        "--diff-algorithm",
        "--src-prefix",
        "--dst-prefix",
        "-O",
    )
)
_HEX_RE = re.compile(r"^[0-9a-fA-F]{4,64}$")
_REV_PATH_RE = re.compile(r"^([^:]*):(?!/)(.*)$")
# subcommands whose options run a program: option -> what
_RUNS: dict[str, dict[str, str]] = {
    "clone": {"-u": "upload-pack", "--upload-pack": "upload-pack"},
    "fetch": {"--upload-pack": "upload-pack"},
    "pull": {"--upload-pack": "upload-pack"},
    "ls-remote": {"--upload-pack": "upload-pack"},
    "archive": {"--exec": "upload-archive"},
    "push": {"--receive-pack": "receive-pack", "--exec": "receive-pack"},
    "rebase": {"-x": "exec", "--exec": "exec"},
    "difftool": {"-x": "extcmd", "--extcmd": "extcmd"},
    "send-email": {
        "--to-cmd": "to-cmd",
        "--cc-cmd": "cc-cmd",
        "--header-cmd": "header-cmd",
        "--sendmail-cmd": "sendmail-cmd",
    },
}
_FILTER_BRANCH = frozenset(
    {
        "--setup",
        "--env-filter",
        "--tree-filter",
        "--index-filter",
        "--parent-filter",
        "--msg-filter",
        "--commit-filter",
        "--tag-name-filter",
    }
)


def _config_key(an: Analyzer, text: str, where: str) -> None:
    key = text.split("=", 1)[0].strip()
    if _EXEC_KEY_RE.match(key) or "!" in text:
        an.uncertain(f"{where} sets {key or 'a setting'}, which can run commands")


def _patch(sc: Scan) -> bool:
    return bool(sc.flags & _PATCH_FLAGS) or any(f.startswith(_PATCH_PREFIXES) for f in sc.flags)


def _history(an: Analyzer, sub: str, rest: list[Word], elsewhere: bool) -> None:
    """Record what a history command may print (see :class:`~.core.HistoryUse`)."""
    sc = scan_argv(rest, _HISTORY_VALUES, optional=("--color", "--stat", "--abbrev"))
    if sub in _HISTORY_WITH_PATCH and not _patch(sc):
        return
    if sub == "diff" and sc.has("--no-index"):
        return
    if sub == "stash" and (not sc.operands or sc.operands[0].text not in ("show", "list")):
        return
    operands = list(sc.operands)
    if sub == "stash":
        operands = operands[1:]
    if sub == "grep" and not any(v.opt in ("-e", "-f") for v in sc.values) and operands:
        operands = operands[1:]  # the pattern
    if sub == "bundle":
        operands = []
    after = _after_dashdash(rest)
    maybe = [w for w in operands if w not in after]
    paths: list[str] = []
    any_object = False
    specs: list[str] = [w.text for w in after]
    rev_paths = 0
    for w in maybe:
        m = _REV_PATH_RE.match(w.text)
        if m and not w.text.startswith(":("):
            paths.append(m.group(2) or ".")
            rev_paths += 1
        elif sub in ("show", "cat-file") and _HEX_RE.match(w.text):
            any_object = True
    if sub == "cat-file" and not paths:
        any_object = True
    if any(w.expansion or w.glob for w in operands):
        an.uncertain(f"git {sub} with a revision or path that is not a literal")
    literal = all(not any(c in s for c in "*?[") and not s.startswith(":") for s in specs)
    an.result.history.append(
        HistoryUse(
            bases=tuple(an.bases),
            pathspecs=tuple(specs) if specs and literal else None,
            paths=tuple(paths),
            any_object=any_object or elsewhere,
            maybe_paths=tuple(w.text for w in maybe if ":" not in w.text),
            elsewhere=elsewhere,
            only_paths=bool(paths) and rev_paths == len(maybe) and not specs,
            index_only=sub in ("diff", "grep")
            and not paths
            and not sc.has("--cached", "--staged", "--no-index", "--untracked"),
        )
    )


def _after_dashdash(words: list[Word]) -> list[Word]:
    for i, w in enumerate(words):
        if w.text == "--":
            return words[i + 1 :]
    return []


def _runs(an: Analyzer, sub: str, rest: list[Word]) -> None:
    """Options and forms of ``sub`` that run a program: analyse them as commands."""
    opts = _RUNS.get(sub)
    if opts:
        sc = scan_argv(rest, dict.fromkeys(opts))
        for v in sc.values:
            an.payload(v.value, f"git {sub} {v.opt}")
    if sub in ("clone", "init") and any(w.text.startswith("--template") for w in rest):
        an.uncertain(f"git {sub} --template installs hooks from a directory")
    if sub == "clone":
        for v in scan_argv(rest, dict.fromkeys(("-c", "--config"))).values:
            if v.opt in ("-c", "--config"):
                _config_key(an, v.value.text, f"git clone {v.opt}")
    if sub == "submodule" and rest and rest[0].text == "foreach":
        cmd = [w for w in rest[1:] if not w.text.startswith("-")]
        an.run_string(" ".join(w.text for w in cmd))
        if any(w.expansion for w in cmd) or not cmd:
            an.uncertain("git submodule foreach with a non-literal command")
    if sub == "bisect" and rest and rest[0].text == "run":
        if len(rest) > 1:
            an.command(rest[1:])
        else:
            an.uncertain("git bisect run without a command")
    if sub == "filter-branch":
        values = scan_argv(rest, dict.fromkeys(_FILTER_BRANCH)).values
        for v in values:
            an.payload(v.value, f"git filter-branch {v.opt}")
        if not values:
            an.uncertain("git filter-branch rewrites history")
    if sub in ("difftool", "mergetool", "instaweb", "daemon"):
        an.uncertain(f"git {sub} runs a configured program")
    if sub == "grep":
        pager = ("-O", "--open-files-in-pager")
        sc = scan_argv(rest, dict.fromkeys(pager), optional=pager)
        for v in sc.values:
            if v.opt in pager:
                an.payload(v.value, "git grep -O")
        if sc.has(*pager) and not any(v.opt in pager for v in sc.values):
            an.uncertain("git grep -O starts a pager")
    if sub == "help" and any(w.text in ("-w", "--web", "-i", "--info") for w in rest):
        an.uncertain("git help starts a browser or info")
    if sub == "config":
        if any("alias" in w.text or "core." in w.text for w in rest):
            an.uncertain("git config can install commands")
        names = [w for w in rest if not w.text.startswith("-")]
        if names and (len(names) >= 2 or any(w.text.startswith("--add") for w in rest)):
            _config_key(an, names[0].text, "git config")
        if any(w.text in ("-e", "--edit") for w in rest):
            an.uncertain("git config --edit starts an editor")


_CONFIG_READS = frozenset(
    {
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--get-color",
        "--get-colorbool",
        "-l",
        "--list",
    }
)
_CONFIG_EDITS = frozenset(
    {
        "--add",
        "--replace-all",
        "--unset",
        "--unset-all",
        "--remove-section",
        "--rename-section",
        "-e",
        "--edit",
    }
)
# sub-subcommands that write the repository's configuration (or its hooks and worktrees)
_CONFIG_WRITERS: dict[str, frozenset[str]] = {
    "remote": frozenset({"add", "rename", "remove", "rm", "set-head", "set-branches", "set-url"}),
    "submodule": frozenset(
        {"add", "init", "deinit", "sync", "update", "set-branch", "set-url", "absorbgitdirs"}
    ),
    "worktree": frozenset({"add", "move", "remove", "prune", "repair", "lock", "unlock"}),
}
_BRANCH_CONFIG = frozenset(
    {
        "-u",
        "--set-upstream-to",
        "--unset-upstream",
        "-m",
        "-M",
        "--move",
        "-c",
        "-C",
        "--copy",
        "-d",
        "-D",
        "--delete",
        "--edit-description",
    }
)


def _config_writes(an: Analyzer, sub: str, rest: list[Word]) -> None:
    """Git commands that change the repository's configuration claim a write of it: the
    config is a protected path, so they ask (and their sandbox opens it) even where the
    command itself is allowed. Git's own writes (objects, refs, the index) are not claims."""
    words = [w.text for w in rest]
    target: str | None = None
    if sub == "init":
        target = ".git"
    elif sub == "config":
        if any(w.split("=", 1)[0] in _CONFIG_READS for w in words):
            return
        operands = [w for w in words if not w.startswith("-")]
        if len(operands) < 2 and not any(w.split("=", 1)[0] in _CONFIG_EDITS for w in words):
            return  # `git config user.name`: a read
        if "--global" in words:
            target = "~/.gitconfig"
        elif "--system" in words:
            target = "/etc/gitconfig"
        else:
            target = ".git/config"
    elif sub in _CONFIG_WRITERS and words and words[0] in _CONFIG_WRITERS[sub]:
        target = ".git/config" if sub != "worktree" else ".git/worktrees"
    elif sub == "branch" and any(w.split("=", 1)[0] in _BRANCH_CONFIG for w in words):
        target = ".git/config"
    if target is not None:
        an.claim(Word(text=target), "write", text=target)


def _h_git(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    sc = scan_argv(args, _GIT_GLOBAL, stop_at_operand=True)
    elsewhere = False
    for v in sc.values:
        if v.opt in ("-c", "--config-env"):
            _config_key(an, v.value.text, f"git {v.opt}")
            continue
        if v.opt == "--exec-path":
            an.uncertain("git --exec-path runs git programs from a directory")
        an.claim_value(v, "either")
        if v.opt in ("-C", "--work-tree"):
            an.cd(v.value)
        if v.opt in ("--git-dir", "--work-tree", "--namespace"):
            elsewhere = True
    if any(w.text.startswith("--exec-path=") for w in args[: len(args) - len(sc.operands)]):
        an.uncertain("git --exec-path runs git programs from a directory")
    if not sc.operands:
        return
    sub = sc.operands[0].text
    rest = sc.operands[1:]
    _runs(an, sub, rest)
    _config_writes(an, sub, rest)
    if sub in _HISTORY_ALWAYS or sub in _HISTORY_WITH_PATCH:
        _history(an, sub, rest, elsewhere)
    if sub == "add":
        operands = an.generic(name, rest, "read", value_opts={"--pathspec-from-file": "read"})
        for w in operands:
            an.claim(w, "read", recursive=True)
        if scan_argv(rest, {"--pathspec-from-file": None}).has("-A", "--all", "-u", "--update"):
            an.claim(Word(text="."), "read", recursive=True, text=".")
        return
    if sub == "stash" and rest and rest[0].text in ("list", "show"):
        an.generic(name, rest[1:], "read")
        return
    if sub in _GIT_WORKTREE:
        an.generic(name, rest, "either")
        an.claim(Word(text="."), "either", recursive=True, text=".")
        return
    an.generic(
        name,
        rest,
        "either" if sub in ("archive", "bundle", "format-patch") else "read",
        value_opts={"-o": "write", "--output": "write", "--output-directory": "write"},
    )


HANDLERS: dict[str, Handler] = {"git": _h_git}
