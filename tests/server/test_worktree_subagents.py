"""Subagents in worktrees, through the real server: two children edit one file at once, each in
a worktree of its own; both reports reach the parent with their diffs, the workspace's file is
untouched, and the children's worktrees are listed and landed like worktree runs. The built-in
coding agent does it; and after a SIGKILL the resumed parent takes its children back in their
worktrees."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.server.harness import AGENT_HEADER, Harness
from tests.server.test_subagents import COMMON
from tests.support.git_repo import git, init_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

SHARED = "one\ntwo\nthree\n"
PARENT = "Try both variants of shared.txt."


def make_repo(root: Path) -> None:
    init_repo(root, {"shared.txt": SHARED}, uncommitted={"notes.txt": "uncommitted\n"})


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


TWO_EDITORS = (
    COMMON
    + """
def editor(name, letter, step):
    return Agent(
        name=name,
        model=ByResults({
            0: call("write_file", {"path": "shared.txt", "content": f"one\\n{letter}\\nthree\\n"},
                    call_id=f"e{letter}"),
            1: call("build", {"step": step}, call_id=f"b{letter}"),
            2: text(f"{name} wrote {letter}"),
        }),
        tools=[build],
    )


alpha, beta = editor("alpha", "A", 1), editor("beta", "B", 2)
agent = Agent(
    name="boss",
    model=Boss(
        batch(
            ("spawn_subagent", {"agent": "alpha", "prompt": "variant A", "isolation": "worktree"},
             "p1"),
            ("spawn_subagent", {"agent": "beta", "prompt": "variant B", "isolation": "worktree"},
             "p2"),
        ),
        expect=["[subagent t1: done]", "[subagent t2: done]"],
    ),
    plugins=[Subagents([alpha, beta])],
)
"""
)


async def test_sigkill_then_the_resumed_parent_takes_its_children_back_in_their_worktrees(
    tmp_path: Path,
) -> None:
    assert AGENT_HEADER in COMMON
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    state = tmp_path / "state"
    first = Harness(root, state)
    spec = first.write_agent(TWO_EDITORS)
    (root / ".gitignore").write_text("release-*\nbuilds.log\n__pycache__/\n")
    make_repo(root)
    settings = {"agent": spec, "permissions": {"preset": "trusted"}}
    await first.start(settings=settings)
    run = await first.run("edit both")
    parent = run["runId"]
    for task in ("t1", "t2"):
        await first.wait_kind(parent, "subagent.started", taskId=task)
    for _ in range(500):
        log = root / "builds.log"
        if log.exists() and len(log.read_text().splitlines()) == 2:
            break
        await asyncio.sleep(0.02)
    before = {w["runId"]: w for w in (await first.request("lovia/worktree/list", {}))["worktrees"]}
    assert len(before) == 2 and {w["parentRunId"] for w in before.values()} == {parent}
    await first.kill()

    second = Harness(root, state)
    try:
        await second.start(settings=settings)
        listed = (await second.request("lovia/worktree/list", {}))["worktrees"]
        assert {w["runId"] for w in listed} == set(before)  # not retired, not resumed alone
        await second.request("lovia/resume", {"runId": parent})
        for task in ("t1", "t2"):
            again = await second.wait_kind(parent, "subagent.started", taskId=task, resumed=True)
            started = await second.wait_kind(again["childRunId"], "run.started")
            assert Path(started["cwd"]) == Path(before[again["childRunId"]]["path"])
        (root / "release-1").write_text("go")
        (root / "release-2").write_text("go")
        done = await second.wait_kind(parent, "run.finished", status="completed")
        assert done["output"] == "all reported"
        view = await second.request("lovia/session", {"sessionId": run["sessionId"]})
        joined = "\n".join(
            m["content"] for m in view["entries"] if isinstance(m.get("content"), str)
        )
        for letter, name in (("A", "alpha"), ("B", "beta")):
            assert f"{name} wrote {letter}" in joined
            assert f"+{letter}\n" in joined
        assert joined.count("modified shared.txt (+1 -1)") == 2
        assert (root / "shared.txt").read_text() == SHARED
        for run_id, worktree in before.items():
            diff = await second.request("lovia/worktree/diff", {"runId": run_id})
            assert [f["path"] for f in diff["files"]] == ["shared.txt"]
            assert await asyncio.to_thread(Path(worktree["path"]).exists)
    finally:
        if second.client is not None:
            await second.stop()
