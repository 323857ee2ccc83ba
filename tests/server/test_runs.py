"""Runs end to end through the real server: events, tools, approvals, steering, cancel, replay."""

import asyncio

import pytest

from tests.server.harness import AGENT_HEADER

TEXT_AGENT = (
    AGENT_HEADER
    + """
agent = Agent(name="talker", model=ScriptedProvider([text("Hello **there**!", reasoning="hmm")]))
"""
)

TOOL_AGENT = (
    AGENT_HEADER
    + """
@tool
async def add(a: int, b: int) -> int:
    "Add two numbers."
    return a + b

agent = Agent(
    name="calc",
    model=ScriptedProvider([batch(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})), text("3 and 7")]),
    tools=[add],
)
"""
)

APPROVAL_AGENT = (
    AGENT_HEADER
    + """
@tool(needs_approval=True)
async def deploy(env: str) -> str:
    "Deploy."
    (ROOT / f"deployed-{env}").write_text("yes")
    return f"deployed to {env}"

agent = Agent(
    name="deployer",
    model=ScriptedProvider([
        call("deploy", {"env": "prod"}, call_id="d1"),
        call("deploy", {"env": "prod"}, call_id="d2"),
        text("done"),
    ]),
    tools=[deploy],
)
"""
)

SLOW_AGENT = (
    AGENT_HEADER
    + """
@tool
async def work(step: int) -> str:
    "Do one step; waits for a release file."
    (ROOT / f"started-{step}").write_text("1")
    await wait_for_file(f"release-{step}")
    return f"step {step} done"

agent = Agent(
    name="worker",
    model=ScriptedProvider([
        call("work", {"step": 1}, call_id="w1"),
        call("work", {"step": 2}, call_id="w2"),
        text("all done"),
    ]),
    tools=[work],
)
"""
)


async def start(harness, agent_src, **settings):
    spec = harness.write_agent(agent_src)
    await harness.start(settings={"agent": spec, **settings})


def assert_well_formed(events):
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs
    assert events[-1]["kind"] == "run.finished"
    assert [e["kind"] for e in events].count("run.finished") == 1
    calls = [e["toolCallId"] for e in events if e["kind"] == "tool.call"]
    results = [e["toolCallId"] for e in events if e["kind"] == "tool.result"]
    assert sorted(calls) == sorted(results) and len(set(calls)) == len(calls)
    assert all(isinstance(e["ts"], int) for e in events)


async def test_text_run_event_order_and_seq(harness):
    await start(harness, TEXT_AGENT)
    run = await harness.run("say hi")
    assert run["status"] == "running" and run["sessionId"] and run["runId"]
    done = await harness.finished(run["runId"])
    events = harness.of_run(run["runId"])
    assert_well_formed(events)
    assert events[0]["seq"] == 1
    kinds = [e["kind"] for e in events]
    assert kinds[:2] == ["run.started", "user.message"]
    assert (
        kinds.index("reasoning.delta")
        < kinds.index("message.delta")
        < kinds.index("message.completed")
        < kinds.index("usage.updated")
    )
    started = events[0]
    assert started["prompt"] == "say hi" and started["resumed"] is False
    assert started["agent"] == "agent.py:agent" and started["cwd"] == str(harness.root)
    streamed = "".join(e["text"] for e in events if e["kind"] == "message.delta")
    completed = next(e for e in events if e["kind"] == "message.completed")
    assert streamed == completed["text"] == "Hello **there**!"
    assert len([e for e in events if e["kind"] == "message.delta"]) < len("Hello **there**!")
    assert done["status"] == "completed" and done["output"] == "Hello **there**!"
    assert done["resumable"] is False and done["usage"]["inputTokens"] == 1
    for e in events:
        assert e["sessionId"] == run["sessionId"]


async def test_tool_calls_pair_with_results(harness):
    await start(harness, TOOL_AGENT)
    run = await harness.run("add things")
    done = await harness.finished(run["runId"])
    events = harness.of_run(run["runId"])
    assert_well_formed(events)
    calls = [e for e in events if e["kind"] == "tool.call"]
    assert [c["name"] for c in calls] == ["add", "add"]
    assert calls[0]["toolKind"] == "other" and calls[0]["input"] == {"a": 1, "b": 2}
    results = {e["toolCallId"]: e for e in events if e["kind"] == "tool.result"}
    texts = sorted(r["content"][0]["text"] for r in results.values())
    assert texts == ["3", "7"] and all(r["status"] == "completed" for r in results.values())
    assert done["output"] == "3 and 7"


async def test_approval_allow_once_then_allow_always_is_remembered(harness):
    await start(harness, APPROVAL_AGENT)
    run = await harness.run("deploy")
    rid = run["runId"]
    req = await harness.wait_kind(rid, "approval.requested")
    assert req["toolCallId"] == "d1" and req["action"] == "other"
    assert [o["decision"] for o in req["options"]] == [
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    ]
    kinds = harness.kinds(rid)
    assert kinds.index("tool.call") < kinds.index("approval.requested")
    reply = await harness.request(
        "lovia/approve", {"runId": rid, "approvalId": req["approvalId"], "decision": "allow_always"}
    )
    assert reply == {"approvalId": req["approvalId"], "outcome": "allowed"}
    done = await harness.finished(rid)
    events = harness.of_run(rid)
    resolved = [e for e in events if e["kind"] == "approval.resolved"]
    assert [(r["outcome"], r["by"]) for r in resolved] == [
        ("allowed", "user"),
        ("allowed", "policy"),
    ]
    assert done["status"] == "completed"
    status = await harness.request("lovia/status", {})
    assert status["sessionRules"][0]["decision"] == "allow"
    with pytest.raises(Exception) as info:
        await harness.request(
            "lovia/approve",
            {"runId": rid, "approvalId": req["approvalId"], "decision": "allow_once"},
        )
    assert info.value.code == -32011


async def test_approval_reject_with_message_tells_model(harness):
    await start(harness, APPROVAL_AGENT)
    run = await harness.run("deploy")
    rid = run["runId"]
    req = await harness.wait_kind(rid, "approval.requested")
    await harness.request(
        "lovia/approve",
        {
            "runId": rid,
            "approvalId": req["approvalId"],
            "decision": "reject_once",
            "message": "deploy to staging first",
        },
    )
    result = await harness.wait_kind(rid, "tool.result", toolCallId="d1")
    assert result["status"] == "declined" and result["isError"] is True
    assert "deploy to staging first" in result["content"][0]["text"]
    req2 = await harness.wait_kind(rid, "approval.requested", toolCallId="d2")
    await harness.request(
        "lovia/approve",
        {"runId": rid, "approvalId": req2["approvalId"], "decision": "reject_always"},
    )
    await harness.finished(rid)
    assert not (harness.root / "deployed-prod").exists()
    with pytest.raises(Exception) as info:
        await harness.request(
            "lovia/approve", {"runId": "r_unknown", "approvalId": "x", "decision": "allow_once"}
        )
    assert info.value.code == -32010


async def test_approve_unknown_approval_id(harness):
    await start(harness, APPROVAL_AGENT)
    run = await harness.run("deploy")
    await harness.wait_kind(run["runId"], "approval.requested")
    with pytest.raises(Exception) as info:
        await harness.request(
            "lovia/approve",
            {"runId": run["runId"], "approvalId": "ap_nope", "decision": "allow_once"},
        )
    assert info.value.code == -32013 and info.value.data["approvalId"] == "ap_nope"
    await harness.request("lovia/cancel", {"runId": run["runId"]})
    await harness.finished(run["runId"])


async def test_cancel_while_waiting_for_approval(harness):
    await start(harness, APPROVAL_AGENT)
    run = await harness.run("deploy")
    rid = run["runId"]
    req = await harness.wait_kind(rid, "approval.requested")
    reply = await harness.request("lovia/cancel", {"runId": rid})
    assert reply == {"runId": rid, "status": "cancelling"}
    done = await harness.finished(rid)
    assert done["status"] == "cancelled" and "error" not in done
    resolved = await harness.wait_kind(rid, "approval.resolved", approvalId=req["approvalId"])
    assert resolved["outcome"] == "cancelled"
    assert_well_formed(harness.of_run(rid))
    with pytest.raises(Exception) as info:
        await harness.request("lovia/cancel", {"runId": rid})
    assert info.value.code == -32011


async def test_approval_timeout_is_a_rejection(harness):
    await start(harness, APPROVAL_AGENT, approvalTimeoutSeconds=0.3)
    run = await harness.run("deploy")
    rid = run["runId"]
    resolved = await harness.wait_kind(rid, "approval.resolved")
    assert resolved["outcome"] == "timed_out" and resolved["by"] == "policy"
    done = await harness.finished(rid)
    assert done["status"] == "completed"


async def test_show_message_request_approvals_for_generic_clients(harness):
    spec = harness.write_agent(APPROVAL_AGENT)
    harness.message_choice = lambda params: params.actions[0].title
    await harness.start(settings={"agent": spec}, init_options={"approvals": "showMessageRequest"})
    run = await harness.run("deploy")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed"
    assert len(harness.message_requests) == 2
    resolved = [e for e in harness.of_run(run["runId"]) if e["kind"] == "approval.resolved"]
    assert {r["by"] for r in resolved} == {"editor"}


async def test_steer_unsteer_and_cancel_keep_completed_turns(harness):
    await start(harness, SLOW_AGENT)
    run = await harness.run("work")
    rid = run["runId"]
    await harness.wait_kind(rid, "tool.call", toolCallId="w1")
    steer = await harness.request("lovia/steer", {"runId": rid, "message": "also tidy up"})
    assert steer["accepted"] is True and steer["runId"] == rid
    gone = await harness.request("lovia/steer", {"runId": rid, "message": "never mind this"})
    withdrawn = await harness.request(
        "lovia/unsteer", {"runId": rid, "messageId": gone["messageId"]}
    )
    assert withdrawn == {"withdrawn": True}
    (harness.root / "release-1").write_text("go")
    echo = await harness.wait_kind(rid, "user.message", source="steer")
    assert echo["messageId"] == steer["messageId"] and echo["text"] == "also tidy up"
    late = await harness.request("lovia/unsteer", {"runId": rid, "messageId": steer["messageId"]})
    assert late == {"withdrawn": False}
    await harness.wait_kind(rid, "tool.call", toolCallId="w2")
    await harness.request("lovia/cancel", {"runId": rid})
    (harness.root / "release-2").write_text("go")
    done = await harness.finished(rid)
    assert done["status"] == "cancelled"
    assert_well_formed(harness.of_run(rid))
    view = await harness.request("lovia/session", {"sessionId": run["sessionId"]})
    roles = [m["role"] for m in view["entries"]]
    assert roles[:4] == ["user", "assistant", "tool", "user"]
    assert view["runs"][0]["status"] == "cancelled"
    assert "also tidy up" in [m.get("content") for m in view["entries"]]


async def test_a_command_is_never_a_steer(harness):
    """``/help`` typed in a live run's steer box never reaches the model: a command is a prompt
    of its own, refused as a steer with a hint; a path, or a line begun with a space, steers."""
    await start(harness, SLOW_AGENT)
    run = await harness.run("work")
    rid = run["runId"]
    await harness.wait_kind(rid, "tool.call", toolCallId="w1")
    for line in ("/help", "/compact keep the plan", "/fix-issue 12"):
        with pytest.raises(Exception) as info:
            await harness.request("lovia/steer", {"runId": rid, "message": line})
        assert info.value.code == -32602
        assert info.value.data["field"] == "message"
        assert "when this run has ended" in info.value.data["hint"]
    path = await harness.request("lovia/steer", {"runId": rid, "message": "/usr/bin/env is old"})
    spaced = await harness.request("lovia/steer", {"runId": rid, "message": " /help is a word"})
    assert path["accepted"] and spaced["accepted"]
    await harness.request("lovia/cancel", {"runId": rid})
    (harness.root / "release-1").write_text("go")
    assert (await harness.finished(rid))["status"] == "cancelled"


NOTE_AGENT = (
    AGENT_HEADER
    + """
from lovia import RunContext

@tool
async def work(ctx: RunContext) -> str:
    "Queue a note for the next turn, then wait for a release file."
    ctx.mailbox.push("a note from the tool")
    await wait_for_file("release")
    return "done"

agent = Agent(
    name="noter",
    model=ScriptedProvider([call("work", {}, call_id="w1"), text("ok")]),
    tools=[work],
)
"""
)


async def test_each_delivered_steer_keeps_its_own_id(harness):
    """Two steers with the same text, behind a message the run queued itself (as a subagent's
    report is): each echo carries the id its ``lovia/steer`` returned, in order, and the other
    message gets an id of its own. Matching by text lost both ids here."""
    await start(harness, NOTE_AGENT)
    run = await harness.run("work")
    rid = run["runId"]
    await harness.wait_kind(rid, "tool.call", toolCallId="w1")
    first = await harness.request("lovia/steer", {"runId": rid, "message": "same words"})
    second = await harness.request("lovia/steer", {"runId": rid, "message": "same words"})
    assert first["messageId"] != second["messageId"]
    (harness.root / "release").write_text("go")
    done = await harness.finished(rid)
    assert done["status"] == "completed"
    echoes = [
        e for e in harness.of_run(rid) if e["kind"] == "user.message" and e["source"] == "steer"
    ]
    assert [(e["text"], e["messageId"]) for e in echoes[1:]] == [
        ("same words", first["messageId"]),
        ("same words", second["messageId"]),
    ]
    assert echoes[0]["text"] == "a note from the tool"
    assert echoes[0]["messageId"] not in (first["messageId"], second["messageId"])


async def test_replay_after_reconnect_and_run_conflicts(harness):
    await start(harness, SLOW_AGENT)
    run = await harness.run("work")
    rid, sid = run["runId"], run["sessionId"]
    await harness.wait_kind(rid, "tool.call", toolCallId="w1")
    with pytest.raises(Exception) as info:
        await harness.run("again", sessionId=sid)
    assert info.value.code == -32012 and info.value.data["activeRunId"] == rid
    with pytest.raises(Exception) as info:
        await harness.request("lovia/deleteSession", {"sessionId": sid})
    assert info.value.code == -32012
    partial = await harness.request("lovia/replay", {"runId": rid, "afterSeq": 2})
    assert partial["status"] == "running" and partial["events"][0]["seq"] == 3
    (harness.root / "release-1").write_text("go")
    (harness.root / "release-2").write_text("go")
    await harness.finished(rid)
    full = await harness.request("lovia/replay", {"runId": rid})
    assert [e["seq"] for e in full["events"]] == list(range(1, full["lastSeq"] + 1))
    live = [e for e in harness.of_run(rid)]
    assert full["events"] == live
    assert full["status"] == "completed"
    with pytest.raises(Exception) as info:
        await harness.request("lovia/replay", {"runId": "r_missing"})
    assert info.value.code == -32010


async def test_sessions_session_and_delete(harness):
    await start(harness, TEXT_AGENT)
    run = await harness.run("first question\nmore lines")
    await harness.finished(run["runId"])
    second = await harness.run("follow up", sessionId=run["sessionId"])
    await harness.finished(second["runId"])
    listing = await harness.request("lovia/sessions", {})
    (item,) = listing["sessions"]
    assert item["sessionId"] == run["sessionId"] and item["title"] == "first question"
    assert item["lastRunId"] == second["runId"] and item["lastRunStatus"] == "completed"
    assert item["resumable"] is False
    assert (await harness.request("lovia/sessions", {"query": "nomatch"}))["sessions"] == []
    view = await harness.request("lovia/session", {"sessionId": run["sessionId"]})
    assert [m["role"] for m in view["entries"]] == ["user", "assistant", "user", "assistant"]
    assert len(view["runs"]) == 2
    with pytest.raises(Exception) as info:
        await harness.run("x", sessionId="s_unknown")
    assert info.value.code == -32010
    deleted = await harness.request("lovia/deleteSession", {"sessionId": run["sessionId"]})
    assert deleted == {"deleted": True}
    assert (await harness.request("lovia/sessions", {}))["sessions"] == []
    again = await harness.request("lovia/deleteSession", {"sessionId": run["sessionId"]})
    assert again == {"deleted": False}
    with pytest.raises(Exception) as info:
        await harness.request("lovia/session", {"sessionId": run["sessionId"]})
    assert info.value.code == -32010


async def test_errors_for_unknown_and_finished_runs(harness):
    await start(harness, TEXT_AGENT)
    for method, params in [
        ("lovia/steer", {"runId": "r_x", "message": "hi"}),
        ("lovia/cancel", {"runId": "r_x"}),
        ("lovia/resume", {"runId": "r_x"}),
    ]:
        with pytest.raises(Exception) as info:
            await harness.request(method, params)
        assert info.value.code == -32010, method
    run = await harness.run("hi")
    await harness.finished(run["runId"])
    with pytest.raises(Exception) as info:
        await harness.request("lovia/steer", {"runId": run["runId"], "message": "late"})
    assert info.value.code == -32011
    with pytest.raises(Exception) as info:
        await harness.request("lovia/resume", {"runId": run["runId"]})
    assert info.value.code == -32014


async def test_cwd_and_context_outside_workspace(harness, tmp_path):
    await start(harness, TEXT_AGENT)
    with pytest.raises(Exception) as info:
        await harness.run("x", cwd=str(tmp_path))
    assert info.value.code == -32015 and info.value.data["field"] == "cwd"
    outside = tmp_path / "secret.txt"
    outside.write_text("s")
    with pytest.raises(Exception) as info:
        await harness.run("x", context=[{"uri": outside.as_uri()}])
    assert info.value.code == -32015 and info.value.data["field"] == "context.0.uri"


async def test_no_model_configured(harness, monkeypatch):
    await harness.start(env={"LOVIA_MODEL": ""})
    with pytest.raises(Exception) as info:
        await harness.run("hello")
    assert info.value.code == -32016
    assert "lovia.model" in info.value.data["hint"] and "LOVIA_MODEL" in info.value.data["hint"]


async def test_bad_agent_file(harness):
    (harness.root / "broken.py").write_text("raise RuntimeError('boom at import')\n")
    await harness.start(settings={"agent": "broken.py:agent"})
    with pytest.raises(Exception) as info:
        await harness.run("hi")
    assert info.value.code == -32602 and info.value.data["field"] == "agent"
    assert "boom at import" in str(info.value)
    status = await harness.request("lovia/status", {})
    assert status["liveRuns"] == []


async def test_failing_run_reports_error_and_keeps_server(harness):
    await start(harness, AGENT_HEADER + "agent = Agent(name='empty', model=ScriptedProvider([]))\n")
    run = await harness.run("hi")
    done = await harness.finished(run["runId"])
    assert done["status"] == "failed" and done["error"]["type"] == "AssertionError"
    assert "ran out of canned responses" in done["error"]["message"]
    assert (await harness.request("lovia/status", {}))["liveRuns"] == []


async def test_progress_begin_report_end(harness):
    await start(harness, TOOL_AGENT)
    run = await harness.run("add things please")
    await harness.finished(run["runId"])
    token = f"lovia/{run['runId']}"
    for _ in range(100):
        reports = harness.client.progress_reports.get(token, [])
        if reports and reports[-1].kind == "end":
            break
        await asyncio.sleep(0.05)
    kinds = [r.kind for r in reports]
    assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
    assert reports[0].cancellable is True and reports[0].message.startswith("add things")
    assert reports[-1].message == "completed"


async def test_cancel_via_progress(harness):
    from lsprotocol import types as lsp

    await start(harness, SLOW_AGENT)
    run = await harness.run("work")
    rid = run["runId"]
    token = f"lovia/{rid}"
    await harness.wait_kind(rid, "tool.call", toolCallId="w1")
    for _ in range(100):
        if harness.client.progress_reports.get(token):
            break
        await asyncio.sleep(0.05)
    harness.client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token))
    (harness.root / "release-1").write_text("go")
    done = await harness.finished(rid)
    assert done["status"] == "cancelled"


LATE_STEER_AGENT = (
    AGENT_HEADER
    + """
from lovia.messages import Usage
from lovia.transcript import FinishDelta, TextDelta, UsageDelta


class Slow:
    name = "slow"
    model = "slow"
    supports_json_schema = False

    def __init__(self):
        self.calls = 0

    async def stream(self, entries, **kw):
        self.calls += 1
        if self.calls == 1:
            await wait_for_file("release")
            yield TextDelta("first answer")
        else:
            last = entries[-1].content
            yield TextDelta(f"you also said: {last}")
        yield UsageDelta(Usage(2, 3))
        yield FinishDelta("stop")


agent = Agent(name="late", model=Slow())
"""
)


async def test_steer_after_the_final_turn_started_is_not_lost(harness):
    await start(harness, LATE_STEER_AGENT)
    run = await harness.run("answer slowly")
    rid = run["runId"]
    await harness.wait_kind(rid, "run.started")
    await asyncio.sleep(0.3)  # the only turn has started and drained the empty mailbox
    steer = await harness.request("lovia/steer", {"runId": rid, "message": "in French please"})
    (harness.root / "release").write_text("go")
    done = await harness.finished(rid)
    assert done["status"] == "completed"
    assert done["output"] == "you also said: in French please"
    assert done["usage"]["inputTokens"] == 4 and done["usage"]["outputTokens"] == 6
    events = harness.of_run(rid)
    assert_well_formed(events)
    echo = next(e for e in events if e["kind"] == "user.message" and e["source"] == "steer")
    assert echo["messageId"] == steer["messageId"]
    texts = [e["text"] for e in events if e["kind"] == "message.completed"]
    assert texts == ["first answer", "you also said: in French please"]
    view = await harness.request("lovia/session", {"sessionId": run["sessionId"]})
    assert [m["role"] for m in view["entries"]] == ["user", "assistant", "user", "assistant"]
