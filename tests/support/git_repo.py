"""Real git repositories for tests: run ``git`` in a folder, and make a small repository with
a first commit and, optionally, uncommitted work on top."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

SAMPLE_FILES: dict[str, str | bytes] = {
    "a.txt": "a\n",
    "gone.txt": "bye\n",
    "img.bin": b"\0\1\2" * 10,
    ".gitignore": "*.log\n",
}
"""A text file to change, one to delete, a binary one and an ignore rule."""


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


def init_repo(
    root: Path,
    files: Mapping[str, str | bytes],
    *,
    uncommitted: Mapping[str, str] | None = None,
) -> Path:
    """``files`` committed on ``main`` as ``init``; then ``uncommitted`` written over them."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    for name, text in (uncommitted or {}).items():
        (root / name).write_text(text)
    return root
