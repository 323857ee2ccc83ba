"""The git plumbing of worktree runs, on real repositories in a temporary folder."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from lovia_server.host import git_worktrees as g
from lovia_server.host import worktree_landing as landing

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("a\n")
    (root / "gone.txt").write_text("bye\n")
    (root / "img.bin").write_bytes(b"\0\1\2" * 10)
    (root / ".gitignore").write_text("*.log\n")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    return root


def test_slug_is_short_and_branch_safe() -> None:
    assert g.slug("Fix the login bug in auth.py, please!") == "fix-the-login-bug-in"
    assert g.slug("Ünïcode ~^: only") == "n-code-only"
    assert g.slug("   ") == "task"
    assert g.slug("x" * 80) == "x" * 32
    assert g.slug("a b c d e f g h") == "a-b-c-d-e"


async def test_not_a_repo_and_no_commit_are_told_apart(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(g.GitProblem) as info:
        await g.repo_root(plain)
    assert info.value.reason == "not-a-repo" and info.value.hint
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    with pytest.raises(g.GitProblem) as info:
        await g.repo_root(fresh)
    assert info.value.reason == "no-commits"


async def test_carries_uncommitted_changes_but_not_denied_or_ignored(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "a.txt").write_text("a\nchanged\n")
    (repo / "gone.txt").unlink()
    (repo / "img.bin").write_bytes(b"\0\x09\x09" * 12)
    (repo / "new").mkdir()
    (repo / "new" / "b.txt").write_text("new\n")
    (repo / ".env").write_text("TOKEN=1\n")
    (repo / "debug.log").write_text("noise\n")
    git(repo, "add", "new/b.txt")  # staged counts too
    wt = tmp_path / "state" / "worktrees" / "job-1"
    head = await g.add(repo, wt, "lovia/job-1")
    base = await g.carry_uncommitted(repo, wt, lambda rel: rel == ".env")
    assert base != head
    assert (wt / "a.txt").read_text() == "a\nchanged\n"
    assert not (wt / "gone.txt").exists()
    assert (wt / "img.bin").read_bytes() == b"\0\x09\x09" * 12
    assert (wt / "new" / "b.txt").read_text() == "new\n"
    assert not (wt / ".env").exists() and not (wt / "debug.log").exists()
    # the carried state is the branch's commit; the user's repository is untouched
    assert git(wt, "status", "--porcelain") == ""
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert "new/b.txt" in git(repo, "diff", "--cached", "--name-only")


async def test_lock_list_remove(repo: Path, tmp_path: Path) -> None:
    wt = tmp_path / "wt"
    await g.add(repo, wt, "lovia/x-1")
    await g.lock(repo, wt)
    (entry,) = [e for e in await g.entries(repo) if e.path == wt.resolve()]
    assert entry.locked and entry.branch == "lovia/x-1"
    assert "lovia: a worktree run owns this worktree" in git(
        repo, "worktree", "list", "--porcelain"
    )
    (wt / "a.txt").write_text("dirty\n")
    await g.remove(repo, wt)  # locked and dirty: removed all the same (the caller decided)
    assert not wt.exists() and str(wt) not in git(repo, "worktree", "list")
    assert await g.branch_exists(repo, "lovia/x-1")
    await g.delete_branch(repo, "lovia/x-1")
    assert not await g.branch_exists(repo, "lovia/x-1")


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
