"""Subagents as supervised child runs: own runId and stream, approvals from the client, cancel,
steer, and a SIGKILL while two children run (the resumed parent resumes both, each report once).
"""

from __future__ import annotations

import asyncio

from tests.server.harness import AGENT_HEADER, Harness

# Providers answer from what the transcript holds, so a re-imported module (after a crash)
# continues where the conversation stands.
COMMON = (
    AGENT_HEADER
    + """
from lovia.plugins.subagents import Subagents
from lovia.transcript import InputEntry, ToolResultEntry


def _seen(entries):
    parts = []
    for e in entries:
        if isinstance(e, ToolResultEntry):
            parts.append(e.output)
        elif isinstance(e, InputEntry) and isinstance(e.content, str):
            parts.append(e.content)
    return "\\n".join(parts)


class ByResults(ScriptedProvider):
    "Turn N is the script entry for the number of tool results so far."

    def __init__(self, script):
        super().__init__([], record=False)
        self.by = dict(script)

    async def stream(self, entries, **kw):
        done = sum(isinstance(e, ToolResultEntry) for e in entries)
        self.script.clear()
        self.script.append(self.by[done])
        async for delta in super().stream(entries, **kw):
            yield delta


class Boss(ScriptedProvider):
    "Spawns, then waits until every report is in, then answers."

    def __init__(self, spawns, expect):
        super().__init__([], record=False)
        self.spawns = spawns
        self.expect = expect

    async def stream(self, entries, **kw):
        done = sum(isinstance(e, ToolResultEntry) for e in entries)
        seen = _seen(entries)
        self.script.clear()
        if done == 0:
            self.script.append(self.spawns)
        elif all(marker in seen for marker in self.expect):
            self.script.append(text("all reported"))
        else:
            self.script.append(call("wait_subagents", {"timeout_seconds": 120}, call_id=f"w{done}"))
        async for delta in super().stream(entries, **kw):
            yield delta


@tool
async def build(step: int) -> str:
    "Build; waits for a release file."
    with open(ROOT / "builds.log", "a") as fh:
        fh.write(f"start {step}\\n")
    await wait_for_file(f"release-{step}", timeout=120)
    return f"built {step}"


@tool(needs_approval=True)
async def deploy(env: str) -> str:
    "Deploy."
    with open(ROOT / "deploys.log", "a") as fh:
        fh.write(env + "\\n")
    return f"deployed {env}"
"""
)

APPROVE_AND_CANCEL = (
    COMMON
    + """
worker = Agent(
    name="worker",
    model=ByResults({0: call("deploy", {"env": "prod"}, call_id="d1"), 1: text("worker deployed")}),
    tools=[deploy],
)
slow = Agent(
    name="slow",
    model=ByResults({0: call("build", {"step": 1}, call_id="b1"), 1: text("slow built")}),
    tools=[build],
)
agent = Agent(
    name="boss",
    model=Boss(
        batch(
            ("spawn_subagent", {"agent": "worker", "prompt": "deploy prod"}, "p1"),
            ("spawn_subagent", {"agent": "slow", "prompt": "build step 1"}, "p2"),
        ),
        expect=["[subagent t1: done]", "t2 was cancelled"],
    ),
    plugins=[Subagents([worker, slow])],
)
"""
)

TWO_BUILDERS = (
    COMMON
    + """
alpha = Agent(
    name="alpha",
    model=ByResults({0: call("build", {"step": 1}, call_id="a1"), 1: text("alpha built 1")}),
    tools=[build],
)
beta = Agent(
    name="beta",
    model=ByResults({0: call("build", {"step": 2}, call_id="c1"), 1: text("beta built 2")}),
    tools=[build],
)
agent = Agent(
    name="boss",
    model=Boss(
        batch(
            ("spawn_subagent", {"agent": "alpha", "prompt": "build step 1"}, "p1"),
            ("spawn_subagent", {"agent": "beta", "prompt": "build step 2"}, "p2"),
        ),
        expect=["[subagent t1: done]", "[subagent t2: done]"],
    ),
    plugins=[Subagents([alpha, beta])],
)
"""
)


def _children(h: Harness, parent: str) -> dict[str, dict]:
    return {
        e["taskId"]: e
        for e in h.of_run(parent)
        if e["kind"] == "subagent.started" and not e["resumed"]
    }


async def _both_started(h: Harness, parent: str) -> dict[str, dict]:
    for task in ("t1", "t2"):
        await h.wait_kind(parent, "subagent.started", taskId=task)
    return _children(h, parent)


async def test_children_stream_with_parent_run_id_approve_steer_and_cancel(harness):
    spec = harness.write_agent(APPROVE_AND_CANCEL)
    await harness.start(settings={"agent": spec})
    run = await harness.run("deploy and build")
    parent = run["runId"]
    children = await _both_started(harness, parent)
    worker, slow = children["t1"]["childRunId"], children["t2"]["childRunId"]
    assert children["t1"]["name"] == "worker" and children["t1"]["toolCallId"] == "p1"
    assert children["t2"]["prompt"] == "build step 1" and worker != slow

    request = await harness.wait_kind(worker, "approval.requested", toolCallId="d1")
    assert request["parentRunId"] == parent
    assert request["subagent"] == {"runId": worker, "taskId": "t1", "name": "worker"}
    steer = await harness.request("lovia/steer", {"runId": worker, "message": "prod is fine"})
    await harness.request(
        "lovia/approve",
        {"runId": worker, "approvalId": request["approvalId"], "decision": "allow_once"},
    )
    await harness.wait_kind(slow, "tool.call", toolCallId="b1")
    cancelled = await harness.request("lovia/cancel", {"runId": slow})
    assert cancelled == {"runId": slow, "status": "cancelling"}

    done = await harness.finished(parent)
    assert done["status"] == "completed" and done["output"] == "all reported", done
    for child, status in ((worker, "completed"), (slow, "cancelled")):
        events = harness.of_run(child)
        assert all(e["parentRunId"] == parent for e in events)
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert events[0]["kind"] == "run.started" and events[-1]["kind"] == "run.finished"
        assert events[-1]["status"] == status
    assert not any("parentRunId" in e for e in harness.of_run(parent))
    steered = [e for e in harness.of_run(worker) if e["kind"] == "user.message"]
    assert [(e["source"], e["text"]) for e in steered][-1] == ("steer", "prod is fine")
    assert steered[-1]["messageId"] == steer["messageId"]
    finished = {e["taskId"]: e for e in harness.of_run(parent) if e["kind"] == "subagent.finished"}
    assert finished["t1"]["status"] == "completed" and finished["t1"]["summary"] == (
        "worker deployed"
    )
    assert finished["t2"]["status"] == "cancelled"
    assert (harness.root / "deploys.log").read_text() == "prod\n"

    listing = await harness.request("lovia/sessions", {})
    (item,) = listing["sessions"]  # child sessions are not listed on their own
    assert {c["taskId"]: c["status"] for c in item["children"]} == {
        "t1": "completed",
        "t2": "cancelled",
    }
    view = await harness.request("lovia/session", {"sessionId": run["sessionId"]})
    assert {c["runId"] for c in view["children"]} == {worker, slow}
    child_view = await harness.request(
        "lovia/session", {"sessionId": children["t1"]["childSessionId"]}
    )
    assert child_view["parentSessionId"] == run["sessionId"]
    assert child_view["title"] == "[t1] deploy prod"
    assert child_view["entries"][-1]["content"] == "worker deployed"


async def test_cancelling_the_parent_cancels_its_children(harness):
    spec = harness.write_agent(TWO_BUILDERS)
    await harness.start(settings={"agent": spec})
    run = await harness.run("build both")
    parent = run["runId"]
    children = await _both_started(harness, parent)
    status = await harness.request("lovia/status", {})
    live = {r["runId"]: r for r in status["liveRuns"]}
    assert {live[c["childRunId"]]["parentRunId"] for c in children.values()} == {parent}
    await harness.request("lovia/cancel", {"runId": parent})
    done = await harness.finished(parent)
    assert done["status"] == "cancelled"
    for child in children.values():
        end = await harness.finished(child["childRunId"])
        assert end["status"] == "cancelled"


async def test_sigkill_while_both_children_run_resume_delivers_each_report_once(tmp_path):
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    state = tmp_path / "state"
    first = Harness(root, state)
    spec = first.write_agent(TWO_BUILDERS)
    await first.start(settings={"agent": spec})
    run = await first.run("build both")
    parent, sid = run["runId"], run["sessionId"]
    children = await _both_started(first, parent)
    await first.wait_kind(parent, "tool.call", toolCallId="w2")
    for _ in range(500):
        log = root / "builds.log"
        if log.exists() and len(log.read_text().splitlines()) == 2:
            break
        await asyncio.sleep(0.02)
    await first.kill()

    second = Harness(root, state)
    try:
        await second.start(settings={"agent": spec})
        listing = await second.request("lovia/sessions", {})
        (item,) = listing["sessions"]
        assert item["sessionId"] == sid and item["resumable"] is True
        assert {c["status"] for c in item["children"]} == {"interrupted"}
        child_run = children["t1"]["childRunId"]
        try:
            await second.request("lovia/resume", {"runId": child_run})
            raise AssertionError("a child run resumed on its own")
        except Exception as exc:
            assert getattr(exc, "code", None) == -32014
        await second.request("lovia/resume", {"runId": parent})
        for task in ("t1", "t2"):
            again = await second.wait_kind(parent, "subagent.started", taskId=task, resumed=True)
            assert again["childRunId"] == children[task]["childRunId"]
        (root / "release-1").write_text("go")
        (root / "release-2").write_text("go")
        done = await second.wait_kind(parent, "run.finished", status="completed")
        assert done["output"] == "all reported"
        for child in children.values():
            end = await second.wait_kind(child["childRunId"], "run.finished", status="completed")
            assert end["parentRunId"] == parent
        view = await second.request("lovia/session", {"sessionId": sid})
        texts = [m.get("content") or "" for m in view["entries"]]
        joined = "\n".join(t for t in texts if isinstance(t, str))
        assert joined.count("[subagent t1: done]") == 1, joined
        assert joined.count("[subagent t2: done]") == 1, joined
        assert "alpha built 1" in joined and "beta built 2" in joined
        builds = sorted((root / "builds.log").read_text().splitlines())
        assert builds == ["start 1", "start 1", "start 2", "start 2"]  # each ran again once
    finally:
        if second.client is not None:
            await second.stop()


def _route(request):
    """The fake model for the built-in agent: parent and child told apart by their prompt."""
    from tests.support import fake_openai as oai

    messages = request.messages
    system = messages[0].get("content") if messages else ""
    user = next((m.get("content") for m in messages if m.get("role") == "user"), "")
    tools_done = sum(1 for m in messages if m.get("role") == "tool")
    everything = "\n".join(str(m.get("content") or "") for m in messages)
    if user == "Write notes.txt saying hi.":  # the child
        if tools_done == 0:
            return oai.tool_calls(
                oai.call("write_file", {"path": "notes.txt", "content": "hi\n"}, id="c1")
            )
        return oai.text("notes written")
    assert "Background subagents" in str(system)
    if tools_done == 0:
        return oai.tool_calls(
            oai.call("spawn_subagent", {"prompt": "Write notes.txt saying hi."}, id="s1")
        )
    if "[subagent t1: done]" not in everything:
        return oai.tool_calls(oai.call("wait_subagents", {}, id=f"w{tools_done}"))
    return oai.text("the child wrote the notes")


async def test_builtin_agent_spawns_a_child_whose_approval_reaches_the_client(harness, fake_openai):
    fake_openai.responder = _route
    await harness.start(
        settings={"model": "openai:fake-model", "permissions": {"write": "ask"}},
        env=fake_openai.env(),
    )
    run = await harness.run("delegate the notes")
    parent = run["runId"]
    started = await harness.wait_kind(parent, "subagent.started", taskId="t1")
    assert started["name"] == "lovia-sub" and started["toolCallId"] == "s1"
    child = started["childRunId"]
    request = await harness.wait_kind(child, "approval.requested", toolCallId="c1")
    assert request["subagent"]["name"] == "lovia-sub" and request["action"] == "file.create"
    await harness.request(
        "lovia/approve",
        {"runId": child, "approvalId": request["approvalId"], "decision": "allow_once"},
    )
    done = await harness.finished(parent)
    assert done["status"] == "completed" and done["output"] == "the child wrote the notes"
    assert (harness.root / "notes.txt").read_text() == "hi\n"
    first = next(r for r in fake_openai.requests if r.method == "POST").json
    assert "approval" in first["messages"][0]["content"].lower()


async def test_subagents_setting_off_has_no_spawn_tool(harness, fake_openai):
    fake_openai.script(oai_text("ok"), oai_text("ok"))
    await harness.start(
        settings={"model": "openai:fake-model", "subagents": {"enabled": False}},
        env=fake_openai.env(),
    )
    done = await harness.finished((await harness.run("hi"))["runId"])
    assert done["status"] == "completed"
    first = next(r for r in fake_openai.requests if r.method == "POST").json
    assert "spawn_subagent" not in {t["function"]["name"] for t in first["tools"]}


def oai_text(value: str):
    from tests.support import fake_openai as oai

    return oai.text(value)


def test_subagent_limits_default_on_only_in_trusted_workspaces():
    from lovia_server.protocol.settings import parse_settings

    settings, problems = parse_settings({})
    limits = settings.subagents
    assert problems == [] and limits.active(True) and not limits.active(False)
    assert (limits.maxConcurrent, limits.maxTurns) == (3, 30)
    assert limits.maxTotalTokens == 400_000 and limits.maxSeconds == 900
    forced, _ = parse_settings({"subagents": {"enabled": True, "maxConcurrent": 2}})
    assert forced.subagents.active(False) and forced.subagents.maxConcurrent == 2
    _, problems = parse_settings({"subagents": {"maxConcurrent": 0}})
    assert problems and problems[0].startswith("lovia.subagents.maxConcurrent")


async def test_the_demo_agent_spawns_a_helper_whose_approval_is_answered(harness):
    (harness.root / "README.md").write_text("# Demo\n")
    await harness.start(settings={"agent": "lovia:demo", "permissions": {"write": "ask"}})
    run = await harness.run("show me a subagent")
    started = await harness.wait_kind(run["runId"], "subagent.started", taskId="t1")
    assert started["name"] == "demo-helper"
    child = started["childRunId"]
    request = await harness.wait_kind(child, "approval.requested")
    assert request["subagent"]["name"] == "demo-helper" and request["action"] == "file.create"
    await harness.request(
        "lovia/approve",
        {"runId": child, "approvalId": request["approvalId"], "decision": "allow_once"},
    )
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    assert "reported: I created NOTES.md." in done["output"]
    assert (harness.root / "NOTES.md").read_text().startswith("# Notes")

    plain = await harness.run("hello", sessionId=run["sessionId"])  # the usual script
    edit = await harness.wait_kind(plain["runId"], "approval.requested")
    assert edit["toolCallId"] == "demo_edit" and "subagent" not in edit
