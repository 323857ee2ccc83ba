"""Batch tasks over small generated git repositories, and ``lovia batch`` as a subprocess,
for the batch and Ray tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from lovia_server.batch.task import BatchTask, TaskSource
from tests.support.batch_model import TaskModel

MODEL = "openai:fake-model"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def make_repo(root: Path, name: str) -> tuple[Path, str]:
    """A repository with two commits; returns it and the first commit (the task's base)."""
    repo = root / name
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "README.md").write_text(f"# {name}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "LATER.md").write_text("added after the base commit\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "second")
    return repo, base


def git_tasks(root: Path, count: int) -> list[BatchTask]:
    """``count`` tasks, each on its own repository at its first commit."""
    tasks = []
    for i in range(count):
        repo, base = make_repo(root, f"repo{i}")
        tasks.append(
            BatchTask(
                id=f"t{i:02d}",
                prompt=f"Please write word{i} to answer{i}.txt",
                source=TaskSource(git=str(repo), commit=base),
                model=MODEL,
            )
        )
    return tasks


def comparable(result: dict) -> dict:
    """A result without what legitimately differs between runs (timings, placement)."""
    return {
        k: v for k, v in result.items() if k not in {"duration", "node", "attempts", "transcript"}
    }


def write_tasks(tmp_path, count: int):
    tasks = git_tasks(tmp_path / "repos", count)
    file = tmp_path / "tasks.jsonl"
    file.write_text("".join(t.model_dump_json(exclude_defaults=True) + "\n" for t in tasks))
    return file


def lovia(
    *args: str, model: TaskModel, cwd, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    env = {**os.environ, **model.env(), **(env or {})}
    env.pop("LOVIA_MODEL", None)
    return subprocess.Popen(
        [sys.executable, "-m", "lovia.cli", "batch", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
