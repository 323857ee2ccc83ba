"""Attack matrix, row ``restore``: ``lovia/restorePreview`` and ``lovia/restore`` through the
real server. A scripted run changes files (a restore point is taken before its first write);
then the workspace is changed as an attacker (or an approved command) could, and the user
restores. The effect is checked on disk: a restore never writes through a link, never into
the git dir, never lands a protected file's content without the confirmed warning, and never
shows or restores a denied file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.server.harness import AGENT_HEADER, Harness
from tests.support.git_repo import git

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

PROTECTED_CODE = -32021
ALLOW_ALL = json.dumps({"lovia.permissions": {"preset": "trusted", "approvals": "allow"}})

AGENT = (
    AGENT_HEADER
    + """
from collections import deque
from lovia.transcript import InputEntry, ToolResultEntry

SCRIPTS = {
    "tidy settings": [
        call("write_file", {"path": ".vscode/settings.json", "content": "{}\\n"}, call_id="s1"),
        text("tidied"),
    ],
    "tidy lovia": [
        call("write_file", {"path": ".lovia/settings.json", "content": "{}\\n"}, call_id="l1"),
        call("write_file", {"path": ".vscode/settings.json", "content": "{}\\n"}, call_id="l2"),
        text("tidied"),
    ],
    "edit script": [
        call("write_file", {"path": "cache/run.sh", "content": "new\\n"}, call_id="c1"),
        text("edited"),
    ],
    "edit hook": [
        call("write_file", {"path": "hooks/post-checkout", "content": "echo new\\n"}, call_id="h1"),
        text("edited"),
    ],
    "notes": [
        call("write_file", {"path": "notes.txt", "content": "notes\\n"}, call_id="n1"),
        text("noted"),
    ],
}


class ByPrompt(ScriptedProvider):
    def __init__(self):
        super().__init__([], record=False)

    async def stream(self, entries, **kw):
        last = max(i for i, e in enumerate(entries) if isinstance(e, InputEntry) and e.role == "user")
        done = sum(isinstance(e, ToolResultEntry) for e in entries[last:])
        self.script = deque(SCRIPTS[entries[last].content][done:])
        async for delta in super().stream(entries, **kw):
            yield delta


agent = Agent(name="by-prompt", model=ByPrompt())
"""
)


async def _start(tmp_path: Path, files: dict[str, str]) -> tuple[Harness, Path]:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    h = Harness(root, tmp_path / "state")
    spec = h.write_agent(AGENT)
    await h.start(settings={"agent": spec, "permissions": {"preset": "trusted"}})
    return h, root


async def _turn(h: Harness, prompt: str) -> str:
    """Run ``prompt`` to its end, approving what it asks; the restore point before it."""
    run = await h.run(prompt)
    done = await h.approve_all(run["runId"])
    assert done["status"] == "completed", done
    listed = await h.request("lovia/checkpoints", {"sessionId": run["sessionId"]})
    (point,) = listed["checkpoints"]
    return str(point["checkpointId"])


def _by_path(preview: dict[str, Any], root: Path) -> dict[str, dict[str, Any]]:
    return {Path(f["path"]).relative_to(root).as_posix(): f for f in preview["files"]}


async def test_restore__write_protected(tmp_path: Path) -> None:
    """The workspace's editor settings held an allow-all rule (planted earlier); the agent
    replaced them (an approval, with the warning). Restoring the point before that turn would
    put the allow-all rule back: the preview flags the file, and the restore refuses it until
    the user confirms the warning for it, writing nothing meanwhile."""
    h, root = await _start(tmp_path, {".vscode/settings.json": ALLOW_ALL})
    try:
        point = await _turn(h, "tidy settings")
        assert (root / ".vscode/settings.json").read_text() == "{}\n"
        preview = await h.request("lovia/restorePreview", {"checkpointId": point})
        assert _by_path(preview, root)[".vscode/settings.json"]["protected"] is True
        with pytest.raises(Exception) as refused:
            await h.request("lovia/restore", {"checkpointId": point})
        assert refused.value.code == PROTECTED_CODE
        assert refused.value.data["paths"] == [str(root / ".vscode/settings.json")]
        assert "approval" in str(refused.value)
        assert (root / ".vscode/settings.json").read_text() == "{}\n"
        listed = await h.request(
            "lovia/checkpoints", {"sessionId": preview["checkpoint"]["sessionId"]}
        )
        assert len(listed["checkpoints"]) == 1  # not even an undo point was taken
        confirmed = [str(root / ".vscode/settings.json")]
        out = await h.request(
            "lovia/restore", {"checkpointId": point, "confirmProtected": confirmed}
        )
        assert [Path(f["path"]).name for f in out["restored"]] == ["settings.json"]
        assert (root / ".vscode/settings.json").read_text() == ALLOW_ALL
    finally:
        await h.stop()


async def test_restore__widen_permissions(tmp_path: Path) -> None:
    """lovia's own settings are protected too, and confirming one protected file confirms no
    other: a restore cannot give the agent back a wider permission set unseen."""
    widened = json.dumps({"permissions": {"preset": "trusted", "approvals": "allow"}})
    h, root = await _start(
        tmp_path, {".lovia/settings.json": widened, ".vscode/settings.json": ALLOW_ALL}
    )
    try:
        point = await _turn(h, "tidy lovia")
        confirmed = [str(root / ".vscode/settings.json")]
        with pytest.raises(Exception) as refused:
            await h.request("lovia/restore", {"checkpointId": point, "confirmProtected": confirmed})
        assert refused.value.code == PROTECTED_CODE
        assert refused.value.data["paths"] == [str(root / ".lovia/settings.json")]
        assert (root / ".lovia/settings.json").read_text() == "{}\n"
        assert (root / ".vscode/settings.json").read_text() == "{}\n"
    finally:
        await h.stop()


async def test_restore__write_symlinked_parent(tmp_path: Path) -> None:
    """After the turn, ``cache`` becomes a link to a folder outside the workspace, one the
    restore points do not store (``.gitignore`` ignores a ``cache`` that is not a folder), so
    the restore plans to write ``cache/run.sh`` with the link in the way: forced, it still
    never writes through the link (every folder is opened without following one); the file
    is reported as not restored."""
    outside = (tmp_path / "outside").resolve()
    outside.mkdir()
    h, root = await _start(tmp_path, {".gitignore": "cache\n!cache/\n", "cache/run.sh": "old\n"})
    try:
        point = await _turn(h, "edit script")
        shutil.rmtree(root / "cache")
        (root / "cache").symlink_to(outside)
        out = await h.request("lovia/restore", {"checkpointId": point, "forceAll": True})
        assert list(outside.iterdir()) == []
        assert (root / "cache").is_symlink()
        skipped = {s["path"]: s for s in out["skipped"]}
        assert skipped[str(root / "cache/run.sh")]["reason"] == "failed"
    finally:
        await h.stop()


async def test_restore__write_git_dir(tmp_path: Path) -> None:
    """After the turn, ``hooks`` becomes a link into ``.git/hooks`` (not stored, as above): a
    forced restore of ``hooks/post-checkout``, even confirmed, never plants the git hook; nor
    does any restore write a ``.git`` path (the store never holds one)."""
    h, root = await _start(
        tmp_path, {".gitignore": "hooks\n!hooks/\n", "hooks/post-checkout": "echo old\n"}
    )
    git(root, "init", "-q")
    try:
        point = await _turn(h, "edit hook")
        shutil.rmtree(root / "hooks")
        (root / "hooks").symlink_to(".git/hooks")
        before = sorted(p.name for p in (root / ".git" / "hooks").iterdir())
        preview = await h.request("lovia/restorePreview", {"checkpointId": point})
        assert not any("/.git/" in f["path"] for f in preview["files"])
        out = await h.request(
            "lovia/restore",
            {
                "checkpointId": point,
                "forceAll": True,
                "confirmProtected": [str(root / "hooks/post-checkout")],
            },
        )
        assert not (root / ".git" / "hooks" / "post-checkout").exists()
        assert sorted(p.name for p in (root / ".git" / "hooks").iterdir()) == before
        assert str(root / "hooks/post-checkout") in [s["path"] for s in out["skipped"]]
    finally:
        await h.stop()


async def test_restore__read_denied(tmp_path: Path) -> None:
    """Denied files are never stored in a restore point: changed after the point, they are
    neither shown by the preview nor restored."""
    h, root = await _start(
        tmp_path, {".env": "TOKEN=first-secret\n", "deploy/id_rsa": "FIRST-KEY\n"}
    )
    try:
        point = await _turn(h, "notes")
        (root / ".env").write_text("TOKEN=second-secret\n")
        (root / "deploy/id_rsa").write_text("SECOND-KEY\n")
        preview = await h.request("lovia/restorePreview", {"checkpointId": point})
        text = json.dumps(preview)
        for secret in ("first-secret", "second-secret", "FIRST-KEY", "SECOND-KEY"):
            assert secret not in text
        assert list(_by_path(preview, root)) == ["notes.txt"]
        out = await h.request("lovia/restore", {"checkpointId": point, "forceAll": True})
        for secret in ("first-secret", "second-secret", "FIRST-KEY", "SECOND-KEY"):
            assert secret not in json.dumps(out)
        assert (root / ".env").read_text() == "TOKEN=second-secret\n"
        assert (root / "deploy/id_rsa").read_text() == "SECOND-KEY\n"
        assert not (root / "notes.txt").exists()
    finally:
        await h.stop()
