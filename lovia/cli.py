"""The ``lovia`` command: a thin dispatcher to lazily imported subcommand modules."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

from lovia._version import __version__
from lovia.exceptions import UserError

# Subcommands live in the editor host; they are imported only when invoked, so the core
# package never loads them on its own.
_COMMANDS: dict[str, tuple[str, str]] = {
    "chat": (
        "lovia_server.chat.terminal_chat",
        "chat with the built-in coding agent in this terminal",
    ),
    "serve": ("lovia_server.__main__", "run the editor language server (stdio or --tcp)"),
    "acp": ("lovia_server.acp.__main__", "run as an Agent Client Protocol agent (Zed, JetBrains)"),
    "batch": ("lovia_server.batch.cli", "run a file of agent tasks headless (here or on Ray)"),
}

USAGE = "usage: lovia <command> [options]"


def _usage() -> str:
    lines = [USAGE, "", "commands:"]
    for name, (_, summary) in _COMMANDS.items():
        lines.append(f"  {name:<8} {summary}")
    lines += ["", "options:", "  -h, --help  show this help", "  --version   print the version"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(_usage())
        return 0
    if args[0] == "--version":
        print(f"lovia {__version__}")
        return 0
    command, rest = args[0], args[1:]
    entry = _COMMANDS.get(command)
    if entry is None:
        print(f"error: unknown command '{command}'\n\n{_usage()}", file=sys.stderr)
        return 2
    try:
        module = importlib.import_module(entry[0])
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sub_main: Callable[..., int] = module.sub_main
    return sub_main(rest, prog=f"lovia {command}")


__all__ = ["main"]


if __name__ == "__main__":
    raise SystemExit(main())
