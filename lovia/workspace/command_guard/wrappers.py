"""Commands that run other commands: wrappers (``env``, ``sudo``, ``xargs``...), runners
(``uv run``, ``npx``...) and shell builtins that run code (``eval``, ``source``, ``su -c``)."""

from __future__ import annotations

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.argv import scan_argv, tail_word
from lovia.workspace.command_guard.core import Analyzer, ClaimOp, Handler

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
# wrappers with a large option grammar: the command they run is analysed as well as the
# guard can, and the line is uncertain (a misread option must not hide the command)
_LOOSE_WRAPPERS: dict[str, frozenset[str]] = {
    "unshare": frozenset(
        {"-S", "-G", "-R", "-w", "--setuid", "--setgid", "--root", "--wd", "--map-user"}
        | {"--map-group", "--map-users", "--map-groups", "--propagation"}
    ),
    "setpriv": frozenset(
        {"--reuid", "--regid", "--ruid", "--rgid", "--euid", "--egid", "--groups"}
        | {"--inh-caps", "--ambient-caps", "--bounding-set", "--securebits", "--pdeathsig"}
    ),
    "chroot": frozenset({"--userspec", "--groups"}),
    "systemd-run": frozenset(
        {"-p", "--property", "-u", "--unit", "--description", "--slice", "-E", "--setenv"}
        | {"--uid", "--gid", "--nice", "-H", "--host", "-M", "--machine"}
        | {"--working-directory", "--on-active", "--on-calendar"}
    ),
    "pkexec": frozenset({"--user"}),
    "xvfb-run": frozenset(
        {"-n", "--server-num", "-s", "--server-args", "-f", "--auth-file", "-e"}
        | {"--error-file", "-w", "--wait", "-p", "--xauth-protocol"}
    ),
    "dbus-run-session": frozenset({"--config-file", "--dbus-daemon"}),
    "ssh-agent": frozenset({"-a", "-E", "-P", "-t", "-O"}),
    "entr": frozenset(),
    "watchexec": frozenset({"-e", "--exts", "-w", "--watch", "-i", "--ignore", "-s", "--signal"}),
    "prlimit": frozenset({"-p", "--pid"}),
    "nsenter": frozenset({"-t", "--target", "-S", "--setuid", "-G", "--setgid", "-r", "-w"}),
    "sg": frozenset(),
    "cpulimit": frozenset({"-l", "--limit", "-p", "--pid", "-e", "--exe"}),
}
_LOOSE_SKIP = {"chroot": 1, "sg": 1}
# wrappers whose first operand is not the command (timeout DURATION, taskset MASK...)
_WRAPPER_SKIP_OPERANDS = {"timeout": 1, "chrt": 1, "taskset": 1, "flock": 1}
# runner options whose value is shell code, and those naming the project directory
_RUNNER_CODE_OPTS = frozenset({"-c", "--call"})
_RUNNER_DIR_OPTS = frozenset({"--directory", "--project", "-C"})
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
    """Judge the wrapper's own options, then the command it runs."""
    sc = scan_argv(args, dict.fromkeys(_WRAPPERS[name]), stop_at_operand=True)
    for v in sc.values:
        if name == "env" and v.opt in ("-S", "--split-string"):
            an.payload(v.value, "env -S")
            return
        targets = [v.value]
        if v.form == "glued" and v.value.text.startswith("="):
            targets.append(tail_word(v.value, 1))  # -C=/x: judge "/x" too
        for target in targets:
            if name == "env" and v.opt in ("-C", "--chdir"):
                an.claim(target, "read")
                an.cd(target)
            elif name in ("time", "strace", "ltrace") and v.opt in ("-o", "--output"):
                an.claim(target, "write")
            elif name == "xargs" and v.opt in ("-a", "--arg-file"):
                an.claim(target, "read")
    rest = sc.operands
    while name == "env" and rest and "=" in rest[0].text and not rest[0].text.startswith("-"):
        an.assignment(rest[0], bare_ok=False)
        rest = rest[1:]
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


def loose_wrapper(an: Analyzer, name: str, args: list[Word], heredoc: str | None = None) -> None:
    """A wrapper the guard knows only roughly: analyse its command and stay uncertain."""
    an.uncertain(f"{name} runs a command")
    sc = scan_argv(args, dict.fromkeys(_LOOSE_WRAPPERS[name]), stop_at_operand=True)
    rest = sc.operands[_LOOSE_SKIP.get(name, 0) :]
    if name == "sg" and rest[:1] and rest[0].text == "-c":
        an.payload(rest[1] if len(rest) > 1 else None, "sg -c")
        return
    if rest:
        an.command(rest)


def runner_wrapper(an: Analyzer, value_opts: frozenset[str], args: list[Word]) -> None:
    """The runner's own options (``--directory``, ``-c CODE``...), then the command it runs."""
    values: dict[str, ClaimOp | None] = dict.fromkeys(value_opts | _RUNNER_CODE_OPTS)
    values.update(dict.fromkeys(_RUNNER_DIR_OPTS, "read"))
    sc = an.options(args, values, unknown_op="either", stop_at_operand=True, code=_RUNNER_CODE_OPTS)
    for v in sc.values:
        if v.opt in _RUNNER_CODE_OPTS:
            an.payload(v.value, "npm exec -c")
            return
    if sc.operands:
        an.command(sc.operands)


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


_SU_VALUES: dict[str, None] = dict.fromkeys(
    ("-c", "--command", "--session-command", "-s", "--shell", "-g", "--group", "-G", "-w", "-u")
)


def _h_su(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    sc = scan_argv(args, _SU_VALUES)
    for v in sc.values:
        if v.opt in ("-c", "--command", "--session-command"):
            an.payload(v.value, f"{name} -c")
            return
        if v.opt in ("-s", "--shell"):
            an.claim_value(v, "read")
    an.uncertain(f"{name} starts a shell")


HANDLERS: dict[str, Handler] = {
    **{tool: runner for tool, _sub in _RUNNERS},
    **dict.fromkeys(_WRAPPERS, wrapper),
    **dict.fromkeys(_LOOSE_WRAPPERS, loose_wrapper),
    "eval": _h_eval,
    "source": _h_source,
    ".": _h_source,
    "su": _h_su,
    "runuser": _h_su,
}
