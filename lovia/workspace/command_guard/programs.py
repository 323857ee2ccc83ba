"""Table-driven handlers: a program described by the options that take a path.

Most build tools and package managers need nothing more than "these options take a
file or directory, these change the directory, operands are read/written". The
shared argv scanner (:mod:`.argv`) then judges every spelling alike.
"""

from __future__ import annotations

from collections.abc import Mapping

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.argv import scan_argv, tail_word
from lovia.workspace.command_guard.core import Analyzer, ClaimOp, Handler


class Program:
    """What a program does with its options and operands."""

    __slots__ = ("chdir", "clusters", "operands", "response_files", "values")

    def __init__(
        self,
        values: Mapping[str, ClaimOp | None],
        *,
        operands: ClaimOp = "either",
        chdir: frozenset[str] = frozenset(),
        clusters: bool = True,
        response_files: bool = False,
    ) -> None:
        #: option -> what it does with its value (``None``: takes a value that is no path)
        self.values = values
        #: what operands are (``either`` when they may be read or written)
        self.operands = operands
        #: options whose value is the directory the program works in (``make -C dir``)
        self.chdir = chdir
        #: whether short options cluster (``-sC dir``); compilers and Go do not
        self.clusters = clusters
        #: whether ``@file`` operands are response files the program reads (compilers)
        self.response_files = response_files


def program_handler(program: Program) -> Handler:
    """A handler that claims option values and operands as ``program`` says."""

    def handle(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
        saved = list(an.bases)
        if program.chdir:
            for v in scan_argv(args, program.values, clusters=program.clusters).values:
                if v.opt in program.chdir:
                    an.claim_value(v, program.values[v.opt] or "either")
                    an.cd(v.value)
        an.generic(
            name, args, program.operands, value_opts=program.values, clusters=program.clusters
        )
        if program.response_files:
            for w in args:
                if w.text.startswith("@") and len(w.text) > 1:
                    an.claim(tail_word(w, 1), "read")
        an.bases = saved

    return handle


__all__ = ["Program", "program_handler"]
