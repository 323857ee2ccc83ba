"""Package managers: ``pip``, ``uv``, ``poetry``, ``npm``, ``pnpm``, ``yarn``, ``gem``.

Their ``run``/``exec`` subcommands run another command (see :mod:`.wrappers`); every
other use installs into, or reads from, the paths their options name.
"""

from __future__ import annotations

from lovia.workspace._shell import Word
from lovia.workspace.command_guard.core import Analyzer, ClaimOp, Handler
from lovia.workspace.command_guard.programs import Program, program_handler
from lovia.workspace.command_guard.wrappers import _RUNNERS, runner

_PIP_VALUES: dict[str, ClaimOp | None] = {
    "-t": "write",
    "--target": "write",
    "-r": "either",
    "--requirement": "either",
    "-c": "either",
    "--constraint": "either",
    "-e": "either",
    "--editable": "either",
    "--prefix": "write",
    "--root": "write",
    "-d": "write",
    "--dest": "write",
    "-w": "write",
    "--wheel-dir": "write",
    "--src": "write",
    "--cache-dir": "write",
    "--log": "write",
    "--report": "write",
    "-f": "either",
    "--find-links": "either",
    "--python": "either",
    "-i": None,
    "--index-url": None,
    "--extra-index-url": None,
    "--platform": None,
    "--python-version": None,
    "--implementation": None,
    "--abi": None,
    "--no-binary": None,
    "--only-binary": None,
    "--progress-bar": None,
    "--trusted-host": None,
    "--proxy": None,
    "--timeout": None,
    "--retries": None,
}
_PIP = Program(values=_PIP_VALUES)
_UV = Program(
    values={
        **_PIP_VALUES,
        "--directory": "either",
        "--project": "either",
        "--config-file": "either",
        "-p": None,
        "--python": None,
    },
    chdir=frozenset({"--directory"}),
)
_POETRY = Program(
    values={"-C": "either", "--directory": "either", "-P": "either", "--project": "either"},
    chdir=frozenset({"-C", "--directory"}),
)
_NPM = Program(
    values={
        "--prefix": "either",
        "-C": "either",
        "--cache": "write",
        "--userconfig": "either",
        "--globalconfig": "either",
        "-w": None,
        "--workspace": None,
        "--registry": None,
        "--tag": None,
    },
    chdir=frozenset({"--prefix", "-C"}),
)
_PNPM = Program(
    values={
        "-C": "either",
        "--dir": "either",
        "--store-dir": "write",
        "--modules-dir": "write",
        "--virtual-store-dir": "write",
        "--filter": None,
        "-F": None,
        "--reporter": None,
    },
    chdir=frozenset({"-C", "--dir"}),
)
_YARN = Program(
    values={
        "--cwd": "either",
        "--cache-folder": "write",
        "--modules-folder": "write",
        "--global-folder": "write",
        "--use-yarnrc": "either",
    },
    chdir=frozenset({"--cwd"}),
)
_GEM = Program(
    values={
        "-i": "write",
        "--install-dir": "write",
        "-n": "write",
        "--bindir": "write",
        "-g": "either",
        "--file": "either",
        "-v": None,
        "--version": None,
        "-s": None,
        "--source": None,
    }
)


def _with_runner(program: Program) -> Handler:
    """``npm exec CMD`` / ``uv run CMD`` are runners; anything else is ``program``."""
    plain = program_handler(program)
    uv_pip = program_handler(_UV)

    def handle(an: Analyzer, name: str, args: list[Word], heredoc: str | None) -> None:
        if args and (name, args[0].text) in _RUNNERS:
            runner(an, name, args, heredoc)
        elif name == "uv" and args and args[0].text == "pip":
            uv_pip(an, name, args[1:], heredoc)
        else:
            plain(an, name, args, heredoc)

    return handle


HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(("pip", "pip3"), program_handler(_PIP)),
    "uv": _with_runner(_UV),
    "poetry": _with_runner(_POETRY),
    "npm": _with_runner(_NPM),
    "pnpm": _with_runner(_PNPM),
    "yarn": _with_runner(_YARN),
    "gem": program_handler(_GEM),
}
