"""Landing a worktree run's changes, on real repositories in a temporary folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lovia.workspace import git_worktrees as g
from lovia_server.host import worktree_landing as landing
from tests.support.git_repo import SAMPLE_FILES, git, init_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo", SAMPLE_FILES)


async def test_landing_merges_clean_changes_and_flags_overlaps(repo: Path, tmp_path: Path) -> None:
    (repo / "a.txt").write_text("1\n2\n3\n4\n5\n6\n7\n8\n")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "lines")
    wt = tmp_path / "wt"
    base = await g.add(repo, wt, "lovia/m-1")
    (wt / "a.txt").write_text("1\nTWO\n3\n4\n5\n6\n7\n8\n")
    (wt / "img.bin").write_bytes(b"\0new")
    tip = await g.snapshot_tree(wt)
    assert git(wt, "status", "--porcelain")  # the snapshot left the worktree as it was
    # the user changed a far line of a.txt (merges) and img.bin (binary: a conflict)
    (repo / "a.txt").write_text("1\n2\n3\n4\n5\n6\n7\nEIGHT\n")
    (repo / "img.bin").write_bytes(b"\0mine")
    found, skipped = await landing.changes(repo, wt, base, tip, lambda rel: False)
    assert skipped == [] and sorted(c.path for c in found) == ["a.txt", "img.bin"]
    plans = {pl.change.path: pl for pl in await landing.plan(found, {}, set())}
    assert plans["a.txt"].verdict == "merged"
    assert plans["a.txt"].result == b"1\nTWO\n3\n4\n5\n6\n7\nEIGHT\n"
    assert plans["img.bin"].verdict == "conflict"
    # the user's review replaces the run's text; an overlap with it is a conflict
    (repo / "a.txt").write_text("1\nmine\n3\n4\n5\n6\n7\n8\n")
    found, _ = await landing.changes(repo, wt, base, tip, lambda rel: rel == "img.bin")
    (plan,) = await landing.plan(found, {}, set())
    assert plan.verdict == "conflict"
    (plan,) = await landing.plan(found, {"a.txt": "1\nmine\n3\n4\n5\n6\n7\n8\n"}, set())
    assert plan.verdict == "unchanged"
    (plan,) = await landing.plan(found, {}, {"a.txt"})
    assert plan.verdict == "conflict" and "unsaved" in (plan.reason or "")
