"""Archivers: ``tar`` (mode letters, ``-C``, ``-f``), ``zip`` and ``unzip``."""

from __future__ import annotations

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.core import Analyzer, ClaimOp, Handler, _Collector


def _h_tar(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    mode = ""
    archive: list[Word] = []
    directory: Word | None = None
    operands: list[Word] = []
    i = 0
    first = True
    while i < len(args):
        w = args[i]
        t = w.text
        cluster: str | None = None
        if t.startswith("--"):
            opt, _, value = t.partition("=")
            key = opt[2:]
            if key in ("create", "append", "update", "catenate", "concatenate"):
                mode = "c"
            elif key in ("extract", "get"):
                mode = "x"
            elif key in ("list", "diff", "compare"):
                mode = "t"
            elif key in ("file", "directory", "files-from", "exclude-from"):
                target = Word(text=value) if value else (args[i + 1] if i + 1 < len(args) else None)
                if not value:
                    i += 1
                if target is not None:
                    if key == "file":
                        archive.append(target)
                    elif key == "directory":
                        directory = target
                    else:
                        an.claim(target, "read")
            i += 1
            first = False
            continue
        if t.startswith("-") and len(t) > 1:
            cluster = t[1:]
        elif first and t and t.isalpha():
            cluster = t
        first = False
        if cluster is None:
            operands.append(w)
            i += 1
            continue
        j = 0
        while j < len(cluster):
            ch = cluster[j]
            if ch in "crAu":
                mode = "c"
            elif ch == "x":
                mode = "x"
            elif ch in "td":
                mode = mode or "t"
            if ch in "fCTX":
                rest = cluster[j + 1 :]
                if rest:
                    value_word = Word(text=rest)
                else:
                    i += 1
                    value_word = args[i] if i < len(args) else Word()
                if ch == "f":
                    archive.append(value_word)
                elif ch == "C":
                    directory = value_word
                else:
                    an.claim(value_word, "read")
                break
            j += 1
        i += 1
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


def _h_zip(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    collector = _Collector()
    operands = collector.collect(
        an, name, args, {"-x": "read", "-i": "read", "-b": "write", "-O": "write", "--out": "write"}
    )
    if not operands:
        return
    an.claim(operands[0], "write")
    recursive = any(
        f in ("-r", "-R", "--recurse-paths") or (not f.startswith("--") and "r" in f[1:])
        for f in collector.flags
    )
    for w in operands[1:]:
        an.claim(w, "read", recursive=recursive)


def _h_unzip(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    collector = _Collector()
    operands = collector.collect(an, name, args, {"-d": "write", "-x": "read"})
    for w in operands[:1]:
        an.claim(w, "read")
    for w in operands[1:]:
        an.claim(w, "write")
    if "-d" not in collector.flags and not any(
        f in ("-l", "-t", "-p", "-Z") for f in collector.flags
    ):
        an.claim(Word(text="."), "write", recursive=True, text=".")


HANDLERS: dict[str, Handler] = {
    "tar": _h_tar,
    "bsdtar": _h_tar,
    "gtar": _h_tar,
    "zip": _h_zip,
    "unzip": _h_unzip,
}
