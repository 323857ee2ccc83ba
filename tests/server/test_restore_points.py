"""Restore points through the real server: the run hook, checkpoints, preview, restore."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from tests.server.harness import AGENT_HEADER, Harness

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

FORMAT = "import pathlib; p = pathlib.Path('src/fmt.py'); p.write_text('def f(a, b):\\n    return a + b\\n')"

# The provider answers by the run's prompt and how far that run got, so each run of the
# session (a fresh agent module per run) follows its own script.
BY_PROMPT = (
    AGENT_HEADER
    + f"""
import sys
from collections import deque
from lovia.transcript import InputEntry, ToolResultEntry

FORMAT = {FORMAT!r}
SCRIPTS = {{
    "look": [
        call("read_file", {{"path": "src/app.py"}}, call_id="l1"),
        text("looked"),
    ],
    "refactor": [
        call("read_file", {{"path": "src/app.py"}}, call_id="a0"),
        call("edit_file", {{"path": "src/app.py", "old": "return 1", "new": "return 2"}}, call_id="a1"),
        call("write_file", {{"path": "src/util.py", "content": "X = 10\\nZ = 30\\n"}}, call_id="a2"),
        call("shell", {{"command": "mkdir -p gen/deep && echo made > gen/deep/new.txt && rm docs/old.md && chmod +x src/util.py && chmod -x run.sh"}}, call_id="a3"),
        call("shell", {{"command": sys.executable + ' -c "' + FORMAT + '"'}}, call_id="a4"),
        text("refactored"),
    ],
    "more": [
        call("write_file", {{"path": "notes.txt", "content": "more\\n"}}, call_id="m1"),
        call("edit_file", {{"path": "src/app.py", "old": "return 2", "new": "return 3"}}, call_id="m2"),
        text("more done"),
    ],
    "wait": [
        call("shell", {{"command": "echo waiting | tee /dev/null"}}, call_id="w1"),
        text("waited"),
    ],
}}


class ByPrompt(ScriptedProvider):
    def __init__(self):
        super().__init__([], record=False)

    async def stream(self, entries, **kw):
        last = max(i for i, e in enumerate(entries) if isinstance(e, InputEntry) and e.role == "user")
        prompt = entries[last].content
        done = sum(isinstance(e, ToolResultEntry) for e in entries[last:])
        self.script = deque(SCRIPTS[prompt][done:])
        async for delta in super().stream(entries, **kw):
            yield delta


agent = Agent(name="by-prompt", model=ByPrompt())
"""
)

TRUSTED = {"permissions": {"preset": "trusted"}}


def make_project(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    return 1\n")
    (root / "src" / "util.py").write_text("X = 1\nY = 2\n")
    (root / "src" / "fmt.py").write_text("def  f( a,b ):\n  return a+b\n")
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    (root / "data.bin").write_bytes(bytes(range(256)) * 4)
    (root / "docs").mkdir()
    (root / "docs" / "old.md").write_text("# old\n")
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "out.js").write_text("built v1\n")
    (root / ".env").write_text("TOKEN=top-secret\n")


def tree_state(root: Path) -> dict[str, tuple[bytes, int]]:
    out: dict[str, tuple[bytes, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (".git", "__pycache__")]
        for name in filenames:
            path = Path(dirpath) / name
            out[path.relative_to(root).as_posix()] = (
                path.read_bytes(),
                stat.S_IMODE(path.lstat().st_mode),
            )
    return out


async def start(harness: Harness, **settings: Any) -> str:
    spec = harness.write_agent(BY_PROMPT)
    await harness.start(settings={"agent": spec, **TRUSTED, **settings})
    return spec


async def run_to_end(harness: Harness, prompt: str, **params: Any) -> dict[str, Any]:
    run = await harness.run(prompt, **params)
    done = await harness.approve_all(run["runId"])
    assert done["status"] == "completed", done
    return run


async def error_of(harness: Harness, method: str, params: dict[str, Any]) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await harness.request(method, params)
    return info.value


def store_refs(state_dir: Path) -> str:
    (store,) = (state_dir / "restore-points").iterdir()
    return subprocess.run(
        ["git", "--git-dir", str(store / "git"), "for-each-ref"],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(store)},
    ).stdout


# --------------------------------------------------------------------------- the run hook


async def test_a_run_that_edits_runs_shell_and_formats_restores_to_a_byte_identical_tree(
    harness: Harness,
) -> None:
    make_project(harness.root)
    await start(harness)
    before = tree_state(harness.root)

    look = await run_to_end(harness, "look")
    sid = look["sessionId"]
    assert "checkpoint.created" not in harness.kinds(look["runId"]), "a read-only turn"
    first = await run_to_end(harness, "refactor", sessionId=sid)
    events = harness.of_run(first["runId"])
    kinds = [(e["kind"], e.get("toolCallId")) for e in events]
    created = next(e for e in events if e["kind"] == "checkpoint.created")
    # taken after the read and before the first call that may change files
    assert kinds.index(("checkpoint.created", None)) > kinds.index(("tool.result", "a0"))
    assert kinds.index(("checkpoint.created", None)) < kinds.index(("tool.call", "a1"))
    assert created["turnIndex"] == 1 and created["label"] == "refactor"
    assert created["root"] == str(harness.root)
    assert [e["kind"] for e in events].count("checkpoint.created") == 1
    second = await run_to_end(harness, "more", sessionId=sid)

    listed = await harness.request("lovia/checkpoints", {"sessionId": sid})
    assert listed["available"] is True
    points = listed["checkpoints"]
    assert [(c["kind"], c["turnIndex"], c["userMessage"]) for c in points] == [
        ("turn", 1, "refactor"),
        ("turn", 2, "more"),
    ]
    assert points[0]["checkpointId"] == created["checkpointId"]
    assert points[0]["runId"] == first["runId"] and points[1]["runId"] == second["runId"]
    turn_files = {c["path"]: c["status"] for c in points[0]["changedFiles"]}
    root = harness.root
    assert turn_files == {
        str(root / "src/app.py"): "modified",
        str(root / "src/util.py"): "modified",
        str(root / "src/fmt.py"): "modified",
        str(root / "gen/deep/new.txt"): "added",
        str(root / "docs/old.md"): "deleted",
        str(root / "run.sh"): "modified",
    }
    assert {c["path"] for c in points[1]["changedFiles"]} == {
        str(root / "notes.txt"),
        str(root / "src/app.py"),
    }

    preview = await harness.request(
        "lovia/restorePreview", {"checkpointId": created["checkpointId"]}
    )
    files = {f["path"]: f for f in preview["files"]}
    assert files[str(root / "gen/deep/new.txt")]["action"] == "delete"
    assert files[str(root / "docs/old.md")]["action"] == "create"
    app = files[str(root / "src/app.py")]
    assert app["action"] == "modify" and app["uri"] == (root / "src/app.py").as_uri()
    assert app["oldText"] == "def main():\n    return 3\n"
    assert app["newText"] == "def main():\n    return 1\n"
    assert "-    return 3" in app["diff"] and "+    return 1" in app["diff"]
    assert not preview["handChanged"] and not any(f["handChanged"] for f in files.values())
    assert str(root / ".env") not in files and str(root / "build/out.js") not in files

    result = await harness.request("lovia/restore", {"checkpointId": created["checkpointId"]})
    assert result["undoCheckpoint"]["kind"] == "restore"
    assert result["removedRuns"] == [] and result["prompt"] is None
    assert {c["path"]: c["status"] for c in result["restored"]}[str(root / "docs/old.md")] == (
        "added"
    )
    assert tree_state(root) == before
    assert not (root / "gen").exists()

    # and back again: restoring the undo checkpoint brings the run's work back
    again = await harness.request(
        "lovia/restore", {"checkpointId": result["undoCheckpoint"]["checkpointId"]}
    )
    assert not again["kept"]
    assert (root / "notes.txt").read_text() == "more\n"
    assert (root / "src/app.py").read_text() == "def main():\n    return 3\n"


async def test_commands_list_preview_and_restore_through_execute_command(
    harness: Harness,
) -> None:
    make_project(harness.root)
    await start(harness)
    run = await run_to_end(harness, "more")
    assert harness.client is not None

    async def command(name: str, arg: dict[str, Any]) -> Any:
        return await harness.request(
            "workspace/executeCommand", lsp.ExecuteCommandParams(command=name, arguments=[arg])
        )

    listed = await command("lovia.checkpoints", {"sessionId": run["sessionId"]})
    (point,) = listed["checkpoints"]
    preview = await command("lovia.restorePreview", {"checkpointId": point["checkpointId"]})
    assert [(f["path"], f["action"]) for f in preview["files"]] == [
        (str(harness.root / "notes.txt"), "delete")
    ]
    restored = await command("lovia.restore", {"checkpointId": point["checkpointId"]})
    assert restored["restored"][0]["status"] == "deleted"
    assert not (harness.root / "notes.txt").exists()


PARALLEL = (
    AGENT_HEADER
    + """
@tool
async def scribble(name: str) -> str:
    "Write a note (declares no kind: it may change files; runs in parallel by default)."
    await asyncio.sleep(0.05)
    (ROOT / name).write_text("scribbled\\n")
    return "ok"


agent = Agent(
    name="parallel",
    tools=[scribble],
    model=ScriptedProvider([
        batch(("read_file", {"path": "src/app.py"}, "p0"), ("list_files", {"path": "."}, "p1")),
        batch(("scribble", {"name": "one.txt"}, "p2"), ("scribble", {"name": "two.txt"}, "p3")),
        text("scribbled"),
    ]),
)
"""
)


async def test_concurrent_calls_that_may_write_get_the_point_before_any_of_them_runs(
    harness: Harness,
) -> None:
    make_project(harness.root)
    before = tree_state(harness.root)
    spec = harness.write_agent(PARALLEL)
    before["agent.py"] = tree_state(harness.root)["agent.py"]
    await harness.start(settings={"agent": spec, **TRUSTED})
    run = await run_to_end(harness, "scribble")
    events = harness.of_run(run["runId"])
    order = [(e["kind"], e.get("toolCallId")) for e in events]
    at = order.index(("checkpoint.created", None))
    # the read-only batch did not take it; the writing batch took it before its first call
    assert at > order.index(("tool.result", "p1"))
    assert at < order.index(("tool.call", "p2")) and at < order.index(("tool.call", "p3"))
    assert (harness.root / "one.txt").exists() and (harness.root / "two.txt").exists()
    (point,) = (await harness.request("lovia/checkpoints", {"sessionId": run["sessionId"]}))[
        "checkpoints"
    ]
    await harness.request("lovia/restore", {"checkpointId": point["checkpointId"]})
    assert tree_state(harness.root) == before


WITH_CHILD = (
    AGENT_HEADER
    + """
from lovia.plugins.subagents import Subagents
from lovia.transcript import ToolResultEntry


@tool
async def scribble(name: str) -> str:
    "Write a note."
    (ROOT / name).write_text("from the child\\n")
    return "ok"


class ByResults(ScriptedProvider):
    def __init__(self, script):
        super().__init__([], record=False)
        self.by = script

    async def stream(self, entries, **kw):
        done = sum(isinstance(e, ToolResultEntry) for e in entries)
        self.script.clear()
        self.script.append(self.by[min(done, len(self.by) - 1)])
        async for delta in super().stream(entries, **kw):
            yield delta


helper = Agent(
    name="helper",
    model=ByResults([call("scribble", {"name": "child.txt"}, call_id="c1"), text("child done")]),
    tools=[scribble],
)
agent = Agent(
    name="boss",
    model=ByResults([
        call("spawn_subagent", {"agent": "helper", "prompt": "write child.txt"}, call_id="s1"),
        call("wait_subagents", {"timeout_seconds": 60}, call_id="w1"),
        text("the child wrote it"),
    ]),
    plugins=[Subagents([helper])],
)
"""
)


async def test_a_subagents_writes_are_undone_by_its_parents_turn_point(harness: Harness) -> None:
    make_project(harness.root)
    spec = harness.write_agent(WITH_CHILD)
    before = tree_state(harness.root)
    await harness.start(settings={"agent": spec, **TRUSTED})
    run = await run_to_end(harness, "delegate")
    assert (harness.root / "child.txt").read_text() == "from the child\n"
    started = next(e for e in harness.of_run(run["runId"]) if e["kind"] == "subagent.started")
    kinds = [(e["kind"], e.get("toolCallId")) for e in harness.of_run(run["runId"])]
    assert kinds.index(("checkpoint.created", None)) < kinds.index(("tool.call", "s1"))
    child_kinds = harness.kinds(started["childRunId"])
    assert "checkpoint.created" not in child_kinds and child_kinds[-1] == "run.finished"
    (point,) = (await harness.request("lovia/checkpoints", {"sessionId": run["sessionId"]}))[
        "checkpoints"
    ]
    await harness.request("lovia/restore", {"checkpointId": point["checkpointId"]})
    assert tree_state(harness.root) == before


# --------------------------------------------------------------------------- hand changes


async def test_hand_changes_and_unsaved_buffers_are_flagged_and_kept_unless_forced(
    harness: Harness,
) -> None:
    make_project(harness.root)
    await start(harness)
    run = await run_to_end(harness, "refactor")
    (point,) = (await harness.request("lovia/checkpoints", {"sessionId": run["sessionId"]}))[
        "checkpoints"
    ]
    root = harness.root
    (root / "src/util.py").write_text("typed by hand\n")  # after the run, by hand
    assert harness.client is not None
    fmt = root / "src/fmt.py"
    harness.client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(
                uri=fmt.as_uri(), language_id="python", version=1, text=fmt.read_text()
            )
        )
    )
    harness.client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=fmt.as_uri(), version=2),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text="unsaved work\n")],
        )
    )
    preview = await harness.request("lovia/restorePreview", {"checkpointId": point["checkpointId"]})
    files = {f["path"]: f for f in preview["files"]}
    assert sorted(preview["handChanged"]) == [str(fmt), str(root / "src/util.py")]
    assert files[str(root / "src/util.py")]["handChanged"] is True
    assert files[str(root / "src/util.py")]["unsaved"] is False
    assert files[str(fmt)]["unsaved"] is True and files[str(fmt)]["handChanged"] is True
    assert files[str(root / "src/app.py")]["handChanged"] is False

    result = await harness.request("lovia/restore", {"checkpointId": point["checkpointId"]})
    assert sorted(result["kept"]) == [str(fmt), str(root / "src/util.py")]
    assert (root / "src/util.py").read_text() == "typed by hand\n"
    assert (root / "src/app.py").read_text() == "def main():\n    return 1\n"

    forced = await harness.request(
        "lovia/restore",
        {"checkpointId": point["checkpointId"], "forcePaths": [str(root / "src/util.py")]},
    )
    assert [c["path"] for c in forced["restored"]] == [str(root / "src/util.py")]
    assert forced["kept"] == [str(fmt)]
    assert (root / "src/util.py").read_text() == "X = 1\nY = 2\n"
    # once saved, the buffer's text is the disk's: nothing unsaved is left to keep
    fmt.write_text("unsaved work\n")
    harness.client.text_document_did_save(
        lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=fmt.as_uri()))
    )
    last = await harness.request("lovia/restorePreview", {"checkpointId": point["checkpointId"]})
    assert not any(f["unsaved"] for f in last["files"])


# --------------------------------------------------------------------------- conversation


async def test_restoring_the_conversation_cuts_the_session_back_to_that_turn(
    harness: Harness,
) -> None:
    make_project(harness.root)
    await start(harness)
    first = await run_to_end(harness, "refactor")
    sid = first["sessionId"]
    second = await run_to_end(harness, "more", sessionId=sid)
    points = (await harness.request("lovia/checkpoints", {"sessionId": sid}))["checkpoints"]
    assert [c["turnIndex"] for c in points] == [0, 1]

    result = await harness.request(
        "lovia/restore", {"checkpointId": points[1]["checkpointId"], "conversation": True}
    )
    assert result["removedRuns"] == [second["runId"]] and result["prompt"] == "more"
    assert not (harness.root / "notes.txt").exists()
    assert (harness.root / "src/app.py").read_text() == "def main():\n    return 2\n"
    session = await harness.request("lovia/session", {"sessionId": sid})
    assert [r["runId"] for r in session["runs"]] == [first["runId"]]
    assert [m["content"] for m in session["entries"] if m["role"] == "user"] == ["refactor"]
    assert session["entries"][-1]["content"] == "refactored"
    error = await error_of(harness, "lovia/replay", {"runId": second["runId"]})
    assert error.code == -32010
    listed = (await harness.request("lovia/checkpoints", {"sessionId": sid}))["checkpoints"]
    assert [(c["kind"], c["turnIndex"]) for c in listed] == [("turn", 0), ("restore", None)]

    # the edited message is sent again: it is turn 1 again, with a point of its own
    again = await run_to_end(harness, "more", sessionId=sid)
    created = await harness.wait_kind(again["runId"], "checkpoint.created")
    assert created["turnIndex"] == 1
    session = await harness.request("lovia/session", {"sessionId": sid})
    assert [m["content"] for m in session["entries"] if m["role"] == "user"] == [
        "refactor",
        "more",
    ]

    error = await error_of(
        harness,
        "lovia/restore",
        {"checkpointId": result["undoCheckpoint"]["checkpointId"], "conversation": True},
    )
    assert error.code == -32602 and error.data["field"] == "conversation"


# --------------------------------------------------------------------------- refusals


async def test_restore_is_refused_while_a_run_is_live_and_unknown_ids_are_errors(
    harness: Harness,
) -> None:
    make_project(harness.root)
    await start(harness, permissions={"preset": "coding"})  # shell commands ask
    first = await run_to_end(harness, "more")
    sid = first["sessionId"]
    (point,) = (await harness.request("lovia/checkpoints", {"sessionId": sid}))["checkpoints"]
    live = await harness.run("wait", sessionId=sid)
    await harness.wait_kind(live["runId"], "approval.requested")
    error = await error_of(harness, "lovia/restore", {"checkpointId": point["checkpointId"]})
    assert error.code == -32017
    assert error.data["activeRunId"] == live["runId"] and error.data["hint"]
    assert (harness.root / "notes.txt").exists(), "nothing was restored"
    # a preview is fine while the run waits
    preview = await harness.request("lovia/restorePreview", {"checkpointId": point["checkpointId"]})
    assert preview["files"]
    await harness.request("lovia/cancel", {"runId": live["runId"]})
    await harness.finished(live["runId"])

    for method in ("lovia/restorePreview", "lovia/restore"):
        for bad in ("rp-0000000000000000-000000", "nope"):
            error = await error_of(harness, method, {"checkpointId": bad})
            assert error.code == -32018 and error.data["hint"]
    error = await error_of(harness, "lovia/checkpoints", {"sessionId": "s_missing"})
    assert error.code == -32010
    error = await error_of(harness, "lovia/restore", {})
    assert error.code == -32602 and error.data["field"] == "checkpointId"


# --------------------------------------------------------------------------- storage


async def test_delete_session_prunes_its_restore_points(harness: Harness) -> None:
    make_project(harness.root)
    await start(harness)
    gone = await run_to_end(harness, "more")
    kept = await run_to_end(harness, "refactor")
    assert "refs/lovia/points/" in store_refs(harness.state_dir)
    deleted = await harness.request("lovia/deleteSession", {"sessionId": gone["sessionId"]})
    assert deleted == {"deleted": True}
    remaining = (await harness.request("lovia/checkpoints", {"sessionId": kept["sessionId"]}))[
        "checkpoints"
    ]
    assert len(remaining) == 1
    assert store_refs(harness.state_dir).count("refs/lovia/points/") == 1


async def test_the_size_cap_prunes_the_oldest_points(harness: Harness) -> None:
    make_project(harness.root)
    (harness.root / "blob.bin").write_bytes(os.urandom(300_000))
    await start(harness, restorePoints={"maxStoreMB": 0.5})
    sid = None
    ids = []
    for _ in range(4):
        (harness.root / "blob.bin").write_bytes(os.urandom(300_000))  # by hand, between runs
        run = await run_to_end(harness, "wait", **({"sessionId": sid} if sid else {}))
        sid = run["sessionId"]
        ids.append((await harness.wait_kind(run["runId"], "checkpoint.created"))["checkpointId"])
    listed = await harness.request("lovia/checkpoints", {"sessionId": sid})
    remaining = [c["checkpointId"] for c in listed["checkpoints"]]
    assert remaining and remaining[-1] == ids[-1]
    assert remaining == ids[len(ids) - len(remaining) :] and len(remaining) < len(ids)


async def test_restore_points_can_be_turned_off(harness: Harness) -> None:
    make_project(harness.root)
    await start(harness, restorePoints={"enabled": False})
    run = await run_to_end(harness, "more")
    assert "checkpoint.created" not in harness.kinds(run["runId"])
    listed = await harness.request("lovia/checkpoints", {"sessionId": run["sessionId"]})
    assert listed["available"] is False and "enabled" in listed["reason"]
    assert not (harness.state_dir / "restore-points").exists()


async def test_without_git_runs_work_and_the_missing_git_is_said_once(
    harness: Harness, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin-without-git"
    bin_dir.mkdir()
    for tool in ("sh", "bash", "mkdir", "rm", "chmod", "echo"):
        found = shutil.which(tool)
        if found:
            os.symlink(found, bin_dir / tool)
    make_project(harness.root)
    spec = harness.write_agent(BY_PROMPT)
    await harness.start(settings={"agent": spec, **TRUSTED}, env={"PATH": str(bin_dir)})
    first = await run_to_end(harness, "more")
    second = await run_to_end(harness, "wait", sessionId=first["sessionId"])
    for run in (first, second):
        assert "checkpoint.created" not in harness.kinds(run["runId"])
    assert (harness.root / "notes.txt").read_text() == "more\n"
    listed = await harness.request("lovia/checkpoints", {"sessionId": first["sessionId"]})
    assert listed["available"] is False and "git was not found" in listed["reason"]
    error = await error_of(harness, "lovia/restore", {"checkpointId": "rp-0000000000000000-000000"})
    assert error.code == -32018 and "git" in error.data["hint"]
    assert harness.client is not None
    warnings = [
        m.message
        for m in harness.client.log_messages
        if "git was not found" in m.message and m.type == lsp.MessageType.Warning
    ]
    assert len(warnings) == 1, warnings


async def test_a_workspace_that_is_a_git_repository_keeps_its_own_git_state(
    harness: Harness,
) -> None:
    root = harness.root
    make_project(root)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "u",
        "GIT_AUTHOR_EMAIL": "u@x",
        "GIT_COMMITTER_NAME": "u",
        "GIT_COMMITTER_EMAIL": "u@x",
    }

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True
        ).stdout

    spec = harness.write_agent(BY_PROMPT)
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "init")
    (root / "src/util.py").write_text("stashed\n")
    git("stash")
    (root / "src/fmt.py").write_text("staged\n")
    git("add", "src/fmt.py")
    status, stash = git("status", "--porcelain"), git("stash", "list")
    index = (root / ".git" / "index").read_bytes()
    await harness.start(settings={"agent": spec, **TRUSTED})
    run = await run_to_end(harness, "more")
    (point,) = (await harness.request("lovia/checkpoints", {"sessionId": run["sessionId"]}))[
        "checkpoints"
    ]
    await harness.request("lovia/restore", {"checkpointId": point["checkpointId"]})
    assert git("stash", "list") == stash
    assert (root / ".git" / "index").read_bytes() == index
    assert git("status", "--porcelain") == status


REWRITE_ALL = (
    AGENT_HEADER
    + """
import sys

REWRITE = "import pathlib; [p.write_text(p.read_text() * 3) for p in pathlib.Path('bulk').rglob('*.txt')]"
agent = Agent(
    name="rewriter",
    model=ScriptedProvider([
        call("shell", {"command": sys.executable + ' -c "' + REWRITE + '"'}, call_id="r1"),
        text("rewrote"),
    ]),
)
"""
)


async def test_sigkill_during_a_restore_is_finished_by_the_next_server(tmp_path: Path) -> None:
    """The server dies half-way through writing files back; the next one to open the
    workspace finishes the restore from its journal: the tree is the checkpoint's, not a mix."""
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    state = tmp_path / "state"
    for i in range(1500):
        folder = root / "bulk" / f"d{i % 12}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"original {i}\n" * 40)
    first = Harness(root, state)
    spec = first.write_agent(REWRITE_ALL)
    target = tree_state(root)
    try:
        await first.start(settings={"agent": spec, **TRUSTED})
        run = await run_to_end(first, "rewrite")
        assert (root / "bulk/d0/f0.txt").read_text() == "original 0\n" * 120
        (point,) = (await first.request("lovia/checkpoints", {"sessionId": run["sessionId"]}))[
            "checkpoints"
        ]
        assert first.client is not None
        request = asyncio.ensure_future(
            first.request("lovia/restore", {"checkpointId": point["checkpointId"]})
        )
        journal = next((state / "restore-points").iterdir()) / "restore-journal.json"
        early = root / "bulk/d0/f0.txt"  # among the first files written back
        for _ in range(20_000):
            if request.done() or (journal.exists() and early.read_text().count("\n") == 40):
                break
            await asyncio.sleep(0.0005)
        proc = first.client._server
        proc.kill()
        await proc.wait()
        now = tree_state(root)
        back = sum(now[k] == v for k, v in target.items() if k.startswith("bulk/"))
        assert 0 < back < 1500, f"not killed half-way ({back} of 1500 files written back)"
        request.cancel()
        await asyncio.gather(request, return_exceptions=True)
        try:
            await asyncio.wait_for(first.client.stop(), 5)
        except Exception:
            pass
        first.client = None
    finally:
        if first.client is not None:
            await first.stop()

    second = Harness(root, state)
    try:
        await second.start(settings={"agent": spec, **TRUSTED})
        listed = await second.request("lovia/checkpoints", {"sessionId": run["sessionId"]})
        assert [c["kind"] for c in listed["checkpoints"]] == ["turn", "restore"]
        assert tree_state(root) == target
        assert not journal.exists()
        assert not list(root.rglob(".lovia-restore-*"))
    finally:
        await second.stop()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
