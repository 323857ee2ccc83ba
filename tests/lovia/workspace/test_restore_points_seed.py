"""Restore points in a git repository: the first point starts from the user's git index,
and a point of an unchanged tree does no work over the tree (real git throughout)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from lovia.workspace import WorkspacePolicy
from lovia.workspace import _restore_seed as seed
from lovia.workspace.patterns import _pattern_matches, pattern_set_matcher
from lovia.workspace.restore_points import RestorePoints, RestorePointSettings

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

SECRET = b"TOKEN=only-in-the-users-repository-4711\n"
KEY = b"-----BEGIN KEY----- only-in-the-users-repository-0815\n"


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


def _committed_repo(root: Path) -> None:
    """A repository whose HEAD and index hold files no snapshot may take."""
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "src" / "util.py").write_text("X = 1\n")
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "out.js").write_text("forced into git\n")
    (root / ".env").write_bytes(SECRET)
    (root / "secrets").mkdir()
    (root / "secrets" / "key.pem").write_bytes(KEY)
    (root / "big.bin").write_bytes(b"x" * 4096)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "add", "-f", "build/out.js")
    _git(root, "commit", "-qm", "init")


def _in_store(rp: RestorePoints, *args: str, ok: bool = False) -> str:
    assert rp.git is not None
    done = subprocess.run(
        rp.git.argv(list(args)),
        env=rp.git.env(),
        cwd=rp.root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        check=not ok,
    )
    return done.stdout.decode() if done.returncode == 0 else ""


def _local_blob(rp: RestorePoints, sha: str) -> bool:
    """Whether the store itself (not a borrowed object directory) holds ``sha``."""
    assert rp.git is not None
    objects = rp.git.git_dir / "objects"
    if (objects / sha[:2] / sha[2:]).exists():
        return True
    for idx in (objects / "pack").glob("*.idx"):
        out = subprocess.run(
            ["git", "show-index"], stdin=idx.open("rb"), capture_output=True, check=True
        ).stdout.decode()
        if sha in out:
            return True
    return False


def _all_blob_data(rp: RestorePoints) -> bytes:
    """Every blob the store itself holds, concatenated."""
    assert rp.git is not None
    listing = _in_store(rp, "cat-file", "--batch-all-objects", "--batch-check")
    shas = [line.split()[0] for line in listing.splitlines() if line.split()[1] == "blob"]
    return subprocess.run(
        rp.git.argv(["cat-file", "--batch"]),
        env=rp.git.env(),
        input="".join(s + "\n" for s in shas).encode(),
        capture_output=True,
        check=True,
    ).stdout


def _logging_git(tmp_path: Path) -> tuple[Path, str]:
    """A ``git`` on a PATH of its own that logs each subcommand's name (then runs git)."""
    real_git = shutil.which("git")
    assert real_git is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "git.log"
    wrapper = bin_dir / "git"
    wrapper.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do case "$a" in -c|*=*|--*) ;; *) echo "$a" >> "'
        + str(log)
        + '"; break;; esac; done\n'
        f'exec "{real_git}" "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return log, str(bin_dir)


async def _open(root: Path, store: Path, **kw: object) -> RestorePoints:
    policy = WorkspacePolicy.coding(denied_paths=(".env*", "secrets"))
    settings = RestorePointSettings(max_file_bytes=1024)
    return await RestorePoints.open(root, store, policy=policy, settings=settings, **kw)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "state" / "restore-points"


async def test_first_point_starts_from_the_git_index_and_never_takes_a_denied_file(
    root: Path, store: Path
) -> None:
    _committed_repo(root)
    app_blob = _git(root, "rev-parse", "HEAD:src/app.py").strip()
    index_before = (root / ".git" / "index").read_bytes()
    (root / "src" / "util.py").write_text("X = 2\n")  # a change the index does not know
    (root / "new.txt").write_text("untracked\n")
    rp = await _open(root, store)
    try:
        assert rp.git is not None
        point = await rp.before_turn("s", 0)
        assert point is not None
        names = set(_in_store(rp, "ls-tree", "-r", "--name-only", point.tree).split())
        assert names == {".gitignore", "src/app.py", "src/util.py", "new.txt"}
        assert _in_store(rp, "show", f"{point.tree}:src/util.py") == "X = 2\n"
        # Seeded: the unchanged file's blob was not read into the store but borrowed.
        assert seed.borrowing(rp.git)
        assert not _local_blob(rp, app_blob)

        (root / "src" / "app.py").write_text("agent\n")
        await rp.after_run("s")
        # After the run the store owns every blob its points use and borrows nothing.
        assert not seed.borrowing(rp.git)
        assert _local_blob(rp, app_blob)
        data = _all_blob_data(rp)
        assert SECRET not in data and KEY not in data
        assert b"forced into git" not in data and b"x" * 4096 not in data

        result = await rp.restore(point.id, overwrite_hand_changes=True)
        assert "src/app.py" in result.restored
        assert (root / "src" / "app.py").read_text() == "def main():\n    return 1\n"
        assert (root / ".env").read_bytes() == SECRET
    finally:
        await rp.close()
    assert (root / ".git" / "index").read_bytes() == index_before  # never written


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
async def test_an_index_git_does_not_check_by_stat_is_not_trusted(
    root: Path, store: Path, flag: str
) -> None:
    _committed_repo(root)
    _git(root, "update-index", flag, "src/app.py")
    (root / "src" / "app.py").write_text("changed behind git's back\n")
    rp = await _open(root, store)
    try:
        assert rp.git is not None
        point = await rp.snapshot()
        assert not seed.borrowing(rp.git)
        shown = _in_store(rp, "show", f"{point.tree}:src/app.py")
        assert shown == "changed behind git's back\n"
    finally:
        await rp.close()


async def test_a_repository_with_attributes_is_not_seeded(root: Path, store: Path) -> None:
    """With a clean filter (Git LFS, say) the index's blob is not the file on disk: the
    point must hold the disk's bytes."""
    (root / "data.big").write_text("the real content\n")
    (root / ".gitattributes").write_text("*.big filter=shout\n")
    _git(root, "init", "-q")
    _git(root, "config", "filter.shout.clean", "tr a-z A-Z")
    _git(root, "config", "filter.shout.smudge", "cat")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "init")
    assert _git(root, "show", "HEAD:data.big") == "THE REAL CONTENT\n"
    rp = await _open(root, store)
    try:
        assert rp.git is not None
        point = await rp.snapshot()
        assert not seed.borrowing(rp.git)
        assert _in_store(rp, "show", f"{point.tree}:data.big") == "the real content\n"
    finally:
        await rp.close()


async def test_a_point_of_an_unchanged_tree_runs_no_git_over_the_tree(
    root: Path, store: Path, tmp_path: Path
) -> None:
    _committed_repo(root)
    log, git_path = _logging_git(tmp_path)
    rp = await _open(root, store, git_path=git_path)
    try:
        assert await rp.before_turn("s", 0) is not None
        log.write_text("")
        point = await rp.before_turn("s", 1)
        assert point is not None and point.changed_count == 0
        ran = log.read_text().split()
        assert "status" in ran  # the tree is still looked at, once
        for heavy in ("write-tree", "diff-tree", "update-index", "ls-files", "add"):
            assert heavy not in ran, ran
    finally:
        await rp.close()


PATTERNS = (
    ".env*",
    "secrets",
    "*.PEM",
    "config/*.key",
    "deploy/**",
    "Build/",
    "[!a]x",
    "/abs/root/priv",
    "~/nowhere",
)
PATHS = (
    ".env",
    "a/.ENV.local",
    "secrets/a",
    "x/secrets",
    "k/server.pem",
    "config/a.key",
    "config/sub/a.key",
    "deploy/x/y",
    "a/deploy/x",
    "build",
    "src/build/x",
    "bx",
    "ax",
    "priv",
    "priv/x",
    "src/app.py",
    "env",
    "secretsx/y",
)


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_deny_prefilter_never_misses_a_path_a_pattern_covers(pattern: str) -> None:
    root = "/abs/root"
    may_cover = pattern_set_matcher((pattern,), fold=True)
    for rel in PATHS:
        if _pattern_matches(pattern, rel, f"{root}/{rel}", fold=True):
            assert may_cover(rel, f"{root}/{rel}"), (pattern, rel)
    assert not may_cover("src/app.py", f"{root}/src/app.py")


async def _fresh_tree(root: Path, store: Path) -> str:
    """The tree a new store's full scan takes of ``root`` now."""
    rp = await _open(root, store)
    try:
        return (await rp.snapshot()).tree
    finally:
        await rp.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
async def test_points_from_the_change_watch_equal_a_full_scan(
    root: Path, store: Path, tmp_path: Path
) -> None:
    _committed_repo(root)
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text("a\n")
    (root / "thing").write_text("a file\n")
    log, git_path = _logging_git(tmp_path)
    rp = await _open(root, store, git_path=git_path)
    try:
        await rp.snapshot()
        last = await rp.snapshot()  # the second full scan starts the watch
        assert rp._watch is not None and rp._watch_synced
        cases = [
            lambda: (root / "src" / "app.py").write_text("edited\n"),
            lambda: (root / "src" / "util.py").unlink(),
            lambda: (root / "pkg" / "deep").mkdir(parents=True),
            lambda: (root / "pkg" / "deep" / "new.py").write_text("new\n"),
            lambda: (root / ".env.local").write_bytes(SECRET),  # denied
            lambda: (root / "build" / "later.js").write_text("ignored\n"),
            lambda: (root / "build" / "out.js").write_text("tracked but ignored\n"),
            lambda: (root / "secrets" / "more.pem").write_bytes(KEY),  # denied folder
            lambda: ((root / "thing").unlink(), (root / "thing").mkdir()),
            lambda: (root / "thing" / "inside.txt").write_text("in a dir now\n"),
            lambda: (shutil.rmtree(root / "docs"), os.symlink("src", root / "docs")),
            lambda: (root / "run.sh").write_text("#!/bin/sh\n"),
            lambda: (root / "run.sh").chmod(0o755),
        ]
        for i, change in enumerate(cases):
            change()
            log.write_text("")
            point = await rp.snapshot()
            assert rp._watch is not None and not rp._watch.lost
            ran = log.read_text().split()
            assert "status" not in ran and "update-index" not in ran, (i, ran)
            assert point.tree == await _fresh_tree(root, tmp_path / f"fresh{i}"), i
            raw = _in_store(
                rp, "diff-tree", "-r", "--no-renames", "--name-status", last.tree, point.tree
            )
            status = {"A": "added", "D": "deleted", "M": "modified", "T": "modified"}
            expected = [(line[2:], status[line[0]]) for line in raw.splitlines()]
            assert [(c.path, c.status) for c in point.changed] == expected, i
            last = point
        await rp.after_run("s")  # the store stops borrowing the user's objects
        data = _all_blob_data(rp)
        assert SECRET not in data and KEY not in data
    finally:
        await rp.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
async def test_a_point_after_the_watch_started_runs_no_scan_when_nothing_changed(
    root: Path, store: Path, tmp_path: Path
) -> None:
    _committed_repo(root)
    log, git_path = _logging_git(tmp_path)
    rp = await _open(root, store, git_path=git_path)
    try:
        for turn in range(2):
            assert await rp.before_turn("s", turn) is not None
        log.write_text("")
        point = await rp.before_turn("s", 2)
        assert point is not None and point.changed_count == 0
        assert log.read_text().split() == ["commit-tree", "update-ref"]
    finally:
        await rp.close()
