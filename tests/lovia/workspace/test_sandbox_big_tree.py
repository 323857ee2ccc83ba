"""A tree larger than the sandbox walk's budget: no denied file past it is readable by a shell
command (issue 36). The budget is lowered so a small tree is "big"."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from lovia.workspace import LocalWorkspaceSession, WorkspacePolicy
from lovia.workspace.sandbox import BubblewrapExecutor

pytestmark = pytest.mark.skipif(
    not BubblewrapExecutor.available(), reason="bwrap cannot create namespaces on this machine"
)

DENIED = (".env", "id_rsa*", "*.pem", "secrets")
BUDGET = 40
SECRET = "S3CRET-VALUE"


def _tree(root: Path) -> list[str]:
    """~300 plain files in 30 folders, then the denied ones last in the walk's (breadth-first)
    order and deep: the budget is spent long before them."""
    for i in range(30):
        folder = root / f"pkg{i:02d}"
        folder.mkdir()
        for j in range(10):
            (folder / f"m{j}.py").write_text(f"x = {j}\n")
    deep = root / "zz" / "a" / "b" / "c" / "d" / "e"
    deep.mkdir(parents=True)
    placed = {
        "zz/a/b/c/d/e/.env": "",
        "zz/a/b/c/id_rsa": "",
        "pkg29/server.pem": "",
        "zz/a/b/c/d/secrets/token.txt": "",
        "zz/a/b/c/d/e/.ENV": "",  # case folded, as the file tools judge it
    }
    for rel in placed:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{SECRET} {rel}\n")
    return list(placed)


def _executor() -> BubblewrapExecutor:
    return BubblewrapExecutor(scan_budget=BUDGET)


async def _run(root: Path, command: str, *, home: str = "/root") -> str:
    """Straight through the executor, as if the guard had let the command pass."""
    r = await _executor().run(
        command,
        cwd=root,
        env={"PATH": os.environ["PATH"], "HOME": home},
        timeout=60,
        policy=WorkspacePolicy.trusted(denied_paths=DENIED),
        root=root,
    )
    return r.stdout + r.stderr


async def test_no_denied_file_past_the_budget_is_readable(root: Path) -> None:
    placed = _tree(root)
    # a symlink to a denied file, last in the walk too (its target is masked)
    (root / "zz" / "a" / "b" / "c" / "d" / "e" / "link").symlink_to(root / placed[0])
    placed.append("zz/a/b/c/d/e/link")
    assert SECRET not in await _run(root, "cat " + " ".join(placed))
    assert SECRET not in await _run(root, "grep -r S3CRET .")
    script = "import pathlib; [print(p.read_text()) for p in pathlib.Path('.').rglob('*') "
    script += "if p.is_file()]"
    assert SECRET not in await _run(root, f'{sys.executable} -c "{script}"')
    # the rest of the tree is there as usual
    assert "x = 3" in await _run(root, "cat pkg29/m3.py")


async def test_a_session_command_without_approval_cannot_read_them(root: Path) -> None:
    _tree(root)
    session = LocalWorkspaceSession(
        root, policy=WorkspacePolicy.trusted(denied_paths=DENIED), executor=_executor()
    )
    computed = "python3 -c \"print(open('zz/a/b/c/d/e/.e' + 'nv').read())\""
    assert session.decide_command(computed) == "allow"  # the guard cannot see the path
    cat = "cat $(printf 'pkg29/server.p%s' em)"  # 'ask' is taken as approved at this layer
    for command in (computed, "grep -r S3CRET .", cat):
        r = await session.run(command)
        assert SECRET not in r.stdout + r.stderr, command
    # a second command reuses the walk's cache and still hides them
    r = await session.run("grep -r S3CRET . ; cat $(printf 'zz/a/b/c/d/secre%s/token.txt' ts)")
    assert SECRET not in r.stdout + r.stderr


async def test_no_denied_file_deep_in_a_visible_home_is_readable(
    root: Path, tmp_path: Path
) -> None:
    """Reads outside open (trusted): the home is visible, walked for bare denied names past
    the depth and the budget of its walk too."""
    (root / "main.py").write_text("print(1)\n")
    home = tmp_path / "home"
    deep = home / "src" / "a" / "b" / "c" / "d" / "e"
    deep.mkdir(parents=True)
    (deep / ".env").write_text(f"{SECRET} home\n")
    for i in range(BUDGET * 2):
        (home / "src" / f"f{i}.txt").write_text("plain\n")
    (home / "notes.txt").write_text("plain home file\n")
    out = await _run(
        root, f"cat {deep}/.env; grep -r S3CRET {home}; cat {home}/notes.txt", home=str(home)
    )
    assert SECRET not in out
    assert "plain home file" in out


async def test_protected_paths_past_the_budget_stay_read_only(root: Path) -> None:
    """A command that ran without approval cannot write a protected path deep in the tree."""
    _tree(root)
    settings = root / "zz" / "a" / "b" / ".vscode" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{}\n")
    write = "open('zz/a/b/.vs' + 'code/settings.json', 'w').write('pwned')"
    await _run(root, f'python3 -c "{write}"')
    assert settings.read_text() == "{}\n"
