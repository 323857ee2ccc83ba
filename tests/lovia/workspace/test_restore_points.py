"""Restore points with real files, a real ``git`` and real child processes."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lovia import tool
from lovia.exceptions import UserError
from lovia.workspace import LocalWorkspaceSession, WorkspacePolicy
from lovia.workspace import restore_points as rp_mod
from lovia.workspace.restore_points import (
    RestorePointError,
    RestorePoints,
    RestorePointSettings,
)
from lovia.workspace.tools import edit_file, grep_files, read_file, shell

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

DENIED = (".env*", "secrets")


def tree_state(root: Path) -> dict[str, tuple[str, bytes, int]]:
    """Every file/symlink under ``root`` (outside ``.git``): kind, bytes, permission bits."""
    out: dict[str, tuple[str, bytes, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p).encode(), 0)
            else:
                out[rel] = ("file", p.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def git_in_store(rp: RestorePoints, *args: str) -> str:
    assert rp.git is not None
    return subprocess.run(
        rp.git.argv(list(args)),
        env=rp.git.env(),
        cwd=rp.root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "replace")


def all_blobs(rp: RestorePoints) -> list[bytes]:
    assert rp.git is not None
    listing = git_in_store(rp, "cat-file", "--batch-all-objects", "--batch-check")
    shas = [line.split()[0] for line in listing.splitlines() if line.split()[1] == "blob"]
    data = subprocess.run(
        rp.git.argv(["cat-file", "--batch"]),
        env=rp.git.env(),
        input="".join(s + "\n" for s in shas).encode(),
        capture_output=True,
        check=True,
    ).stdout
    return [data] if shas else []


def _raw_file(path: bytes, data: bytes | None = None) -> bytes:
    """Write (with ``data``) or read a file named by raw bytes."""
    if data is not None:
        with open(path, "wb") as fh:
            fh.write(data)
        return data
    with open(path, "rb") as fh:
        return fh.read()


def _exists(path: Path) -> bool:
    return path.exists()


def make_project(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "src" / "util.py").write_text("X = 1\nY = 2\n")
    (root / "src" / "fmt.py").write_text("def  f( a,b ):\n  return a+b\n")
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    (root / "data.bin").write_bytes(bytes(range(256)) * 4)
    (root / "private.txt").write_text("only me\n")
    (root / "private.txt").chmod(0o600)
    (root / "docs").mkdir()
    (root / "docs" / "old.md").write_text("# old\n")
    os.symlink("src/app.py", root / "app-link")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "build").mkdir()
    (root / "build" / "out.js").write_text("built v1\n")
    (root / "debug.log").write_text("log v1\n")
    (root / ".env").write_text("TOKEN=top-secret-env-value\n")
    (root / "secrets").mkdir()
    (root / "secrets" / "key.pem").write_text("top-secret-key-material\n")


async def open_points(root: Path, store: Path, **kw: object) -> RestorePoints:
    policy = kw.pop("policy", WorkspacePolicy.coding(denied_paths=DENIED))
    return await RestorePoints.open(root, store, policy=policy, **kw)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "state" / "restore-points"


# --------------------------------------------------------------------------- a run


async def test_run_like_sequence_restores_the_first_point_byte_identical_with_modes(
    root: Path, store: Path
) -> None:
    make_project(root)
    before = tree_state(root)
    rp = await open_points(root, store)
    session = LocalWorkspaceSession(root, policy=WorkspacePolicy.trusted(denied_paths=DENIED))
    try:
        first = await rp.before_turn("s1", 0, "refactor please", tools=[edit_file])
        assert first is not None and first.kind == "turn" and first.turn_index == 0
        # turn 0: two edits, a shell command that creates and deletes files, a formatter
        await session.edit_text("src/app.py", "return 1", "return 2")
        await session.write_text("src/util.py", "X = 10\nY = 20\nZ = 30\n")
        result = await session.run(
            "mkdir -p gen/deep && echo made > gen/deep/new.txt && echo t > notes.txt"
            " && rm docs/old.md && chmod +x src/util.py && chmod -x run.sh"
            " && rm app-link && ln -s src/util.py app-link"
        )
        assert result.ok, result
        fmt = (
            "import pathlib; p = pathlib.Path('src/fmt.py');"
            " p.write_text('def f(a, b):\\n    return a + b\\n')"
        )
        assert (await session.run(f'{sys.executable} -c "{fmt}"')).ok
        await rp.after_run("s1")
        second = await rp.before_turn("s1", 1, "more", tools=[shell])
        assert second is not None
        assert {c.path for c in second.changed} >= {
            "src/app.py",
            "src/util.py",
            "src/fmt.py",
            "gen/deep/new.txt",
            "notes.txt",
            "docs/old.md",
            "run.sh",
            "app-link",
        }
        (root / "src" / "app.py").write_text("def main():\n    return 3\n")
        await rp.after_run("s1")

        preview = await rp.preview(first.id)
        actions = {f.path: f.action for f in preview.files}
        assert actions["gen/deep/new.txt"] == "delete"
        assert actions["docs/old.md"] == "create"
        assert actions["src/fmt.py"] == "modify"
        assert not preview.hand_changed
        fmt_diff = next(f for f in preview.files if f.path == "src/fmt.py").diff
        assert "-    return a + b" in fmt_diff and "+  return a+b" in fmt_diff

        restored = await rp.restore(first.id, session_id="s1")
        assert restored.undo_point is not None and not restored.kept
        assert tree_state(root) == before
        assert not (root / "gen").exists()
    finally:
        await session.close()
        await rp.close()


async def test_restore_of_a_restore_brings_back_the_tree_before_the_restore(
    root: Path, store: Path
) -> None:
    make_project(root)
    rp = await open_points(root, store)
    try:
        point = await rp.snapshot(label="start")
        (root / "src" / "app.py").write_text("changed\n")
        (root / "docs" / "old.md").unlink()
        (root / "fresh.txt").write_text("fresh\n")
        (root / "run.sh").chmod(0o644)
        await rp.after_run()
        changed = tree_state(root)
        first = await rp.restore(point.id)
        assert first.undo_point is not None
        assert tree_state(root) != changed
        again = await rp.restore(first.undo_point.id)
        assert not again.kept, "the files a restore wrote are not hand changes"
        assert tree_state(root) == changed
        kinds = [p.kind for p in await rp.list_points()]
        assert kinds == ["manual", "restore", "restore"]
    finally:
        await rp.close()


async def test_restore_turns_a_directory_back_into_a_file_and_back(root: Path, store: Path) -> None:
    (root / "thing").write_text("a file\n")
    rp = await open_points(root, store)
    try:
        as_file = await rp.snapshot()
        (root / "thing").unlink()
        (root / "thing").mkdir()
        (root / "thing" / "inner.txt").write_text("inside\n")
        await rp.after_run()
        as_dir = tree_state(root)
        result = await rp.restore(as_file.id)
        assert (root / "thing").read_text() == "a file\n"
        assert result.undo_point is not None
        await rp.restore(result.undo_point.id)
        assert tree_state(root) == as_dir
    finally:
        await rp.close()


async def test_odd_file_names_are_stored_listed_and_restored(root: Path, store: Path) -> None:
    raw = os.path.join(os.fsencode(root), b"caf\xe9.txt")  # Latin-1, not UTF-8
    _raw_file(raw, b"latin\n")
    (root / "two\nlines.txt").write_text("newline in the name\n")
    (root / "space .txt").write_text("space\n")
    rp = await open_points(root, store)
    try:
        point = await rp.snapshot()
        assert {c.path for c in point.changed} == {"caf\ufffd.txt", "two\nlines.txt", "space .txt"}
        point.model_dump_json()
        os.unlink(raw)
        (root / "two\nlines.txt").unlink()
        (root / "space .txt").write_text("changed\n")
        await rp.after_run()
        preview = await rp.preview(point.id)
        preview.model_dump_json()
        result = await rp.restore(point.id)
        assert sorted(result.restored) == sorted(["caf\ufffd.txt", "space .txt", "two\nlines.txt"])
        assert _raw_file(raw) == b"latin\n"
        assert (root / "two\nlines.txt").read_text() == "newline in the name\n"
        assert (root / "space .txt").read_text() == "space\n"
    finally:
        await rp.close()


async def test_restore_never_writes_through_a_symlink_to_outside(
    root: Path, store: Path, outside: Path
) -> None:
    (root / "sub").mkdir()
    (root / "sub" / "file.txt").write_text("inside\n")
    rp = await open_points(root, store)
    try:
        point = await rp.snapshot()
        shutil.rmtree(root / "sub")
        os.symlink(outside, root / "sub")  # the agent swapped the directory for a link
        await rp.after_run()
        before_outside = tree_state(outside)
        await rp.restore(point.id)
        assert tree_state(outside) == before_outside
        assert not (root / "sub").is_symlink()
        assert (root / "sub" / "file.txt").read_text() == "inside\n"
    finally:
        await rp.close()


async def test_a_store_inside_a_git_directory_is_refused(root: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"\.git"):
        await RestorePoints.open(root, tmp_path / "repo" / ".git" / "lovia")


# --------------------------------------------------------------------------- filtering


async def test_ignored_and_denied_files_are_never_stored_or_touched(
    root: Path, store: Path
) -> None:
    make_project(root)
    rp = await open_points(root, store)
    try:
        point = await rp.snapshot()
        listed = git_in_store(rp, "ls-tree", "-r", "--name-only", point.commit).split("\n")
        assert "src/app.py" in listed and "run.sh" in listed
        for hidden in (".env", "secrets/key.pem", "build/out.js", "debug.log"):
            assert hidden not in listed
        blobs = b"".join(all_blobs(rp))
        assert b"top-secret" not in blobs and b"built v1" not in blobs and b"log v1" not in blobs
        assert rp.git is not None
        exclude = (rp.git.git_dir / "info" / "exclude").read_text()
        assert ".env*" in exclude and "secrets" in exclude

        # change them all after the point; a restore leaves them as they are
        (root / ".env").write_text("TOKEN=rotated\n")
        (root / "secrets" / "key.pem").unlink()
        (root / "secrets" / "new.pem").write_text("top-secret-new\n")
        (root / "build" / "out.js").write_text("built v2\n")
        (root / "debug.log").write_text("log v2\n")
        (root / "src" / "app.py").write_text("agent edit\n")
        await rp.after_run()
        await rp.before_turn("s", 1, tools=[shell])
        blobs = b"".join(all_blobs(rp))
        assert b"top-secret" not in blobs and b"rotated" not in blobs and b"built v2" not in blobs
        preview = await rp.preview(point.id)
        assert [f.path for f in preview.files] == ["src/app.py"]
        await rp.restore(point.id)
        assert (root / "src" / "app.py").read_text() == "def main():\n    return 1\n"
        assert (root / ".env").read_text() == "TOKEN=rotated\n"
        assert not (root / "secrets" / "key.pem").exists()
        assert (root / "secrets" / "new.pem").read_text() == "top-secret-new\n"
        assert (root / "build" / "out.js").read_text() == "built v2\n"
        assert (root / "debug.log").read_text() == "log v2\n"
    finally:
        await rp.close()


async def test_a_file_denied_later_is_dropped_from_the_store_on_the_next_open(
    root: Path, store: Path
) -> None:
    (root / "notes.txt").write_text("plain-notes\n")
    (root / "keys.txt").write_text("later-secret\n")
    rp = await open_points(root, store)
    await rp.snapshot()
    await rp.close()
    stricter = WorkspacePolicy.coding(denied_paths=(*DENIED, "keys.txt"))
    rp = await open_points(root, store, policy=stricter)
    try:
        point = await rp.snapshot()
        listed = git_in_store(rp, "ls-tree", "-r", "--name-only", point.commit)
        assert "keys.txt" not in listed and "notes.txt" in listed
        # the older point still holds it until its session is deleted and pruned
        assert "keys.txt" in {c.path for c in point.changed}
    finally:
        await rp.close()


async def test_files_over_the_size_cap_are_skipped_listed_and_never_touched(
    root: Path, store: Path
) -> None:
    (root / "small.txt").write_text("small\n")
    (root / "big.bin").write_bytes(b"B" * 5000)
    rp = await open_points(root, store, settings=RestorePointSettings(max_file_bytes=1000))
    try:
        point = await rp.snapshot()
        assert [(s.path, s.reason) for s in point.skipped] == [("big.bin", "too_large")]
        assert "big.bin" not in git_in_store(rp, "ls-tree", "-r", "--name-only", point.commit)
        (root / "big.bin").write_bytes(b"C" * 6000)
        (root / "small.txt").write_text("edited\n")
        await rp.after_run()
        await rp.restore(point.id)
        assert (root / "small.txt").read_text() == "small\n"
        assert (root / "big.bin").read_bytes() == b"C" * 6000
    finally:
        await rp.close()


async def test_a_big_first_snapshot_stores_the_same_tree_as_git_add(
    root: Path, store: Path, tmp_path: Path
) -> None:
    _fill(root, "bulk", 450)  # over the bulk threshold: blobs go through our own pack
    (root / "tool.sh").write_text("#!/bin/sh\n")
    (root / "tool.sh").chmod(0o755)
    os.symlink("d1/f1.txt", root / "link")
    (root / "dup.txt").write_text("bulk 1\n" * 50)  # same content as d1/f1.txt
    rp = await open_points(root, store, policy=WorkspacePolicy.coding())
    try:
        point = await rp.snapshot()
        assert point.changed_count == 454
        copy = tmp_path / "plain"
        shutil.copytree(root, copy, symlinks=True)
        _git(copy, "init", "-q")
        _git(copy, "add", "-A")
        assert point.tree == _git(copy, "write-tree").strip()
        assert "pack" in git_in_store(rp, "count-objects", "-v")
    finally:
        await rp.close()


# --------------------------------------------------------------------------- hand changes


async def test_a_hand_change_after_the_point_is_flagged_and_kept_unless_forced(
    root: Path, store: Path
) -> None:
    (root / "agent.txt").write_text("v1\n")
    (root / "mine.txt").write_text("v1\n")
    rp = await open_points(root, store)
    try:
        point = await rp.before_turn("s", 0, "go")
        assert point is not None
        (root / "agent.txt").write_text("agent v2\n")
        (root / "mine.txt").write_text("agent v2\n")
        await rp.after_run("s")
        (root / "mine.txt").write_text("typed by hand\n")  # after the run: by hand

        preview = await rp.preview(point.id)
        flags = {f.path: f.hand_changed for f in preview.files}
        assert flags == {"agent.txt": False, "mine.txt": True}
        assert preview.hand_changed == ["mine.txt"]
        mine = next(f for f in preview.files if f.path == "mine.txt")
        assert (mine.old_text, mine.new_text) == ("typed by hand\n", "v1\n")
        # the caller may say the agent wrote it after all
        vouched = await rp.preview(point.id, agent_paths=["mine.txt"])
        assert not vouched.hand_changed

        result = await rp.restore(point.id)
        assert result.kept == ["mine.txt"] and result.restored == ["agent.txt"]
        assert (root / "mine.txt").read_text() == "typed by hand\n"
        assert (root / "agent.txt").read_text() == "v1\n"

        forced = await rp.restore(point.id, force_paths=["mine.txt"])
        assert forced.restored == ["mine.txt"]
        assert (root / "mine.txt").read_text() == "v1\n"
    finally:
        await rp.close()


async def test_a_hand_change_between_later_runs_is_still_flagged(root: Path, store: Path) -> None:
    """A change made by hand between two later runs is part of the later points' trees;
    restoring to an earlier point still flags it (it was made after that point)."""
    (root / "agent.txt").write_text("v1\n")
    (root / "mine.txt").write_text("v1\n")
    rp = await open_points(root, store)
    try:
        first = await rp.before_turn("s", 0, "one")
        assert first is not None
        (root / "agent.txt").write_text("agent v2\n")
        await rp.after_run("s")
        (root / "mine.txt").write_text("typed by hand\n")  # between the runs
        second = await rp.before_turn("s", 1, "two")
        assert second is not None and second.base_tree
        (root / "agent.txt").write_text("agent v3\n")
        await rp.after_run("s")

        preview = await rp.preview(first.id)
        assert {f.path: f.hand_changed for f in preview.files} == {
            "agent.txt": False,
            "mine.txt": True,
        }
        # restoring the second point: the hand change came before it, nothing is flagged
        assert not (await rp.preview(second.id)).hand_changed
        result = await rp.restore(first.id)
        assert result.kept == ["mine.txt"]
        assert (root / "mine.txt").read_text() == "typed by hand\n"
        assert (root / "agent.txt").read_text() == "v1\n"
    finally:
        await rp.close()


async def test_hand_changes_recorded_by_a_deleted_session_still_flag(
    root: Path, store: Path
) -> None:
    (root / "mine.txt").write_text("v1\n")
    (root / "agent.txt").write_text("v1\n")
    rp = await open_points(root, store)
    try:
        keep = await rp.before_turn("keep", 0)
        assert keep is not None
        (root / "agent.txt").write_text("v2\n")
        await rp.after_run("keep")
        (root / "mine.txt").write_text("by hand\n")
        other = await rp.before_turn("other", 0)  # records the hand change
        assert other is not None and other.base_tree
        await rp.after_run("other")
        assert await rp.delete_session("other") == 1
        assert (await rp.preview(keep.id)).hand_changed == ["mine.txt"]
        assert rp.git is not None
        assert "refs/lovia/hand/" in git_in_store(rp, "for-each-ref")
        # with no point left, the hand records go too
        await rp.delete_session("keep")
        assert "refs/lovia/" not in git_in_store(rp, "for-each-ref").replace(
            "refs/lovia/latest", ""
        )
    finally:
        await rp.close()


async def test_unsaved_paths_from_the_host_are_flagged(root: Path, store: Path) -> None:
    (root / "a.txt").write_text("v1\n")
    rp = await open_points(root, store)
    try:
        point = await rp.before_turn("s", 0)
        assert point is not None
        (root / "a.txt").write_text("v2\n")
        await rp.after_run("s")
        assert not (await rp.preview(point.id)).hand_changed
        preview = await rp.preview(point.id, hand_paths=["a.txt"])
        assert preview.hand_changed == ["a.txt"]
        kept = await rp.restore(point.id, hand_paths=["a.txt"])
        assert kept.kept == ["a.txt"] and (root / "a.txt").read_text() == "v2\n"
    finally:
        await rp.close()


async def test_points_list_the_files_their_turn_changed(root: Path, store: Path) -> None:
    (root / "a.txt").write_text("a\n")
    (root / "gone.txt").write_text("gone\n")
    rp = await open_points(root, store)
    try:
        first = await rp.before_turn("s", 0, "first")
        (root / "a.txt").write_text("a2\n")
        (root / "new.txt").write_text("new\n")
        await rp.after_run("s")
        (root / "hand.txt").write_text("by hand\n")  # not the turn's doing
        second = await rp.before_turn("s", 1, "second")
        (root / "gone.txt").unlink()
        await rp.after_run("s")
        assert first is not None and second is not None
        listed = await rp.list_points("s", with_changes=True)
        changes = {p.id: {(c.path, c.status) for c in p.changes_after or []} for p in listed}
        assert changes[first.id] == {("a.txt", "modified"), ("new.txt", "added")}
        assert changes[second.id] == {("gone.txt", "deleted")}
        assert [p.changes_after_count for p in listed] == [2, 1]
        assert all(p.changes_after is None for p in await rp.list_points("s"))
    finally:
        await rp.close()


async def test_drop_turns_deletes_the_cut_turns_points_and_a_new_turn_gets_one(
    root: Path, store: Path
) -> None:
    (root / "a.txt").write_text("a\n")
    rp = await open_points(root, store)
    try:
        for turn in range(3):
            assert await rp.before_turn("s", turn) is not None
            (root / "a.txt").write_text(f"turn {turn}\n")
            await rp.after_run("s")
        points = await rp.list_points("s")
        undo = (await rp.restore(points[1].id, session_id="s")).undo_point
        assert undo is not None
        assert await rp.drop_turns("s", 1) == 2
        remaining = await rp.list_points("s")
        assert [(p.kind, p.turn_index) for p in remaining] == [("turn", 0), ("restore", None)]
        again = await rp.before_turn("s", 1, "asked again")
        assert again is not None and again.turn_index == 1
    finally:
        await rp.close()


async def test_a_preview_shows_no_text_for_binary_or_big_files(root: Path, store: Path) -> None:
    (root / "big.txt").write_text("line\n" * 400)
    (root / "img.bin").write_bytes(b"\x89PNG\0\0" * 10)
    (root / "small.txt").write_text("a\n")
    rp = await open_points(root, store, settings=RestorePointSettings(preview_max_bytes=1000))
    try:
        point = await rp.snapshot()
        for name in ("big.txt", "img.bin", "small.txt"):
            (root / name).write_bytes((root / name).read_bytes() + b"more\n")
        await rp.after_run()
        files = {f.path: f for f in (await rp.preview(point.id)).files}
        assert files["big.txt"].too_large and not files["big.txt"].binary
        assert files["big.txt"].old_text is None and "too large" in files["big.txt"].diff
        assert files["img.bin"].binary and not files["img.bin"].too_large
        assert "Binary files" in files["img.bin"].diff
        assert files["small.txt"].new_text == "a\n" and not files["small.txt"].too_large
    finally:
        await rp.close()


# --------------------------------------------------------------------------- hook


@tool
def deploy() -> str:
    """Deploy (declares no kind: it may change files)."""
    return "deployed"


@tool(kind="think")
def plan() -> str:
    """Plan (a think tool: it changes no files)."""
    return "planned"


async def test_before_turn_snapshots_once_per_turn_and_only_for_write_capable_calls(
    root: Path, store: Path
) -> None:
    (root / "a.txt").write_text("a\n")
    rp = await open_points(root, store)
    try:
        assert await rp.before_turn("s", 0, "look", tools=[read_file, grep_files, plan]) is None
        first = await rp.before_turn("s", 0, "look", tools=[read_file, shell])
        assert first is not None and first.label == "look" and first.user_message == "look"
        assert await rp.before_turn("s", 0, "look", tools=[shell]) is None
        # a tool that declares no kind may write: it gets a point
        undeclared = await rp.before_turn("s", 1, tools=[deploy])
        assert undeclared is not None and undeclared.label == "Turn 1"
        custom = await rp.before_turn(
            "s", 2, tools=[plan], is_write_tool=lambda t: t.name == "plan"
        )
        assert custom is not None
        assert [p.turn_index for p in await rp.list_points("s")] == [0, 1, 2]
        assert await rp.list_points("other") == []
    finally:
        await rp.close()
    # a fresh store object (a restarted host) does not duplicate a recorded turn
    rp = await open_points(root, store)
    try:
        assert await rp.before_turn("s", 2) is None
        assert len(await rp.list_points("s")) == 3
    finally:
        await rp.close()


async def test_concurrent_hooks_for_one_turn_take_one_point(root: Path, store: Path) -> None:
    (root / "a.txt").write_text("a\n")
    rp = await open_points(root, store)
    try:
        results = await asyncio.gather(*(rp.before_turn("s", 3, "x") for _ in range(4)))
        assert sum(r is not None for r in results) == 1
        assert len(await rp.list_points("s")) == 1
    finally:
        await rp.close()


# --------------------------------------------------------------------------- storage


async def test_a_damaged_shadow_index_is_rebuilt(root: Path, store: Path) -> None:
    (root / "a.txt").write_text("a\n")
    rp = await open_points(root, store)
    try:
        first = await rp.snapshot()
        assert rp.git is not None
        rp.git.index_file.write_bytes(b"garbage, not an index")
        (root / "a.txt").write_text("b\n")
        second = await rp.snapshot()
        assert [(c.path, c.status) for c in second.changed] == [("a.txt", "modified")]
        # changed outside a run before the second point: a hand change, restored when forced
        assert (await rp.preview(first.id)).hand_changed == ["a.txt"]
        await rp.restore(first.id, force_paths=["a.txt"])
        assert (root / "a.txt").read_text() == "a\n"
    finally:
        await rp.close()


async def test_delete_session_removes_its_points_and_prunes_their_objects(
    root: Path, store: Path
) -> None:
    (root / "f.txt").write_text("session-one-only-content\n")
    rp = await open_points(root, store)
    try:
        gone = await rp.before_turn("one", 0)
        assert gone is not None
        (root / "f.txt").write_text("shared later content\n")
        await rp.after_run("one")
        kept = await rp.before_turn("two", 0)
        assert kept is not None
        assert b"session-one-only-content" in b"".join(all_blobs(rp))
        assert await rp.delete_session("one") == 1
        assert [p.id for p in await rp.list_points()] == [kept.id]
        assert b"session-one-only-content" not in b"".join(all_blobs(rp))
        with pytest.raises(RestorePointError, match="Unknown restore point"):
            await rp.preview(gone.id)
    finally:
        await rp.close()


async def test_prune_deletes_the_oldest_points_beyond_the_size_cap(root: Path, store: Path) -> None:
    rp = await open_points(root, store)
    try:
        ids = []
        for i in range(6):
            (root / f"f{i}.bin").write_bytes(os.urandom(20_000))
            ids.append((await rp.snapshot(label=str(i))).id)
        assert await rp.prune(max_bytes=10**9) == []
        deleted = await rp.prune(max_bytes=60_000)
        remaining = [p.id for p in await rp.list_points()]
        assert deleted and deleted == ids[: len(deleted)]
        assert remaining == ids[len(deleted) :] and remaining[-1] == ids[-1]
    finally:
        await rp.close()


async def test_prune_packs_many_loose_objects_without_deleting_points(
    root: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rp_mod, "_PACK_LOOSE_OBJECTS", 5)
    rp = await open_points(root, store)
    try:
        for i in range(4):
            (root / f"f{i}.txt").write_text(f"content {i}\n")
            await rp.snapshot()

        def loose() -> int:
            stats = dict(
                line.split(": ") for line in git_in_store(rp, "count-objects", "-v").splitlines()
            )
            return int(stats["count"])

        assert loose() > 5
        assert await rp.prune() == []
        assert loose() == 0
        assert len(await rp.list_points()) == 4
    finally:
        await rp.close()


async def test_unknown_point_ids_get_a_clear_error(root: Path, store: Path) -> None:
    rp = await open_points(root, store)
    try:
        for bad in ("nope", "rp-0000000000000000-000000", "../../etc"):
            with pytest.raises(RestorePointError, match="Unknown restore point") as info:
                await rp.restore(bad)
            assert info.value.hint
    finally:
        await rp.close()


# --------------------------------------------------------------------------- no git


async def test_without_git_the_store_warns_once_and_the_run_goes_on(
    root: Path, store: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    rp_mod._warned.clear()
    caplog.set_level(logging.WARNING, logger="lovia.workspace.restore_points")
    first = await open_points(root, store, git_path=str(empty))
    second = await open_points(root, store, git_path=str(empty))
    assert not first.available and first.unavailable_reason
    assert "git was not found" in first.unavailable_reason
    warnings = [r for r in caplog.records if "git was not found" in r.getMessage()]
    assert len(warnings) == 1
    assert await second.before_turn("s", 0, "hi") is None
    await second.after_run("s")
    assert await second.list_points() == []
    with pytest.raises(RestorePointError) as info:
        await second.snapshot()
    assert "git" in (info.value.hint or "")
    assert not _exists(store), "nothing is written without git"


# --------------------------------------------------------------------------- user's git


def _git(root: Path, *args: str) -> str:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "u",
        "GIT_AUTHOR_EMAIL": "u@x",
        "GIT_COMMITTER_NAME": "u",
        "GIT_COMMITTER_EMAIL": "u@x",
    }
    return subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, check=True, text=True
    ).stdout


def _dir_digest(path: Path) -> dict[str, str]:
    out = {}
    for p in sorted(path.rglob("*")):
        if p.is_file():
            out[p.relative_to(path).as_posix()] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


async def test_a_workspace_that_is_a_git_repo_keeps_its_git_index_and_stash(
    root: Path, store: Path
) -> None:
    make_project(root)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    (root / "src" / "app.py").write_text("stashed change\n")
    _git(root, "stash")
    (root / "src" / "util.py").write_text("staged\n")
    _git(root, "add", "src/util.py")
    (root / "run.sh").write_text("#!/bin/sh\necho unstaged\n")
    status, stash = _git(root, "status", "--porcelain"), _git(root, "stash", "list")
    digest = _dir_digest(root / ".git")

    rp = await open_points(root, store)
    try:
        point = await rp.before_turn("s", 0)
        assert point is not None
        (root / "src" / "app.py").write_text("agent\n")
        (root / "made.txt").write_text("made\n")
        await rp.after_run("s")
        await rp.preview(point.id)
        await rp.restore(point.id)
        await rp.delete_session("s")
    finally:
        await rp.close()
    assert _dir_digest(root / ".git") == digest
    assert _git(root, "status", "--porcelain") == status
    assert _git(root, "stash", "list") == stash
    assert not str(store).startswith(str(root))


# --------------------------------------------------------------------------- crashes

_CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from lovia.workspace import WorkspacePolicy
    from lovia.workspace.restore_points import RestorePoints

    async def main(root, store, action, arg):
        rp = await RestorePoints.open(root, store, policy=WorkspacePolicy.coding())
        print("ready", flush=True)
        if action == "snapshot":
            while True:
                await rp.snapshot(label="loop")
        else:
            await rp.restore(arg)
        print("done", flush=True)

    asyncio.run(main(*sys.argv[1:5]))
    """
)


def _spawn(root: Path, store: Path, action: str, arg: str = "") -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(root), str(store), action, arg],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _fill(root: Path, version: str, n: int) -> None:
    for i in range(n):
        d = root / f"d{i % 10}"
        d.mkdir(exist_ok=True)
        (d / f"f{i}.txt").write_text(f"{version} {i}\n" * 50)
    extra = root / f"only-{version}.txt"
    extra.write_text(version)
    for other in root.glob("only-*.txt"):
        if other != extra:
            other.unlink()


async def test_sigkill_during_snapshots_leaves_a_consistent_store(root: Path, store: Path) -> None:
    _fill(root, "a", 400)
    rp = await open_points(root, store)
    await rp.snapshot(label="base")
    await rp.close()
    before = tree_state(root)
    for delay in (0.0, 0.05, 0.15, 0.3, 0.6):
        proc = _spawn(root, store, "snapshot")
        await asyncio.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        rp = await open_points(root, store)
        try:
            points = await rp.list_points()
            for p in points:
                names = git_in_store(rp, "ls-tree", "-r", "--name-only", p.tree).split()
                assert len(names) == 401
            fresh = await rp.snapshot(label="after crash")
            assert fresh.changed_count == 0
        finally:
            await rp.close()
        assert tree_state(root) == before


@pytest.mark.parametrize("fraction", [0.0, 0.2, 0.4, 0.6, 0.8, 1.2])
async def test_sigkill_during_a_restore_leaves_the_old_or_the_new_tree(
    tmp_path: Path, fraction: float
) -> None:
    root = tmp_path / f"ws-{fraction}"
    root.mkdir()
    store = tmp_path / "store"
    _fill(root, "old", 400)
    rp = await open_points(root, store)
    target = await rp.snapshot(label="old")
    old = tree_state(root)
    _fill(root, "new", 400)
    await rp.after_run()
    new = tree_state(root)
    await rp.close()

    # how long a whole restore takes here (on a copy), to spread the kill points
    probe_root, probe_store = tmp_path / "probe", tmp_path / "probe-store"
    shutil.copytree(root, probe_root, symlinks=True)
    probe = await open_points(probe_root, probe_store)
    point = await probe.snapshot()
    _fill(probe_root, "x", 400)
    await probe.after_run()
    await probe.close()
    proc = _spawn(probe_root, probe_store, "restore", point.id)
    started = time.monotonic()
    assert proc.stdout is not None and proc.stdout.readline().strip() == "done"
    proc.wait()
    duration = time.monotonic() - started

    proc = _spawn(root, store, "restore", target.id)
    await asyncio.sleep(duration * fraction)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    rp = await open_points(root, store)  # finishes an interrupted restore
    try:
        state = tree_state(root)
        assert state in (old, new), "a mix of the old and the new tree"
        assert not list(root.rglob(".lovia-restore-*"))
        assert await rp.list_points()
    finally:
        await rp.close()


async def test_a_host_state_folder_inside_the_workspace_is_never_stored_or_touched(
    root: Path, tmp_path: Path
) -> None:
    # A server started with its state dir in the workspace: the DB changes while git reads it.
    make_project(root)
    state = root / ".lovia-state"
    (state / "logs").mkdir(parents=True)
    (state / "state.db").write_bytes(b"db v1")
    (state / "logs" / "server.log").write_text("log v1\n")
    rp = await open_points(root, state / "restore-points", exclude=[state])
    try:
        point = await rp.snapshot()
        listed = git_in_store(rp, "ls-tree", "-r", "--name-only", point.commit).split("\n")
        assert "src/app.py" in listed
        assert not [p for p in listed if p.startswith(".lovia-state")]
        assert b"db v1" not in b"".join(all_blobs(rp))
        (state / "state.db").write_bytes(b"db v2")
        (state / "logs" / "server.log").unlink()
        (root / "src" / "app.py").write_text("agent edit\n")
        await rp.after_run()
        preview = await rp.preview(point.id)
        assert [f.path for f in preview.files] == ["src/app.py"]
        await rp.restore(point.id)
        assert (root / "src" / "app.py").read_text() == "def main():\n    return 1\n"
        assert (state / "state.db").read_bytes() == b"db v2"
        assert not (state / "logs" / "server.log").exists()
    finally:
        await rp.close()
