"""Build tools and compilers: ``make``, ``cc``/``gcc``/``clang``, ``ld``, ``go``, ``cargo``,
``cmake``, ``ninja``, ``mvn``, ``gradle``, ``javac``, ``tsc``, ``rustc``."""

from __future__ import annotations

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.argv import tail_word
from lovia.workspace.command_guard.core import Analyzer, ClaimOp, Handler
from lovia.workspace.command_guard.programs import Program, program_handler

_MAKE = Program(
    values={
        "-C": "either",
        "--directory": "either",
        "-f": "either",
        "--file": "either",
        "--makefile": "either",
        "-I": "read",
        "--include-dir": "read",
        "-o": "either",
        "--old-file": "either",
        "--assume-old": "either",
        "-W": "either",
        "--what-if": "either",
        "--new-file": "either",
        "--assume-new": "either",
        "-E": None,
        "--eval": None,
    },
    chdir=frozenset({"-C", "--directory"}),
)
_CC_VALUES: dict[str, ClaimOp | None] = {
    "-o": "write",
    "-I": "read",
    "-L": "read",
    "-B": "read",
    "-include": "read",
    "-imacros": "read",
    "-isystem": "read",
    "-iquote": "read",
    "-idirafter": "read",
    "-isysroot": "read",
    "--sysroot": "read",
    "-MF": "write",
    "-MT": None,
    "-MQ": None,
    "-D": None,
    "-U": None,
    "-x": None,
    "-T": "either",
    "-Xlinker": None,
    "-Xassembler": None,
    "-Xpreprocessor": None,
}
_CC = Program(values=_CC_VALUES, clusters=False, response_files=True)
_LD = Program(
    values={
        "-o": "write",
        "--output": "write",
        "-L": "read",
        "--library-path": "read",
        "-T": "either",
        "--script": "either",
        "-Map": "write",
        "-l": None,
        "-e": None,
        "--entry": None,
    },
    clusters=False,
    response_files=True,
)
_GO = Program(
    values={
        "-o": "write",
        "-C": "either",
        "-modfile": "either",
        "-overlay": "either",
        "-pgo": "either",
        "-coverpkg": None,
        "-tags": None,
        "-ldflags": None,
        "-gcflags": None,
        "-p": None,
        "-run": None,
        "-bench": None,
        "-timeout": None,
    },
    chdir=frozenset({"-C"}),
    clusters=False,
)
_CARGO = Program(
    values={
        "--manifest-path": "either",
        "--target-dir": "write",
        "--artifact-dir": "write",
        "--out-dir": "write",
        "--lockfile-path": "either",
        "-C": "either",
        "--config": None,
        "-Z": None,
        "-p": None,
        "--package": None,
        "--bin": None,
        "--example": None,
        "--test": None,
        "--bench": None,
        "-F": None,
        "--features": None,
        "-j": None,
        "--jobs": None,
        "--target": None,
        "--profile": None,
        "--color": None,
    },
    chdir=frozenset({"-C"}),
)
_CMAKE = Program(
    values={
        "-S": "either",
        "-B": "either",
        "-C": "either",
        "-P": "either",
        "--build": "either",
        "--install": "either",
        "--install-prefix": "write",
        "--prefix": "write",
        "--toolchain": "either",
        "-D": None,
        "-U": None,
        "-G": None,
        "-T": None,
        "-A": None,
        "--preset": None,
        "--config": None,
        "-t": None,
        "--target": None,
        "-j": None,
        "--parallel": None,
    },
    clusters=False,
)
_NINJA = Program(
    values={
        "-C": "either",
        "-f": "either",
        "-j": None,
        "-l": None,
        "-k": None,
        "-t": None,
        "-d": None,
    },
    chdir=frozenset({"-C"}),
)
_MVN = Program(
    values={
        "-f": "either",
        "--file": "either",
        "-s": "either",
        "--settings": "either",
        "-gs": "either",
        "--global-settings": "either",
        "-t": "either",
        "--toolchains": "either",
        "-l": "write",
        "--log-file": "write",
        "-D": None,
        "-P": None,
        "-pl": None,
        "--projects": None,
        "-rf": None,
        "-T": None,
    },
    clusters=False,
)
_GRADLE = Program(
    values={
        "-p": "either",
        "--project-dir": "either",
        "-b": "either",
        "--build-file": "either",
        "-c": "either",
        "--settings-file": "either",
        "-g": "write",
        "--gradle-user-home": "write",
        "-I": "read",
        "--init-script": "either",
        "--project-cache-dir": "write",
        "-D": None,
        "-P": None,
        "-x": None,
        "--exclude-task": None,
    },
    chdir=frozenset({"-p", "--project-dir"}),
    clusters=False,
)
_JAVAC = Program(
    values={
        "-d": "write",
        "-s": "write",
        "-h": "write",
        "-cp": "either",
        "-classpath": "either",
        "--class-path": "either",
        "-sourcepath": "either",
        "--source-path": "either",
        "-processorpath": "either",
        "--processor-path": "either",
        "-encoding": None,
        "-source": None,
        "--source": None,
        "-target": None,
        "--target": None,
        "--release": None,
    },
    clusters=False,
    response_files=True,
)
_TSC = Program(
    values={
        "-p": "either",
        "--project": "either",
        "--outDir": "write",
        "--outFile": "write",
        "--rootDir": "either",
        "--baseUrl": "either",
        "--declarationDir": "write",
        "--tsBuildInfoFile": "write",
        "-t": None,
        "--target": None,
        "-m": None,
        "--module": None,
        "--lib": None,
        "--jsx": None,
    },
    clusters=False,
)
_RUSTC = Program(
    values={
        "-o": "write",
        "--out-dir": "write",
        "-L": "read",
        "--extern": None,
        "--crate-type": None,
        "--crate-name": None,
        "--edition": None,
        "--emit": None,
        "--cfg": None,
        "-C": None,
        "--codegen": None,
        "--target": None,
    },
    clusters=False,
    response_files=True,
)

_make = program_handler(_MAKE)


def _h_make(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
    """make's ``SHELL=…`` (and ``.SHELLFLAGS``) operands choose the program recipes run in."""
    for w in args:
        key, sep, value = w.text.partition("=")
        if sep and key in ("SHELL", "MAKESHELL") and value:
            an.payload(tail_word(w, len(key) + 1), f"make {key}=")
        elif sep and key == ".SHELLFLAGS":
            an.uncertain("make .SHELLFLAGS changes how recipes run")
    _make(an, name, args, heredoc)


HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(("make", "gmake", "bmake"), _h_make),
    **dict.fromkeys(
        ("cc", "gcc", "g++", "c++", "clang", "clang++", "tcc", "icc", "emcc"),
        program_handler(_CC),
    ),
    **dict.fromkeys(("ld", "ld.lld", "ld.gold", "lld"), program_handler(_LD)),
    "go": program_handler(_GO),
    "cargo": program_handler(_CARGO),
    "cmake": program_handler(_CMAKE),
    "ninja": program_handler(_NINJA),
    "mvn": program_handler(_MVN),
    "gradle": program_handler(_GRADLE),
    "gradlew": program_handler(_GRADLE),
    "javac": program_handler(_JAVAC),
    "tsc": program_handler(_TSC),
    "rustc": program_handler(_RUSTC),
}
