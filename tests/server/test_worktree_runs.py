"""Worktree runs through the real server: two runs edit one file at once, in their own git
worktrees; one lands, the other conflicts and is discarded; a SIGKILL in the middle changes
nothing of that."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from lovia.workspace.restore_points import RestorePoints
from tests.server.harness import AGENT_HEADER, Harness
from tests.support.git_repo import git, init_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

# Each run follows the script of its prompt, by how many tool results it has: a resumed run
# (a fresh agent module in a new process) continues where its transcript stands.
BY_PROMPT = (
    AGENT_HEADER
    + """
from collections import deque
from lovia.transcript import InputEntry, ToolResultEntry


@tool
async def wait(name: str) -> str:
    "Wait for a release file."
    await wait_for_file(name, timeout=120)
    return "released"


def script(letter):
    return [
        call("write_file", {"path": "shared.txt", "content": f"one\\n{letter}\\nthree\\n"},
             call_id=f"w{letter}"),
        call("wait", {"name": f"release-{letter}"}, call_id=f"r{letter}"),
        text(f"done {letter}"),
    ]


SCRIPTS = {
    "variant A": script("A"),
    "variant B": script("B"),
    "add four": [
        call("write_file", {"path": "four.txt", "content": "four\\n"}, call_id="f1"),
        text("added four"),
    ],
    "escape": [
        call("write_file", {"path": str(ROOT / "shared.txt"), "content": "pwned\\n"},
             call_id="e1"),
        text("tried"),
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


agent = Agent(name="by-prompt", model=ByPrompt(), tools=[wait])
"""
)

SHARED = "one\ntwo\nthree\n"


def make_repo(root: Path, agent: str) -> None:
    committed = {
        "shared.txt": SHARED,
        "readme.md": "# project\n",
        ".gitignore": "release-*\n__pycache__/\n",
        "agent.py": agent,
    }
    # uncommitted work the runs start from, and a secret they must never get
    draft = {"readme.md": "# project\n\ndraft\n", "notes.txt": "todo\n", ".env": "TOKEN=secret\n"}
    init_repo(root, committed, uncommitted=draft)


SETTINGS = {"agent": "agent.py:agent", "permissions": {"preset": "trusted"}}


@pytest.mark.parametrize("crash", [False, True], ids=["steady", "sigkill"])
async def test_two_worktree_runs_apply_one_conflict_discard(tmp_path: Path, crash: bool) -> None:
    import textwrap

    root = (tmp_path / "ws").resolve()
    make_repo(root, textwrap.dedent(BY_PROMPT))
    state = tmp_path / "state"
    h = Harness(root, state)
    await h.start(settings=SETTINGS)
    try:
        a = await h.run("variant A", isolation="worktree")
        b = await h.run("variant B", isolation="worktree")
        assert a["status"] == b["status"] == "running"
        for run, letter in ((a, "A"), (b, "B")):
            await h.wait_kind(run["runId"], "tool.call", toolCallId=f"r{letter}")
        listing = (await h.request("lovia/worktree/list", {}))["worktrees"]
        paths = {w["runId"]: Path(w["path"]) for w in listing}
        assert set(paths) == {a["runId"], b["runId"]}
        assert {w["branch"][:16] for w in listing} == {"lovia/variant-a-", "lovia/variant-b-"}
        for run, letter in ((a, "A"), (b, "B")):
            wt = paths[run["runId"]]
            assert wt.is_relative_to(state) and not wt.is_relative_to(root)
            assert (wt / "shared.txt").read_text() == f"one\n{letter}\nthree\n"
            assert (wt / "notes.txt").read_text() == "todo\n"  # carried, untracked
            assert (wt / "readme.md").read_text() == "# project\n\ndraft\n"  # carried, tracked
            assert not (wt / ".env").exists()  # denied: never copied
        assert (root / "shared.txt").read_text() == SHARED
        locked = git(root, "worktree", "list", "--porcelain")
        assert locked.count("locked") == 2

        if crash:
            await h.kill()
            h = Harness(root, state)
            await h.start(settings=SETTINGS)
            listing = (await h.request("lovia/worktree/list", {}))["worktrees"]
            assert {w["runId"] for w in listing} == {a["runId"], b["runId"]}
            for run in (a, b):  # resumed in their worktrees without a request
                started = await h.wait_kind(run["runId"], "run.started")
                assert started["resumed"] is True
                assert Path(started["cwd"]) == paths[run["runId"]]
        (root / "release-A").write_text("go")
        (root / "release-B").write_text("go")
        for run, letter in ((a, "A"), (b, "B")):
            done = await h.wait_for(
                lambda e, rid=run["runId"]: (
                    e["runId"] == rid
                    and e["kind"] == "run.finished"
                    and e["status"] != "interrupted"
                )
            )
            assert done["status"] == "completed" and done["output"] == f"done {letter}"
        assert (root / "shared.txt").read_text() == SHARED

        diff = await h.request("lovia/worktree/diff", {"runId": a["runId"]})
        (changed,) = diff["files"]
        assert changed["path"] == "shared.txt" and changed["verdict"] == "clean"
        assert changed["oldText"] == SHARED and changed["newText"] == "one\nA\nthree\n"
        assert "+A" in changed["patch"] and "-two" in changed["patch"]

        for wt in paths.values():  # each run took restore points in its own worktree
            assert RestorePoints.store_exists(wt, state / "restore-points")
        applied = await h.request("lovia/worktree/apply", {"runId": a["runId"]})
        assert applied["applied"] is True and applied["files"] == ["shared.txt"]
        undo = await h.request("lovia/restorePreview", {"checkpointId": applied["checkpointId"]})
        assert [f["path"] for f in undo["files"]] == [str(root / "shared.txt")]  # the undo
        assert (root / "shared.txt").read_text() == "one\nA\nthree\n"
        assert (root / "readme.md").read_text() == "# project\n\ndraft\n"
        assert not paths[a["runId"]].exists()

        before = sorted(p.name for p in root.iterdir())
        clash = await h.request("lovia/worktree/apply", {"runId": b["runId"]})
        assert clash["applied"] is False and clash["files"] == []
        assert [c["path"] for c in clash["conflicts"]] == ["shared.txt"]
        assert clash["conflicts"][0]["verdict"] == "conflict"
        assert (root / "shared.txt").read_text() == "one\nA\nthree\n"
        assert sorted(p.name for p in root.iterdir()) == before

        out = await h.request("lovia/worktree/discard", {"runId": b["runId"]})
        assert out == {"runId": b["runId"], "state": "discarded"}
        worktrees = git(root, "worktree", "list")
        assert str(paths[a["runId"]]) not in worktrees
        assert str(paths[b["runId"]]) not in worktrees
        assert "lovia/" not in git(root, "branch", "--list")
        assert not paths[b["runId"]].exists()
        for wt in paths.values():  # the worktrees' restore points went with them
            assert not RestorePoints.store_path(wt, state / "restore-points").exists()
        assert (await h.request("lovia/worktree/list", {}))["worktrees"] == []
        closed = await h.request("lovia/worktree/list", {"includeClosed": True})
        states = {w["runId"]: w["state"] for w in closed["worktrees"]}
        assert states == {a["runId"]: "applied", b["runId"]: "discarded"}
        assert git(root, "status", "--porcelain").splitlines() == [
            " M readme.md",
            " M shared.txt",
            "?? .env",
            "?? notes.txt",
        ]
    finally:
        if h.client is not None:
            await h.stop()


async def test_worktree_runs_over_the_limit_wait_in_the_queue(tmp_path: Path) -> None:
    import textwrap

    root = (tmp_path / "ws").resolve()
    make_repo(root, textwrap.dedent(BY_PROMPT))
    h = Harness(root, tmp_path / "state")
    await h.start(settings={**SETTINGS, "worktrees": {"maxConcurrent": 1}})
    try:
        a = await h.run("variant A", isolation="worktree")
        b = await h.run("variant B", isolation="worktree")
        assert (a["status"], b["status"]) == ("running", "queued")
        listing = (await h.request("lovia/worktree/list", {}))["worktrees"]
        assert {w["runId"]: w["state"] for w in listing} == {
            a["runId"]: "active",
            b["runId"]: "queued",
        }
        await h.wait_kind(a["runId"], "tool.call", toolCallId="rA")
        assert h.of_run(b["runId"]) == []
        (root / "release-A").write_text("go")
        (root / "release-B").write_text("go")
        await h.finished(a["runId"])
        done = await h.finished(b["runId"])
        assert done["status"] == "completed"
    finally:
        await h.stop()


async def test_worktree_isolation_outside_a_repository_is_refused(tmp_path: Path) -> None:
    root = (tmp_path / "plain").resolve()
    root.mkdir()
    (root / "file.txt").write_text("x\n")
    h = Harness(root, tmp_path / "state")
    await h.start(settings={"model": "demo"})
    try:
        with pytest.raises(Exception) as info:
            await h.run("do it", isolation="worktree")
        assert info.value.code == -32019
        assert info.value.data["reason"] == "not-a-repo"
        assert info.value.data["field"] == "isolation" and info.value.data["hint"]
        assert h.events == []  # nothing ran, not even in the workspace
    finally:
        await h.stop()


async def test_a_worktree_run_does_not_get_the_workspace_folders(tmp_path: Path) -> None:
    """Its ACL root is the worktree: the editor's folders are outside it (a write there asks,
    as any write outside the root does, instead of the folder's own rules)."""
    import textwrap

    root = (tmp_path / "ws").resolve()
    make_repo(root, textwrap.dedent(BY_PROMPT))
    h = Harness(root, tmp_path / "state")
    await h.start(settings=SETTINGS)
    try:
        run = await h.run("escape", isolation="worktree")
        asked = await h.wait_kind(run["runId"], "approval.requested", toolCallId="e1")
        await h.request(
            "lovia/approve",
            {"runId": run["runId"], "approvalId": asked["approvalId"], "decision": "reject_once"},
        )
        assert (await h.finished(run["runId"]))["status"] == "completed"
        assert (root / "shared.txt").read_text() == SHARED
        diff = await h.request("lovia/worktree/diff", {"runId": run["runId"]})
        assert diff["files"] == []
        kept = await h.request("lovia/worktree/keep", {"runId": run["runId"]})
        assert kept["state"] == "kept" and kept["branch"] in git(root, "branch", "--list")
        assert str(tmp_path / "state") not in git(root, "worktree", "list")
    finally:
        await h.stop()


async def test_deleting_a_worktree_runs_session_keeps_its_work_on_the_branch(
    tmp_path: Path,
) -> None:
    """The worktree of a deleted run goes; its branch stays when it holds work, and goes too
    when it holds none."""
    import textwrap

    root = (tmp_path / "ws").resolve()
    make_repo(root, textwrap.dedent(BY_PROMPT))
    h = Harness(root, tmp_path / "state")
    await h.start(settings=SETTINGS)
    try:
        (root / "release-A").write_text("go")
        worked = await h.run("variant A", isolation="worktree")
        idle = await h.run("escape", isolation="worktree")
        asked = await h.wait_kind(idle["runId"], "approval.requested", toolCallId="e1")
        await h.request(
            "lovia/approve",
            {"runId": idle["runId"], "approvalId": asked["approvalId"], "decision": "reject_once"},
        )
        for run in (worked, idle):
            assert (await h.finished(run["runId"]))["status"] == "completed"
        listing = {w["runId"]: w for w in (await h.request("lovia/worktree/list", {}))["worktrees"]}
        for run in (worked, idle):
            out = await h.request("lovia/deleteSession", {"sessionId": run["sessionId"]})
            assert out["deleted"] is True
            gone = Path(listing[run["runId"]]["path"])
            assert not await asyncio.to_thread(gone.exists)
        closed = await h.request("lovia/worktree/list", {"includeClosed": True})
        states = {w["runId"]: w["state"] for w in closed["worktrees"]}
        assert states == {worked["runId"]: "kept", idle["runId"]: "discarded"}
        branches = git(root, "branch", "--list")
        assert listing[worked["runId"]]["branch"] in branches
        assert listing[idle["runId"]]["branch"] not in branches
        tip = listing[worked["runId"]]["branch"]
        assert git(root, "show", f"{tip}:shared.txt") == "one\nA\nthree\n"
        assert (root / "shared.txt").read_text() == SHARED
        assert str(tmp_path / "state") not in git(root, "worktree", "list")
    finally:
        await h.stop()


async def test_sigkill_while_the_worktree_checks_out(tmp_path: Path) -> None:
    """The server dies right after ``lovia/run`` answered, while the worktree is (most likely)
    still being checked out: the next process makes the worktree again and the run goes on
    there; the branch holds the repository whole plus the run's one change."""
    import textwrap

    root = (tmp_path / "ws").resolve()
    make_repo(root, textwrap.dedent(BY_PROMPT))
    for i in range(3000):
        folder = root / f"pkg{i // 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"m{i:04d}.py").write_text(f"X = {i}\n")
    git(root, "add", "pkg*")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "many")
    state = tmp_path / "state"
    h = Harness(root, state)
    await h.start(settings=SETTINGS)
    try:
        run = await h.run("variant A", isolation="worktree")
        await h.kill()  # (checked by hand: the record has no base yet at this point)
        h = Harness(root, state)
        await h.start(settings=SETTINGS)
        (root / "release-A").write_text("go")
        done = await h.wait_for(
            lambda e: (
                e["runId"] == run["runId"]
                and e["kind"] == "run.finished"
                and e["status"] != "interrupted"
            )
        )
        assert done["status"] == "completed"
        diff = await h.request("lovia/worktree/diff", {"runId": run["runId"]})
        assert [f["path"] for f in diff["files"]] == ["shared.txt"]
        (listed,) = (await h.request("lovia/worktree/list", {}))["worktrees"]
        wt = Path(listed["path"])
        assert (wt / "pkg29" / "m2999.py").read_text() == "X = 2999\n"
        assert (wt / "notes.txt").read_text() == "todo\n"
        assert git(root, "worktree", "list").count(str(state)) == 1
    finally:
        if h.client is not None:
            await h.stop()


async def test_a_follow_up_in_a_worktree_runs_session_continues_in_its_worktree(
    tmp_path: Path,
) -> None:
    """Same worktree, same branch, a growing diff; refused once the worktree is gone."""
    import textwrap

    root = (tmp_path / "ws").resolve()
    make_repo(root, textwrap.dedent(BY_PROMPT))
    h = Harness(root, tmp_path / "state")
    await h.start(settings=SETTINGS)
    try:
        (root / "release-A").write_text("go")
        first = await h.run("variant A", isolation="worktree")
        assert (await h.finished(first["runId"]))["status"] == "completed"
        (before,) = (await h.request("lovia/worktree/list", {}))["worktrees"]
        assert before["latestRunId"] == first["runId"]
        status = await h.request("lovia/status", {})
        assert status["worktrees"] == {"queued": 0, "running": 0, "review": 1, "maxConcurrent": 3}

        again = await h.run("add four", sessionId=first["sessionId"])
        assert again["sessionId"] == first["sessionId"] and again["runId"] != first["runId"]
        started = await h.wait_kind(again["runId"], "run.started")
        assert Path(started["cwd"]) == Path(before["path"])
        done = await h.finished(again["runId"])
        assert done["status"] == "completed" and done["output"] == "added four"
        assert not (root / "four.txt").exists()
        assert (root / "shared.txt").read_text() == SHARED

        (after,) = (await h.request("lovia/worktree/list", {}))["worktrees"]
        assert (after["runId"], after["branch"], after["path"]) == (
            first["runId"],
            before["branch"],
            before["path"],
        )
        assert after["latestRunId"] == again["runId"] and after["runStatus"] == "completed"
        diff = await h.request("lovia/worktree/diff", {"runId": first["runId"]})
        assert sorted(f["path"] for f in diff["files"]) == ["four.txt", "shared.txt"]
        for _ in range(100):  # each run's work is committed on the branch when it ends
            log = git(root, "log", "--format=%s", before["branch"]).splitlines()
            if log[0] == "lovia: add four":
                break
            await asyncio.sleep(0.05)
        assert log[:2] == ["lovia: add four", "lovia: variant A"]

        with pytest.raises(Exception) as busy:  # a second prompt while one runs there
            third = await h.run("escape", sessionId=first["sessionId"])
            await h.run("add four", sessionId=first["sessionId"])
        assert busy.value.code == -32012
        asked = await h.wait_kind(third["runId"], "approval.requested", toolCallId="e1")
        assert (await h.request("lovia/status", {}))["worktrees"]["running"] == 1
        await h.request(
            "lovia/approve",
            {"runId": third["runId"], "approvalId": asked["approvalId"], "decision": "reject_once"},
        )
        await h.finished(third["runId"])

        await h.request("lovia/worktree/discard", {"runId": first["runId"]})
        with pytest.raises(Exception) as gone:
            await h.run("add four", sessionId=first["sessionId"])
        assert gone.value.code == -32020
        assert gone.value.data["state"] == "discarded" and gone.value.data["hint"]
        assert (root / "shared.txt").read_text() == SHARED
    finally:
        await h.stop()
