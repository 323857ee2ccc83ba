"""resolve_path: classification, symlinks, ``..``, ``~``, and the errors it must not leak."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lovia.workspace import LocalWorkspaceSession, WorkspaceError, WorkspacePolicy
from lovia.workspace.paths import resolve_path


def test_empty_is_root(root: Path) -> None:
    rp = resolve_path(root, "")
    assert rp.rel == "." and rp.abs == root and rp.inside and rp.display() == "."


def test_dots_and_slashes_normalised(root: Path) -> None:
    assert resolve_path(root, "./a/./b//c").rel == "a/b/c"


def test_parent_escapes(root: Path) -> None:
    rp = resolve_path(root, "../x")
    assert rp.rel is None and not rp.inside
    assert rp.abs == root.parent / "x"
    assert rp.display() == (root.parent / "x").as_posix()


def test_dotdot_inside_stays_inside(root: Path) -> None:
    assert resolve_path(root, "a/../b").rel == "b"
    assert resolve_path(root, "a/b/../../..").rel is None


def test_tilde_expands_and_raw_is_kept(root: Path) -> None:
    rp = resolve_path(root, "~/notes.txt")
    assert rp.raw == "~/notes.txt"
    assert rp.abs == Path("~/notes.txt").expanduser().resolve()


def test_unknown_user_tilde_stays_literal(root: Path) -> None:
    rp = resolve_path(root, "~no-such-user-xyz/f")
    assert rp.rel == "~no-such-user-xyz/f"


def test_absolute_inside_displays_relative(root: Path) -> None:
    assert resolve_path(root, str(root / "a" / "b.txt")).display() == "a/b.txt"


def test_symlink_to_outside_is_outside_with_target(root: Path, outside: Path) -> None:
    (root / "link").symlink_to(outside / "secret.txt")
    rp = resolve_path(root, "link")
    assert not rp.inside and rp.abs == outside / "secret.txt"


def test_symlinked_dir_then_dotdot_is_resolved_after_symlinks(root: Path, outside: Path) -> None:
    (outside / "deep").mkdir()
    (root / "d").symlink_to(outside / "deep")
    # lexically 'd/..' is the root, but the kernel sees outside/deep/.. == outside
    rp = resolve_path(root, "d/../secret.txt")
    assert rp.abs == outside / "secret.txt" and not rp.inside


def test_dangling_symlink_judged_by_target(root: Path, outside: Path) -> None:
    (root / "dangling").symlink_to(outside / "missing.txt")
    rp = resolve_path(root, "dangling")
    assert rp.abs == outside / "missing.txt" and not rp.inside


def test_base_for_relative(root: Path) -> None:
    (root / "sub").mkdir()
    assert resolve_path(root, "x", base=root / "sub").rel == "sub/x"
    assert resolve_path(root, "/etc/hosts", base=root / "sub").rel is None


def test_symlink_loop_is_a_workspace_error(root: Path) -> None:
    (root / "a").symlink_to(root / "b")
    (root / "b").symlink_to(root / "a")
    with pytest.raises(WorkspaceError, match="Symlink loop"):
        resolve_path(root, "a")
    with pytest.raises(WorkspaceError, match="Symlink loop"):
        resolve_path(root, "a/child.txt")


def test_self_loop(root: Path) -> None:
    (root / "self").symlink_to("self")
    with pytest.raises(WorkspaceError):
        resolve_path(root, "self")


def test_nul_byte_is_a_workspace_error(root: Path) -> None:
    with pytest.raises(WorkspaceError, match="NUL"):
        resolve_path(root, "a\x00b")


async def test_session_methods_never_leak_raw_errors(root: Path) -> None:
    (root / "loop").symlink_to("loop")
    s = LocalWorkspaceSession(root, policy=WorkspacePolicy.coding())
    for bad in ("loop", "x\x00y"):
        with pytest.raises(WorkspaceError):
            s.decide_path(bad)
        with pytest.raises(WorkspaceError):
            await s.read_text(bad)
        with pytest.raises(WorkspaceError):
            await s.write_text(bad, "x")
        with pytest.raises(WorkspaceError):
            await s.edit_text(bad, "a", "b")
        with pytest.raises(WorkspaceError):
            await s.list_files(bad)
        with pytest.raises(WorkspaceError):
            await s.grep("x", path=bad)
        with pytest.raises(WorkspaceError):
            await s.read_bytes(bad)
    with pytest.raises(WorkspaceError):
        await s.run("echo hi", cwd="loop")
    with pytest.raises(WorkspaceError):
        await s.run("echo \x00")
    assert s.decide_command("cat loop") == "ask"
    await s.close()


def test_long_path_is_a_workspace_error_or_classified(root: Path) -> None:
    long = "a/" * 3000 + "x"
    try:
        rp = resolve_path(root, long)
    except WorkspaceError:
        return
    assert rp.inside


def test_root_resolution(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    s = LocalWorkspaceSession(str(tmp_path / "alias"))
    assert s.root == real.resolve()
    assert s.decide_path(str(tmp_path / "alias" / "f")) == "allow"


def test_missing_root_is_user_error(tmp_path: Path) -> None:
    from lovia.exceptions import UserError

    with pytest.raises(UserError, match="Workspace root does not exist"):
        LocalWorkspaceSession(tmp_path / "nope")
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UserError):
        LocalWorkspaceSession(f)
    assert os.path.exists(f)
