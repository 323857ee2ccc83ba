"""The server's own git for worktree runs never runs a program a repository's config names.

An earlier command (or anything else) left ``core.fsmonitor`` and an external diff program in
the main repository's ``.git/config``: creating a worktree, carrying the uncommitted changes
into it, committing, diffing, applying and discarding run git outside every sandbox, so none
of them may start those programs.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from tests.server.harness import AGENT_HEADER, Harness
from tests.support.git_repo import init_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

AGENT = (
    AGENT_HEADER
    + """
agent = Agent(
    name="editor",
    model=ScriptedProvider([
        call("write_file", {"path": "shared.txt", "content": "one\\nTWO\\n"}, call_id="w1"),
        text("edited"),
        call("write_file", {"path": "other.txt", "content": "other\\n"}, call_id="w2"),
        text("edited again"),
    ]),
)
"""
)


async def test_a_planted_fsmonitor_never_runs_for_the_servers_worktree_git(
    tmp_path: Path,
) -> None:
    root = (tmp_path / "ws").resolve()
    committed = {"shared.txt": "one\ntwo\n", "agent.py": textwrap.dedent(AGENT)}
    init_repo(root, committed, uncommitted={"notes.txt": "todo\n", "agent.py": AGENT + "\n"})
    marker = tmp_path / "ran.log"
    program = tmp_path / "planted.sh"
    program.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\n')
    program.chmod(0o755)
    with (root / ".git" / "config").open("a") as config:  # planted, as a compromise would
        config.write(f"[core]\n\tfsmonitor = {program}\n[diff]\n\texternal = {program}\n")

    def ran() -> str:
        return marker.read_text() if marker.exists() else ""

    h = Harness(root, tmp_path / "state")
    await h.start(settings={"agent": "agent.py:agent", "permissions": {"preset": "trusted"}})
    try:
        first = await h.run("edit", isolation="worktree")  # create, carry, check out, commit
        assert (await h.finished(first["runId"]))["status"] == "completed"
        assert ran() == ""  # not for creating, carrying, checking out nor committing
        (listed,) = (await h.request("lovia/worktree/list", {}))["worktrees"]
        assert (Path(listed["path"]) / "notes.txt").read_text() == "todo\n"  # carried
        diff = await h.request("lovia/worktree/diff", {"runId": first["runId"]})
        assert ran() == ""
        (changed,) = diff["files"]
        assert changed["path"] == "shared.txt" and "+TWO" in changed["patch"]
        applied = await h.request("lovia/worktree/apply", {"runId": first["runId"]})
        assert applied["applied"] is True
        assert (root / "shared.txt").read_text() == "one\nTWO\n"

        second = await h.run("edit again", isolation="worktree")
        assert (await h.finished(second["runId"]))["status"] == "completed"
        await h.request("lovia/worktree/diff", {"runId": second["runId"]})
        out = await h.request("lovia/worktree/discard", {"runId": second["runId"]})
        assert out["state"] == "discarded"
    finally:
        await h.stop()
    assert ran() == ""
