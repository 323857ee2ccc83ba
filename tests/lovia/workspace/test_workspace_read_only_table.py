"""The read-only table agrees with the programs installed here about which options take values.

The table's one dangerous mistake is declaring an option that takes *no* separate value
as one that does: the classifier would then skip the next word, which the program reads
as an option (``git log --format --output=f``). These tests ask the real programs:
GNU ``--help`` (``--lines=NUM`` vs ``--color[=WHEN]``), git's
``--git-completion-helper`` (``--sort=``), and, for ``git log``/``git diff``, whether the
word after each value option is consumed (``--output=FILE`` after it must not write).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lovia.workspace.command_guard.readonly_table import GIT, TABLE, ReadOnlyProgram

_LONG_RE = re.compile(
    r"(?<![\w-])(-[A-Za-z0-9])( [A-Za-z]+)?,\s+(--[a-z0-9][-a-z0-9]*)(\[=|=| [A-Z])?"
)
_LONE_LONG_RE = re.compile(r"^\s+(--[a-z0-9][-a-z0-9]*)(\[=|=| [A-Z])?", re.MULTILINE)


def gnu_help(program: str) -> str | None:
    exe = shutil.which(program)
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "--help"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out if "--help" in out and ("GNU" in out or "coreutils" in out) else None


def kinds(help_text: str) -> dict[str, str]:
    """option -> "value" | "optional" | "flag", for the long and paired short options."""
    out: dict[str, str] = {}

    def kind(arg: str | None) -> str:
        if arg == "[=":
            return "optional"
        if arg in ("=", " ") or (arg and arg.strip().isupper()):
            return "value"
        return "flag"

    for line in help_text.splitlines():
        m = _LONG_RE.search(line)
        if m:
            out.setdefault(m.group(3), kind(m.group(4)))
            # "-S BYTES, --strings[=BYTES]": the short form's own argument decides
            out.setdefault(m.group(1), "value" if m.group(2) else kind(m.group(4)))
            continue
        m = _LONE_LONG_RE.match(line)
        if m:
            out.setdefault(m.group(1), kind(m.group(2)))
    return out


def table_kind(spec: ReadOnlyProgram, opt: str) -> str | None:
    if opt in spec.optional:
        return "optional"
    if opt in spec.values:
        return "value"
    if opt in spec.flags:
        return "flag"
    return None


GNU = [
    name
    for name in (
        "ls",
        "cat",
        "tac",
        "head",
        "tail",
        "wc",
        "sort",
        "uniq",
        "cut",
        "tr",
        "nl",
        "du",
        "stat",
        "date",
        "realpath",
        "readlink",
        "basename",
        "dirname",
        "od",
        "paste",
        "fold",
        "expand",
        "comm",
        "sha256sum",
        "diff",
        "cmp",
        "grep",
        "sed",
    )
]


@pytest.mark.parametrize("program", GNU)
def test_gnu_options_take_values_as_the_table_says(program: str) -> None:
    text = gnu_help(program)
    if text is None:
        pytest.skip(f"no GNU {program} here")
    spec = TABLE[program]
    known = kinds(text)
    checked = 0
    for opt, real in known.items():
        mine = table_kind(spec, opt)
        if mine is None:
            continue
        checked += 1
        # a flag the table calls a value is the danger; calling a value option a flag or
        # glued-only (optional) only makes the table stricter
        if mine == "value":
            assert real == "value", (program, opt, real)
    assert checked >= 2, (program, "help output not understood")


def _completion(sub: str) -> list[str] | None:
    try:
        out = subprocess.run(
            ["git", sub, "--git-completion-helper"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    words = out.split()
    return words if words and words != ["--git-completion-helper"] else None


PARSE_OPTIONS = ["status", "branch", "tag", "blame", "grep", "shortlog", "describe", "ls-files"]


@pytest.mark.parametrize("sub", PARSE_OPTIONS)
def test_git_parse_options_take_values_as_the_table_says(sub: str) -> None:
    words = _completion(sub)
    if words is None:
        pytest.skip("git has no completion helper")
    assert GIT.subcommands is not None
    spec = GIT.subcommands[sub]
    required = {w[:-1] for w in words if w.endswith("=")}
    listed = {w.rstrip("=") for w in words}
    for opt in spec.values:
        if opt.startswith("--") and opt in listed:
            assert opt in required, (sub, opt, "takes no separate value")
    for opt in spec.flags | spec.optional:
        if opt.startswith("--"):
            assert opt not in required, (sub, opt, "takes a value")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gitprobe")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
    (root / "a").write_text("a\n")
    subprocess.run(["git", "add", "a"], cwd=root, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "a"], cwd=root, check=True, env=env)
    (root / "a").write_text("b\n")
    return root


@pytest.mark.parametrize("sub", ["log", "diff", "show"])
def test_git_value_options_consume_the_next_word(repo: Path, sub: str) -> None:
    assert GIT.subcommands is not None
    spec = GIT.subcommands[sub]
    probe = repo / "probe.out"
    for opt in sorted(spec.values):
        probe.unlink(missing_ok=True)
        subprocess.run(
            ["git", sub, opt, f"--output={probe}", "-1"],
            cwd=repo,
            capture_output=True,
            timeout=10,
            check=False,
        )
        assert not probe.exists(), f"git {sub} {opt} does not take a separate value"
