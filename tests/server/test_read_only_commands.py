"""Read-only commands run without an approval through the real server (default settings);
"always" approvals remember the exact command and the directory it runs in."""

from __future__ import annotations

import os
import subprocess

from tests.server.harness import AGENT_HEADER

SHELL_AGENT = (
    AGENT_HEADER
    + """
agent = Agent(
    name="sheller",
    model=ScriptedProvider([
        call("shell", {"command": "ls"}, call_id="ls"),
        call("shell", {"command": "git status --short"}, call_id="status"),
        call("shell", {"command": "cat notes.txt | grep hello"}, call_id="cat"),
        call("shell", {"command": "rm notes.txt"}, call_id="rm"),
        text("done"),
    ]),
)
"""
)


def _repo(root) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    (root / "notes.txt").write_text("hello\n")
    for args in (["init", "-q"], ["add", "notes.txt"], ["commit", "-qm", "notes"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


async def test_read_only_commands_run_without_asking_and_rm_still_asks(harness):
    _repo(harness.root)
    (harness.root / "new.txt").write_text("x\n")
    spec = harness.write_agent(SHELL_AGENT)
    await harness.start(settings={"agent": spec})
    run = await harness.run("look around")
    rid = run["runId"]
    req = await harness.wait_kind(rid, "approval.requested")
    assert req["toolCallId"] == "rm" and req["command"] == "rm notes.txt"
    await harness.request(
        "lovia/approve", {"runId": rid, "approvalId": req["approvalId"], "decision": "reject_once"}
    )
    done = await harness.finished(rid)
    assert done["status"] == "completed"
    events = harness.of_run(rid)
    asked = [e["toolCallId"] for e in events if e["kind"] == "approval.requested"]
    assert asked == ["rm"]
    results = {e["toolCallId"]: e for e in events if e["kind"] == "tool.result"}
    assert "notes.txt" in results["ls"]["content"][0]["text"]
    assert "?? new.txt" in results["status"]["content"][0]["text"]
    assert "hello" in results["cat"]["content"][0]["text"]
    assert results["rm"]["status"] == "declined"
    assert (harness.root / "notes.txt").exists()


async def test_the_setting_turns_it_off(harness):
    _repo(harness.root)
    spec = harness.write_agent(SHELL_AGENT)
    await harness.start(settings={"agent": spec, "permissions": {"readOnlyCommands": False}})
    run = await harness.run("look around")
    rid = run["runId"]
    req = await harness.wait_kind(rid, "approval.requested")
    assert req["toolCallId"] == "ls"
    await harness.request("lovia/cancel", {"runId": rid})
    await harness.finished(rid)


ALWAYS_AGENT = (
    AGENT_HEADER
    + """
agent = Agent(
    name="cleaner",
    model=ScriptedProvider([
        call("shell", {"command": "rm -rf build", "cwd": "a"}, call_id="a1"),
        call("shell", {"command": "rm -rf build", "cwd": "b"}, call_id="b1"),
        call("shell", {"command": "rm  -rf build", "cwd": "a"}, call_id="a2"),
        call("shell", {"command": "rm -rf build", "cwd": "./a/"}, call_id="a3"),
        text("done"),
    ]),
)
"""
)


async def test_always_remembers_the_exact_command_and_its_directory(harness):
    for d in ("a", "b"):
        (harness.root / d / "build").mkdir(parents=True)
        (harness.root / d / "build" / "out.o").write_text("o")
    spec = harness.write_agent(ALWAYS_AGENT)
    await harness.start(settings={"agent": spec})
    run = await harness.run("clean")
    rid = run["runId"]
    req = await harness.wait_kind(rid, "approval.requested", toolCallId="a1")
    await harness.request(
        "lovia/approve",
        {"runId": rid, "approvalId": req["approvalId"], "decision": "allow_always"},
    )
    # the same command in another directory asks again (and is refused here)
    req = await harness.wait_kind(rid, "approval.requested", toolCallId="b1")
    await harness.request(
        "lovia/approve", {"runId": rid, "approvalId": req["approvalId"], "decision": "reject_once"}
    )
    # so does a command that differs only in whitespace
    req = await harness.wait_kind(rid, "approval.requested", toolCallId="a2")
    await harness.request(
        "lovia/approve", {"runId": rid, "approvalId": req["approvalId"], "decision": "reject_once"}
    )
    done = await harness.finished(rid)
    assert done["status"] == "completed"
    events = harness.of_run(rid)
    resolved = {
        e["approvalId"]: (e["outcome"], e["by"]) for e in events if e["kind"] == "approval.resolved"
    }
    requested = {
        e["toolCallId"]: e["approvalId"] for e in events if e["kind"] == "approval.requested"
    }
    # the same directory spelled differently is the same directory: remembered
    assert resolved[requested["a3"]] == ("allowed", "policy")
    assert resolved[requested["b1"]] == ("rejected", "user")
    assert not (harness.root / "a" / "build").exists()
    assert (harness.root / "b" / "build" / "out.o").exists()
    status = await harness.request("lovia/status", {})
    subjects = [r["subject"] for r in status["sessionRules"]]
    assert subjects == [f'shell:["{harness.root.resolve() / "a"}", "rm -rf build"]']
