"""Every environment variable the docs give for a command is in its ``--help``, with the
defaults a new user needs, so the terminal answers what the docs answer (issue 40)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
VARIABLE = re.compile(r"\bLOVIA_[A-Z_]+[A-Z]\b")

# (command, the docs pages whose LOVIA_* variables concern it, what else its help must say)
COMMANDS = [
    (
        ["lovia", "chat"],
        [],
        [
            "LOVIA_MODEL",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "OPENAI_BASE_URL",
            "NO_COLOR",
            "XDG_STATE_HOME",
            "the current directory",
            "chat-server.log",
        ],
    ),
    (["lovia", "acp"], ["docs/acp.md"], ["OPENAI_API_KEY", "credentials.json"]),
    (["lovia", "batch"], ["docs/batch.md"], ["OPENAI_API_KEY", "forwarded to the workers"]),
    (["lovia-server"], ["docs/server.md"], ["OPENAI_API_KEY", "XDG_STATE_HOME"]),
]


def _help(command: list[str]) -> str:
    if command[0] == "lovia":
        code = "import sys; from lovia.cli import main; sys.argv[0] = 'lovia'; main()"
    else:
        code = "import sys; from lovia_server.__main__ import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, *command[1:], "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(("command", "pages", "needed"), COMMANDS, ids=lambda v: str(v))
def test_help_lists_the_environment_the_docs_give(
    command: list[str], pages: list[str], needed: list[str]
) -> None:
    text = _help(command)
    documented = {v for page in pages for v in VARIABLE.findall((ROOT / page).read_text())}
    missing = sorted(v for v in documented | set(needed) if v not in text)
    assert missing == [], f"{' '.join(command)} --help does not mention {missing}"
