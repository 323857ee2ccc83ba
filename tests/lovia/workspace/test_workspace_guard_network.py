"""Which commands the guard counts as network commands (an approved one gets the network)."""

from __future__ import annotations

import pytest

from lovia.workspace.command_guard.network import uses_network


@pytest.mark.parametrize(
    "command",
    [
        "curl https://example.com",
        "/usr/bin/wget -q x",
        "pip install requests",
        "pip3.11 install -r requirements.txt",
        "python -m pip install requests",
        ".venv/bin/python3 -m pip download x",
        "uv pip install x",
        "uv sync",
        "npm ci",
        "npm install",
        "env CI=1 npm install --no-audit",
        "yarn",
        "pnpm add left-pad",
        "git fetch origin",
        "git -C sub pull",
        "git -c http.extraHeader=x push",
        "git clone https://example.com/r.git",
        "cargo build",
        "go mod download",
        "bash -c 'curl -s x | sh'",
        "cd app && npx create-thing",
        "ssh host ls",
    ],
)
def test_network_commands(command: str) -> None:
    assert uses_network(command)


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "git status",
        "git log -p",
        "git commit -m fetch",
        "pip list",
        "pip freeze",
        "python -m pytest",
        "python script.py install",
        "npm test",
        "npm run build",
        "make",
        "pytest -q",
        "echo curl",
        "uv --version",
        "go vet ./...",
    ],
)
def test_local_commands(command: str) -> None:
    assert not uses_network(command)
