"""Commands that run other commands: wrappers (``env``, ``sudo``, ``xargs``...), runners
(``uv run``, ``npx``...) and shell builtins that run code (``eval``, ``source``, ``su -c``)."""

from __future__ import annotations

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.argv import tail_word
from lovia.workspace.command_guard.core import Analyzer, Handler

_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R"}),
    "doas": frozenset({"-u", "-C"}),
    "nice": frozenset({"-n"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o", "--output", "--format"}),
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
        {"-o", "--output", "-e", "-p", "-s", "-E", "-P", "-u", "-a", "-b", "-I", "-O", "-S", "-X"}
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


def wrapper(an: Analyzer, name: str, args: list[Word], heredoc: str | None = None) -> None:
    value_opts = _WRAPPERS[name]
    i = 0
    while i < len(args):
        t = args[i].text
        if name == "env" and "=" in t and not t.startswith("-"):
            assigned = t.split("=", 1)[1]
            if assigned:
                an.claim(args[i], "read", text=assigned, bare_ok=False)
            i += 1
            continue
        if t == "--":
            i += 1
            break
        if not t.startswith("-") or t == "-":
            break
        opt = t.split("=", 1)[0]
        # the option's value: glued (-C/x), after '=' (--chdir=/x) or the next word
        value: Word | None = None
        glued = False
        if not t.startswith("--"):
            # a cluster: the first letter that takes a value ends it (-iC/x, -ra FILE)
            j = next((j for j in range(1, len(t)) if "-" + t[j] in value_opts), 0)
            if j:
                opt = "-" + t[j]
                glued = j + 1 < len(t)
                if glued:
                    value = tail_word(args[i], j + 1)
                elif i + 1 < len(args):
                    value = args[i + 1]
        if value is None and t.startswith("--"):
            if "=" in t:
                value = tail_word(args[i], len(opt) + 1)
            elif opt in value_opts and i + 1 < len(args):
                value = args[i + 1]
        if name == "env" and opt in ("-S", "--split-string"):
            an.payload(value, "env -S")
            return
        targets = [] if value is None else [value]
        if glued and value is not None and value.text.startswith("="):
            targets.append(tail_word(value, 1))  # -C=/x: judge "/x" too
        for target in targets:
            if name == "env" and opt in ("-C", "--chdir"):
                an.claim(target, "read")
                an.cd(target)
            elif name in ("time", "strace", "ltrace") and opt in ("-o", "--output"):
                an.claim(target, "write")
            elif name == "xargs" and opt in ("-a", "--arg-file"):
                an.claim(target, "read")
        if opt in value_opts and not glued and ("=" not in t or not t.startswith("--")):
            i += 2
        else:
            i += 1
    rest = args[i:]
    skip = _WRAPPER_SKIP_OPERANDS.get(name, 0)
    if name == "flock" and len(rest) >= 2 and rest[1].text in ("-c", "--command"):
        an.claim(rest[0], "write")
        an.payload(rest[2] if len(rest) > 2 else None, "flock -c")
        return
    if name == "flock" and rest:
        an.claim(rest[0], "write")
    rest = rest[skip:]
    if name == "command" and args and args[0].text in ("-v", "-V"):
        return
    if name == "xargs":
        an.uncertain("xargs appends arguments read from its input")
        if not rest:
            return
    if name in ("watch", "parallel") and rest:
        an.run_string(" ".join(w.text for w in rest))
        if any(w.expansion for w in rest):
            an.uncertain(f"{name} with a non-literal command")
        return
    if rest:
        an.command(rest)


def runner_wrapper(an: Analyzer, value_opts: frozenset[str], args: list[Word]) -> None:
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
                an.payload(Word(text=t.split("=", 1)[1]), "npm exec -c")
            else:
                an.payload(args[i + 1] if i + 1 < len(args) else None, "npm exec -c")
            return
        if opt in ("--directory", "--project", "-C"):
            if "=" in t:
                an.claim(tail_word(args[i], len(opt) + 1), "read")
            elif i + 1 < len(args):
                an.claim(args[i + 1], "read")
        elif t.startswith("-C"):  # glued: -C/x
            an.claim(tail_word(args[i], 2), "read")
        i += 2 if (opt in value_opts and "=" not in t) else 1
    rest = args[i:]
    if rest:
        an.command(rest)


def runner(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    """``uv run CMD``, ``npx CMD``...: judge the command they run; else a generic tool."""
    if args and (name, args[0].text) in _RUNNERS:
        runner_wrapper(an, _RUNNERS[(name, args[0].text)], args[1:])
    elif (name, "") in _RUNNERS:
        runner_wrapper(an, _RUNNERS[(name, "")], args)
    else:
        an.generic(name, args, "either")


def _h_eval(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    if any(w.expansion or w.glob for w in args):
        an.uncertain("eval of a non-literal command")
    an.run_string(" ".join(w.text for w in args))


def _h_source(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    if args:
        an.claim(args[0], "read")
        an.uncertain(f"{name} runs the commands of a file")
    for w in args[1:]:
        an.claim(w, "either")


def _h_su(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    for i, w in enumerate(args):
        if w.text in ("-c", "--command"):
            an.payload(args[i + 1] if i + 1 < len(args) else None, f"{name} -c")
            return
        if w.text.startswith("--command="):
            an.payload(Word(text=w.text.split("=", 1)[1]), f"{name} -c")
            return
    an.uncertain(f"{name} starts a shell")


HANDLERS: dict[str, Handler] = {
    **{tool: runner for tool, _sub in _RUNNERS},
    **dict.fromkeys(_WRAPPERS, wrapper),
    "eval": _h_eval,
    "source": _h_source,
    ".": _h_source,
    "su": _h_su,
    "runuser": _h_su,
}
