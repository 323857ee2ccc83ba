"""Landing a worktree run's changes, on real repositories in a temporary folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from lovia.workspace import git_worktrees as g
from lovia_server.host import worktree_landing as landing
from tests.support.git_repo import SAMPLE_FILES, git, init_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def nothing(rel: str) -> bool:
    """A judge that finds nothing (not denied, not protected)."""
    return False


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
    found, skipped = await landing.changes(repo, wt, base, tip, nothing, protected=nothing)
    assert skipped == [] and sorted(c.path for c in found) == ["a.txt", "img.bin"]
    plans = {pl.change.path: pl for pl in await landing.plan(found, {}, set())}
    assert plans["a.txt"].verdict == "merged"
    assert plans["a.txt"].result == b"1\nTWO\n3\n4\n5\n6\n7\nEIGHT\n"
    assert plans["img.bin"].verdict == "conflict"
    # the user's review replaces the run's text; an overlap with it is a conflict
    (repo / "a.txt").write_text("1\nmine\n3\n4\n5\n6\n7\n8\n")
    found, _ = await landing.changes(
        repo, wt, base, tip, lambda rel: rel == "img.bin", protected=nothing
    )
    (plan,) = await landing.plan(found, {}, set())
    assert plan.verdict == "conflict"
    (plan,) = await landing.plan(found, {"a.txt": "1\nmine\n3\n4\n5\n6\n7\n8\n"}, set())
    assert plan.verdict == "unchanged"
    (plan,) = await landing.plan(found, {}, {"a.txt"})
    assert plan.verdict == "conflict" and "unsaved" in (plan.reason or "")


async def _landings(repo: Path, wt: Path, base: str) -> list[landing.Landing]:
    tip = await g.snapshot_tree(wt)
    found, _ = await landing.changes(repo, wt, base, tip, nothing, protected=nothing)
    return await landing.plan(found, {}, set())


async def test_a_hard_link_or_a_fifo_in_the_workspace_is_never_written_through(
    repo: Path, tmp_path: Path
) -> None:
    """A hard link is replaced (its other name keeps its bytes); a FIFO is a conflict, never
    opened (reading it would hang the diff; writing it would feed whoever listens)."""
    wt = tmp_path / "wt"
    base = await g.add(repo, wt, "lovia/h-1")
    (wt / "a.txt").write_text("run\n")
    (wt / "pipe").write_text("run\n")
    outside = tmp_path / "outside.txt"
    outside.write_text(SAMPLE_FILES["a.txt"])  # type: ignore[arg-type]
    (repo / "a.txt").unlink()
    os.link(outside, repo / "a.txt")
    os.mkfifo(repo / "pipe")
    plans = {pl.change.path: pl for pl in await _landings(repo, wt, base)}
    assert plans["pipe"].verdict == "conflict" and "regular file" in (plans["pipe"].reason or "")
    assert plans["a.txt"].verdict == "clean"
    assert await landing.write(repo, [plans["a.txt"]], {}) == []
    assert (repo / "a.txt").read_text() == "run\n"
    assert outside.read_text() == SAMPLE_FILES["a.txt"]


async def test_a_folder_swapped_for_a_link_after_the_review_stops_the_whole_landing(
    repo: Path, tmp_path: Path
) -> None:
    """The check before writing walks every folder without following a link: a folder that
    became a link since the plan refuses the landing before any file is written."""
    outside = tmp_path / "outside"
    outside.mkdir()
    wt = tmp_path / "wt"
    base = await g.add(repo, wt, "lovia/s-1")
    (wt / "a.txt").write_text("changed\n")
    (wt / "cache").mkdir()
    (wt / "cache" / "autostart.sh").write_text("echo pwned\n")
    plans = await _landings(repo, wt, base)
    assert {pl.verdict for pl in plans} == {"clean"}
    (repo / "cache").symlink_to(outside)  # swapped in after the review
    refused = await landing.write(repo, plans, {})
    assert [pl.change.path for pl in refused] == ["cache/autostart.sh"]
    assert refused[0].verdict == "conflict" and "link" in (refused[0].reason or "")
    assert list(outside.iterdir()) == []
    assert (repo / "a.txt").read_text() == SAMPLE_FILES["a.txt"]  # nothing landed
