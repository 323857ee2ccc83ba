"""Plan mode through the real server: a model that insists on writing changes nothing and
raises no approval card; "act on this plan" then writes through the normal review."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from tests.support import fake_openai as oai

STDIO_SCRIPT = str(Path(__file__).resolve().parents[1] / "support" / "mcp_stdio_server.py")


def _results(harness, run_id: str) -> dict[str, dict]:
    return {e["toolCallId"]: e for e in harness.of_run(run_id) if e["kind"] == "tool.result"}


def _text(result: dict) -> str:
    return "".join(c.get("text", "") for c in result["content"])


async def test_plan_mode_changes_nothing_asks_nothing_then_act_reviews(harness, fake_openai):
    (harness.root / "app.py").write_text("print('hi')\n")
    fake_openai.script(
        oai.tool_calls(
            oai.call("read_file", {"path": "app.py"}, id="read"),
            oai.call("shell", {"command": "ls"}, id="ls"),
        ),
        oai.tool_calls(
            oai.call("write_file", {"path": "new.txt", "content": "x\n"}, id="write"),
            oai.call("edit_file", {"path": "app.py", "old": "hi", "new": "bye"}, id="edit"),
            oai.call("shell", {"command": "echo x > f"}, id="echo"),
            oai.call("shell", {"command": "rm app.py"}, id="rm"),
            oai.call("local__env", {"name": "HOME"}, id="mcp"),
        ),
        oai.tool_calls(
            oai.call("todo_write", {"todos": [{"content": "Write new.txt"}]}, id="todo")
        ),
        oai.text("1. Write new.txt\n\nFiles to touch:\n- new.txt"),
        # the act run: the same write, now through the review
        oai.tool_calls(oai.call("write_file", {"path": "new.txt", "content": "x\n"}, id="act")),
        oai.text("done"),
    )
    servers = {"local": {"command": sys.executable, "args": [STDIO_SCRIPT]}}
    await harness.start(
        settings={"model": "openai:fake-model", "mcpServers": servers}, env=fake_openai.env()
    )
    run = await harness.run("plan a new file", mode="plan")
    rid = run["runId"]
    done = await harness.finished(rid)
    assert done["status"] == "completed", done
    assert "approval.requested" not in harness.kinds(rid)
    results = _results(harness, rid)
    assert "print('hi')" in _text(results["read"])
    assert "app.py" in _text(results["ls"])
    assert "Write new.txt" in _text(results["todo"])  # the todo list is not a write
    for refused in ("write", "edit", "echo", "rm", "mcp"):
        assert _text(results[refused]).count("plan mode:") == 1, (refused, results[refused])
        assert "propose it in the plan instead" in _text(results[refused])
    assert not (harness.root / "new.txt").exists()
    assert not (harness.root / "f").exists()
    assert (harness.root / "app.py").read_text() == "print('hi')\n"
    posts = [r for r in fake_openai.requests if r.method == "POST"]
    system = posts[0].json["messages"][0]["content"]
    assert "# Plan mode" in system and "Files to touch:" in system

    act = await harness.run("Act on this plan", sessionId=run["sessionId"], mode="act")
    aid = act["runId"]
    req = await harness.wait_kind(aid, "approval.requested")
    assert req["toolCallId"] == "act"
    done = await harness.approve_all(aid)
    assert done["status"] == "completed", done
    assert (harness.root / "new.txt").read_text() == "x\n"
    act_request = [r for r in fake_openai.requests if r.method == "POST"][-1].json
    assert "# Plan mode" not in act_request["messages"][0]["content"]
    # the plan's steps are the act run's todo list (the todo tool runs in plan mode)
    everything = "\n".join(str(m.get("content") or "") for m in act_request["messages"])
    assert "[ ] Write new.txt" in everything


async def test_plan_mode_has_no_worktree(harness):
    await harness.start()
    try:
        await harness.run("plan", mode="plan", isolation="worktree")
    except Exception as exc:
        assert "Plan mode" in str(exc)
    else:
        raise AssertionError("a plan-mode worktree run was accepted")


async def test_a_plan_mode_runs_child_is_in_plan_mode_too(harness, fake_openai):
    from tests.server.test_subagents import _route

    fake_openai.responder = _route
    await harness.start(
        settings={"model": "openai:fake-model", "permissions": {"preset": "trusted"}},
        env=fake_openai.env(),
    )
    run = await harness.run("delegate the notes", mode="plan")
    parent = run["runId"]
    started = await harness.wait_kind(parent, "subagent.started", taskId="t1")
    child = started["childRunId"]
    done = await harness.finished(parent)
    assert done["status"] == "completed", done
    await harness.finished(child)
    for rid in (parent, child):
        assert "approval.requested" not in harness.kinds(rid)
    assert "plan mode:" in _text(_results(harness, child)["c1"])
    assert not (harness.root / "notes.txt").exists()


async def test_a_plan_mode_run_resumed_after_a_crash_is_still_in_plan_mode(tmp_path, fake_openai):
    """The mode is stored with the run: a new process that resumes it must not let it write
    (nor ask), though no ``lovia/run`` told this process the conversation is in plan mode."""
    from tests.server.harness import Harness

    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / "app.py").write_text("print('hi')\n")
    settings = {"model": "openai:fake-model"}
    fake_openai.script(
        oai.tool_calls(oai.call("read_file", {"path": "app.py"}, id="read")),
        oai.text("never sent").stall(),
    )
    first = Harness(root, tmp_path / "state")
    await first.start(settings=settings, env=fake_openai.env())
    run = await first.run("plan a new file", mode="plan")
    rid = run["runId"]
    await first.wait_kind(rid, "tool.result", toolCallId="read")
    for _ in range(500):  # the stalled second model call has been asked
        if len([r for r in fake_openai.requests if r.method == "POST"]) >= 2:
            break
        await asyncio.sleep(0.02)
    await first.kill()

    fake_openai.reset()
    fake_openai.script(
        oai.tool_calls(
            oai.call("write_file", {"path": "new.txt", "content": "x\n"}, id="write"),
            oai.call("shell", {"command": "echo x > f"}, id="echo"),
        ),
        oai.text("1. Write new.txt"),
    )
    second = Harness(root, tmp_path / "state")
    try:
        await second.start(settings=settings, env=fake_openai.env())
        resumed = await second.request("lovia/resume", {"runId": rid})
        assert resumed["status"] == "running"
        restarted = await second.wait_kind(rid, "run.started")
        done = await second.wait_for(
            lambda e: (
                e["runId"] == rid and e["kind"] == "run.finished" and e["seq"] > restarted["seq"]
            )
        )
        assert done["status"] == "completed", done
        assert "approval.requested" not in second.kinds(rid)
        results = _results(second, rid)
        for refused in ("write", "echo"):
            assert "plan mode:" in _text(results[refused]), results[refused]
        assert not (root / "new.txt").exists() and not (root / "f").exists()
        system = [r for r in fake_openai.requests if r.method == "POST"][0].json["messages"][0]
        assert "# Plan mode" in system["content"]
    finally:
        await second.stop()
