"""A small run of ``bench/big_repo.py`` (2,000 files instead of 150,000): the same server,
scripted agents, shell reads and search tools, in a few seconds. Its times are not the
benchmark's; what is checked is that it runs through and that no denied file is listed,
searched or printed by any shell command (the sandbox's promise, at every depth)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lovia.workspace.sandbox import BubblewrapExecutor

BENCH = Path(__file__).resolve().parents[2] / "bench" / "big_repo.py"


@pytest.mark.skipif(not BubblewrapExecutor.available(), reason="bubblewrap cannot run here")
def test_the_big_repository_bench_runs_and_leaks_nothing(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--files", "2000", "--runs", "1", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "no denied file was listed, searched or printed" in out, out
    assert "PROBLEM" not in out
    for row in ("lovia/run answer, @root folder", "first sandboxed command", "grep_files"):
        assert row in out
    assert "approvals asked" in out and "history" in out  # git log -p over a denied file asks
