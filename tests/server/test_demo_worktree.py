"""The offline demo in worktree runs: each run edits README.md in its own worktree, with the
prompt's quoted phrase as its note, so two demo runs side by side make changes you can tell
apart (the VS Code suite lands one and discards the other)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.server.harness import Harness
from tests.support.git_repo import init_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

README = "# hello project\n\nA small workspace.\n"


async def test_two_demo_runs_edit_their_own_worktrees_with_their_notes(tmp_path: Path) -> None:
    root = init_repo((tmp_path / "ws").resolve(), {"README.md": README})
    h = Harness(root, tmp_path / "state")
    await h.start(settings={"agent": "lovia:demo", "permissions": {"write": "allow"}})
    try:
        runs = {
            note: await h.run(f'Tidy up the README "{note}"', isolation="worktree")
            for note in ("variant A", "variant B")
        }
        for run in runs.values():
            done = await h.finished(run["runId"])
            assert done["status"] == "completed", done
        listing = (await h.request("lovia/worktree/list", {}))["worktrees"]
        paths = {w["runId"]: Path(w["path"]) for w in listing}
        for note, run in runs.items():
            text = (paths[run["runId"]] / "README.md").read_text()
            assert text == f"# hello project — {note}\n\nA small workspace.\n"
        assert (root / "README.md").read_text() == README

        plain = await h.run("Tidy up the README", isolation="worktree")  # no quotes: the usual note
        await h.finished(plain["runId"])
        listing = (await h.request("lovia/worktree/list", {}))["worktrees"]
        path = next(Path(w["path"]) for w in listing if w["runId"] == plain["runId"])
        assert (path / "README.md").read_text().startswith("# hello project — tidied by lovia\n")
    finally:
        await h.stop()
