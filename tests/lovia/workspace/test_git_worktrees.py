"""The git plumbing of worktree runs, on real repositories in a temporary folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lovia.workspace import git_worktrees as g
from tests.support.git_repo import SAMPLE_FILES, git, init_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo", SAMPLE_FILES)


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


async def test_lovias_own_git_runs_no_program_the_repository_names(
    repo: Path, tmp_path: Path
) -> None:
    """A ``core.fsmonitor``, ``diff.external`` and textconv driver in the repository's config
    (planted, say, by an earlier command) never run for lovia's worktree git."""
    marker = tmp_path / "ran.log"
    program = tmp_path / "planted.sh"
    program.write_text(f'#!/bin/sh\necho "$*" >> {marker}\n')
    program.chmod(0o755)
    (repo / ".gitattributes").write_text("*.txt diff=planted\n")
    git(repo, "add", ".gitattributes")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "attrs")
    with (repo / ".git" / "config").open("a") as config:
        config.write(f"[core]\n\tfsmonitor = {program}\n[diff]\n\texternal = {program}\n")
        config.write(f'[diff "planted"]\n\ttextconv = {program}\n')
    (repo / "a.txt").write_text("a\nchanged\n")
    wt = tmp_path / "state" / "worktrees" / "job-1"
    await g.add(repo, wt, "lovia/job-1", checkout=False)
    await g.check_out(wt)
    base = await g.carry_uncommitted(repo, wt, lambda rel: False)
    assert (wt / "a.txt").read_text() == "a\nchanged\n"
    (wt / "a.txt").write_text("a\nchanged\nagain\n")
    tip = await g.commit_all(wt, "work")
    await g.snapshot_tree(wt)
    assert not marker.exists(), marker.read_text()
    patch = await g.diff(wt, base, tip)
    assert b"+again" in patch
    assert not marker.exists(), marker.read_text()


async def test_the_servers_git_dir_does_not_redirect_lovias_worktree_git(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server started with ``GIT_DIR`` (from a git hook, say) still makes the worktree of
    the repository it was asked for."""
    other = init_repo(tmp_path / "other", {"x.txt": "x\n"})
    wt = tmp_path / "state" / "worktrees" / "job-1"
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    await g.add(repo, wt, "lovia/job-1")
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_WORK_TREE")
    assert str(wt) in git(repo, "worktree", "list")
    assert str(wt) not in git(other, "worktree", "list")
    assert (wt / "a.txt").read_text() == "a\n"
