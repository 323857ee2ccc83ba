"""Every shell command README.md and docs/*.md give a user to copy: run here as written (against a
local model server where it needs one), or named with the part of CI that runs it, or with the
reason it cannot run on a CI machine. A new command in the docs fails the first test until it is
sorted into one of the three."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import fake_openai as oai
from tests.support.batch_model import TaskModel
from tests.support.batch_tasks import write_tasks
from tests.support.fake_openai import FakeOpenAI

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL_BLOCKS = ("", "bash", "sh", "shell", "console")
COMMAND = re.compile(
    r"(\./dev|\.venv/bin/lovia|lovia (chat|acp|batch|serve)|pip|python3?|npm|cd|bash|export|code)\b"
)
BIN = Path(sys.executable).parent
TIMEOUT = 240  # a server start and a short run on a busy 2-core machine


def documented_commands() -> dict[str, str]:
    """Command line -> where it is documented (``file:line``)."""
    found: dict[str, str] = {}
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for block in re.finditer(r"^[ \t]*```(\w*)\n(.*?)^[ \t]*```", text, re.M | re.S):
            if block.group(1) not in SHELL_BLOCKS:
                continue
            first = text[: block.start()].count("\n") + 2
            body = block.group(2).replace("\\\n", " ")
            for offset, raw in enumerate(body.splitlines()):
                line = re.sub(r"\s+#.*$", "", raw).strip()
                line = re.sub(r"\s+", " ", line)
                if COMMAND.match(line):
                    found.setdefault(line, f"{doc.relative_to(REPO)}:{first + offset}")
    return found


# --------------------------------------------------------------------------- how each one is run


def _run(
    command: str, cwd: Path, env: dict[str, str], *, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``command`` as the shell runs it, with the venv's ``lovia`` first on PATH."""
    full = {**env, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}"}
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=full,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def _clean_env(tmp_path: Path) -> dict[str, str]:
    drop = {"LOVIA_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_STATE_HOME=str(tmp_path / "xdg"),
        TMPDIR=str(tmp_path),
        NO_COLOR="1",
    )
    (tmp_path / "home").mkdir(exist_ok=True)
    return env


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("# a project\n")
    return ws


def _with_model(tmp_path: Path, fake: FakeOpenAI) -> dict[str, str]:
    """The README's ``export`` line, pointed at a local OpenAI-compatible server (as the README
    says any such server works: ``OPENAI_BASE_URL``)."""
    return {
        **_clean_env(tmp_path),
        "LOVIA_MODEL": "openai:gpt-4.1-mini",
        "OPENAI_API_KEY": "sk-docs-test",
        "OPENAI_BASE_URL": fake.env()["OPENAI_BASE_URL"],
    }


def run_dev_demo(command: str, tmp_path: Path) -> None:
    done = _run(command, REPO, _clean_env(tmp_path), stdin="")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "— completed" in done.stdout, done.stdout


def run_one_shot_chat(command: str, tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        fake.responder = lambda request: oai.text("It is a small project.")
        done = _run(command, REPO, _with_model(tmp_path, fake), stdin="")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "It is a small project." in done.stdout and "— completed" in done.stdout


def run_interactive_chat(command: str, tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        fake.responder = lambda request: oai.text("Hello back.")
        done = _run(command, REPO, _with_model(tmp_path, fake), stdin="hello\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "you: hello" in done.stdout and "Hello back." in done.stdout


def run_resume_chat(command: str, tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        done = _run(command, REPO, _with_model(tmp_path, fake), stdin="")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "nothing to resume in this workspace" in done.stdout


def run_acp(command: str, tmp_path: Path) -> None:
    """The agent starts, and ends cleanly when its client closes the pipe."""
    env = _clean_env(tmp_path)
    settings = Path(env["HOME"]) / ".config" / "lovia" / "acp.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"model": "openai:gpt-4.1-mini"}))
    done = _run(command, _workspace(tmp_path), env, stdin="")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def run_batch(command: str, tmp_path: Path) -> None:
    write_tasks(tmp_path, 2)
    with TaskModel() as model:
        env = {**_clean_env(tmp_path), **model.env(), "LOVIA_MODEL": "openai:fake-model"}
        done = _run(command + " --no-sandbox", tmp_path, env)
    assert done.returncode == 0, done.stderr
    results = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in results] == ["done", "done"]


def run_venv_install(command: str, tmp_path: Path) -> None:
    """A fresh virtualenv gets lovia from the clone's folder, with both entry points."""
    done = _run(command.replace("/path/to/lovia", str(REPO)), tmp_path, _clean_env(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    check = subprocess.run(
        [str(tmp_path / ".venv/bin/lovia"), "chat", "--help"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert check.returncode == 0 and "--demo" in check.stdout, check.stderr


Runner = Callable[[str, Path], None]

RUN: dict[str, Runner] = {
    "./dev demo": run_dev_demo,
    '.venv/bin/lovia chat "explain what this repository does"': run_one_shot_chat,
    ".venv/bin/lovia chat": run_interactive_chat,
    ".venv/bin/lovia chat --resume": run_resume_chat,
    "lovia acp": run_acp,
    "lovia acp --model openai:gpt-4.1-mini --models anthropic:claude-sonnet-4-5,openai:gpt-4.1": (
        run_acp
    ),
    "lovia acp --settings ~/.config/lovia/acp.json --state-dir ~/.local/state/lovia/acp": run_acp,
    "lovia batch tasks.jsonl": run_batch,
    "python -m venv .venv && .venv/bin/pip install /path/to/lovia": run_venv_install,
}

ELSEWHERE: dict[str, str] = {
    "./dev test": "CI itself: .ci/run runs it",
    "export LOVIA_MODEL=openai:gpt-4.1-mini OPENAI_API_KEY=...": (
        "the environment of the chat commands after it: run here with a local server's URL"
    ),
    "cd editor-extension && npm ci && npm run package": "the extension part (scripts/ci.sh)",
    "code --install-extension lovia.vsix": (
        "the real VS Code part installs lovia.vsix with --install-extension (test/vscode/harness.ts)"
    ),
    "pip install -e '.[ray]'": "the Ray part of ./dev installs the extra with this command",
    "python3 -m venv .venv && .venv/bin/pip install -e '.[emacs]'": (
        ".ci/run installs the emacs extra into .venv for tests/e2e/test_emacs_eglot.py"
    ),
    "export OPENAI_API_KEY=sk-...": "a real key; the tests use the local fake model server",
    "lovia batch tasks.jsonl --ray": "tests/ray/test_cli_on_ray.py (a Ray of its own)",
    "lovia batch tasks.jsonl --ray 10.0.0.5:6379 --rpm 500": (
        "needs a cluster at that address; tests/ray/test_cli_on_ray.py runs --ray ADDRESS"
    ),
    "lovia batch tasks.jsonl --ray 10.0.0.5:6379 --env GITHUB_TOKEN --runtime-env "
    "@runtime_env.json --num-cpus 0.25 --retries 3": (
        "needs a cluster at that address; tests/ray covers --env, --runtime-env and --retries"
    ),
    "cd editor-extension": "the extension part (scripts/ci.sh) runs the commands below",
    "npm ci": "the extension part (scripts/ci.sh)",
    "npm run lint": "the extension part (scripts/ci.sh)",
    "npm run gen:messages": "the extension part checks it is current (gen:messages:check)",
    "npm run build": "the extension part (scripts/ci.sh)",
    "npm test": "the extension part runs the same tests (vitest)",
    "npm run package": "the extension part (scripts/ci.sh)",
    "bash scripts/ci.sh": "the extension part of ./dev test",
    "npm ci && npm run package": "the extension part (scripts/ci.sh)",
}


def test_every_documented_command_is_run_or_says_why_not() -> None:
    documented = documented_commands()
    unsorted = {c: where for c, where in documented.items() if c not in RUN and c not in ELSEWHERE}
    assert not unsorted, f"commands in the docs that no test runs: {unsorted}"
    stale = sorted((set(RUN) | set(ELSEWHERE)) - set(documented))
    assert not stale, f"no longer in the docs: {stale}"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("command", sorted(RUN))
def test_a_documented_command_works_as_written(command: str, tmp_path: Path) -> None:
    assert command in documented_commands(), command
    RUN[command](command, tmp_path)


def test_the_commands_are_split_as_a_shell_would() -> None:
    for command in documented_commands():
        shlex.split(command)  # a quoting slip in the docs fails here
