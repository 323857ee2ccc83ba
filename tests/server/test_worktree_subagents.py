"""The built-in coding agent's subagents in worktrees, through the real server: two children
edit one file at once, each in a worktree of its own; both reports reach the parent with their
diffs, the workspace's file is untouched, and the children's worktrees are listed and landed
like worktree runs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.server.harness import Harness

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

SHARED = "one\ntwo\nthree\n"
PARENT = "Try both variants of shared.txt."


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    ).stdout


def make_repo(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    (root / "shared.txt").write_text(SHARED)
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    (root / "notes.txt").write_text("uncommitted\n")


def _route(request: Any) -> Any:
    """Parent and children told apart by their prompt; each turn by its tool results."""
    from tests.support import fake_openai as oai

    messages = request.messages
    user = next((m.get("content") for m in messages if m.get("role") == "user"), "")
    tools_done = sum(1 for m in messages if m.get("role") == "tool")
    everything = "\n".join(str(m.get("content") or "") for m in messages)
    for letter in "AB":
        if user == f"Write variant {letter} into shared.txt.":
            if tools_done == 0:
                content = f"one\n{letter}\nthree\n"
                args = {"path": "shared.txt", "content": content}
                return oai.tool_calls(oai.call("write_file", args, id=f"c{letter}"))
            return oai.text(f"wrote variant {letter}")
    assert user == PARENT
    system = str(messages[0].get("content"))
    assert 'isolation: "worktree"' in system
    if tools_done == 0:
        return oai.tool_calls(
            *(
                oai.call(
                    "spawn_subagent",
                    {"prompt": f"Write variant {x} into shared.txt.", "isolation": "worktree"},
                    id=f"s{x}",
                )
                for x in "AB"
            )
        )
    if "[subagent t1: done]" not in everything or "[subagent t2: done]" not in everything:
        return oai.tool_calls(oai.call("wait_subagents", {}, id=f"w{tools_done}"))
    return oai.text("both variants are ready for review")


async def test_builtin_agent_children_work_in_worktrees(harness: Harness, fake_openai: Any):
    root = harness.root
    make_repo(root)
    fake_openai.responder = _route
    await harness.start(
        settings={"model": "openai:fake-model", "permissions": {"preset": "trusted"}},
        env=fake_openai.env(),
    )
    parent = (await harness.run(PARENT))["runId"]
    done = await harness.finished(parent)
    assert done["status"] == "completed", done
    assert done["output"] == "both variants are ready for review"
    assert (root / "shared.txt").read_text() == SHARED

    started = {e["taskId"]: e for e in harness.of_run(parent) if e["kind"] == "subagent.started"}
    listing = (await harness.request("lovia/worktree/list", {}))["worktrees"]
    by_run = {w["runId"]: w for w in listing}
    assert set(by_run) == {started["t1"]["childRunId"], started["t2"]["childRunId"]}
    for task, letter in (("t1", "A"), ("t2", "B")):
        worktree = by_run[started[task]["childRunId"]]
        assert worktree["parentRunId"] == parent and worktree["state"] == "active"
        assert worktree["sessionId"] == started[task]["childSessionId"]
        path = Path(worktree["path"])
        assert path.is_relative_to(harness.state_dir) and not path.is_relative_to(root)
        assert (path / "shared.txt").read_text() == f"one\n{letter}\nthree\n"
        assert (path / "notes.txt").read_text() == "uncommitted\n"  # carried

    last = [r for r in fake_openai.requests if r.method == "POST"][-1].json
    seen = "\n".join(str(m.get("content") or "") for m in last["messages"])
    for letter in "AB":
        assert f"wrote variant {letter}" in seen
        assert f"+{letter}\n" in seen
    assert seen.count("1 file changed, +1 -1") == 2
    assert seen.count("modified shared.txt (+1 -1)") == 2

    a, b = started["t1"]["childRunId"], started["t2"]["childRunId"]
    applied = await harness.request("lovia/worktree/apply", {"runId": a, "alsoDiscard": [b]})
    assert applied["applied"] is True and applied["discarded"] == [b]
    assert (root / "shared.txt").read_text() == "one\nA\nthree\n"
    assert "lovia/" not in git(root, "branch", "--list")
    assert git(root, "worktree", "list").count("\n") == 1
