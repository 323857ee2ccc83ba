"""Archivers: ``tar`` (mode letters, ``-C``, ``-f``), ``zip`` and ``unzip``."""

from __future__ import annotations

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.argv import scan_argv, tail_word
from lovia.workspace.command_guard.core import Analyzer, ClaimOp, Handler, _Collector

_TAR_VALUES: dict[str, None] = dict.fromkeys(
    ("-f", "--file", "-C", "--directory", "-T", "--files-from", "-X", "--exclude-from")
)
# options whose value is a command tar runs
_TAR_COMMANDS: dict[str, None] = dict.fromkeys(
    (
        "-I",
        "--use-compress-program",
        "--to-command",
        "-F",
        "--info-script",
        "--new-volume-script",
        "--rsh-command",
        "--rmt-command",
    )
)
_TAR_EXTRACT = frozenset({"-x", "--extract", "--get"})
_TAR_CREATE = frozenset(
    {"-c", "-r", "-A", "-u", "--create", "--append", "--update", "--catenate", "--concatenate"}
)
_TAR_LIST = frozenset({"-t", "-d", "--list", "--diff", "--compare"})


def _tar_traditional(args: list[Word]) -> list[Word]:
    """``tar xzfC a.tar dir ...`` (no dash): each value letter takes the next word, in order."""
    if not args or not args[0].text.isalpha():
        return args
    out: list[Word] = []
    rest = list(args[1:])
    for ch in args[0].text:
        out.append(Word(text="-" + ch))
        if ("-" + ch in _TAR_VALUES or "-" + ch in _TAR_COMMANDS) and rest:
            out.append(rest.pop(0))
    return out + rest


def _h_tar(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    sc = scan_argv(_tar_traditional(args), {**_TAR_VALUES, **_TAR_COMMANDS})
    mode = ""
    if sc.flags & _TAR_EXTRACT:
        mode = "x"
    elif sc.flags & _TAR_CREATE:
        mode = "c"
    elif sc.flags & _TAR_LIST:
        mode = "t"
    archive: list[Word] = []
    directory: Word | None = None
    for v in sc.values:
        if v.opt in ("-f", "--file"):
            archive.append(v.value)
        elif v.opt in ("-C", "--directory"):
            directory = v.value
        elif v.opt in _TAR_COMMANDS:
            an.payload(v.value, f"tar {v.opt}")
        else:
            an.claim_value(v, "read")
    for v in sc.unknown_values:
        if v.opt == "--checkpoint-action" and v.value.text.startswith("exec="):
            an.payload(tail_word(v.value, 5), "tar --checkpoint-action=exec")
    operands = sc.operands
    archive_op: ClaimOp = {"c": "write", "x": "read", "t": "read"}.get(mode, "either")  # type: ignore[assignment]
    for a in archive:
        an.claim(a, archive_op)
    saved = list(an.bases)
    if directory is not None:
        an.claim(directory, "write" if mode == "x" else "either")
        an.cd(directory)
    if mode == "x":
        an.claim(Word(text="."), "write", recursive=True, text=".")
        for w in operands:
            an.claim(w, "write")
    else:
        for w in operands:
            an.claim(w, "read" if mode == "c" else "either", recursive=True)
    an.bases = saved


_ZIP_VALUES: dict[str, ClaimOp | None] = {
    "-x": "read",
    "-i": "read",
    "-b": "write",
    "-O": "write",
    "--out": "write",
    "-TT": None,
    "--unzip-command": None,
}


def _h_zip(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    for v in scan_argv(args, _ZIP_VALUES).values:
        if v.opt in ("-TT", "--unzip-command"):
            an.payload(v.value, f"zip {v.opt}")
    collector = _Collector()
    operands = collector.collect(an, name, args, _ZIP_VALUES)
    if not operands:
        return
    an.claim(operands[0], "write")
    recursive = any(
        f in ("-r", "-R", "--recurse-paths") or (not f.startswith("--") and "r" in f[1:])
        for f in collector.flags
    )
    for w in operands[1:]:
        an.claim(w, "read", recursive=recursive)


_UNZIP_VALUES: dict[str, ClaimOp | None] = {"-d": "write", "-x": "read"}


def _h_unzip(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    collector = _Collector()
    operands = collector.collect(an, name, args, _UNZIP_VALUES)
    for w in operands[:1]:
        an.claim(w, "read")
    for w in operands[1:]:
        an.claim(w, "write")
    into_dir = any(v.opt == "-d" for v in scan_argv(args, _UNZIP_VALUES).values)
    if not into_dir and not any(f in ("-l", "-t", "-p", "-Z") for f in collector.flags):
        an.claim(Word(text="."), "write", recursive=True, text=".")


HANDLERS: dict[str, Handler] = {
    "tar": _h_tar,
    "bsdtar": _h_tar,
    "gtar": _h_tar,
    "zip": _h_zip,
    "unzip": _h_unzip,
}
