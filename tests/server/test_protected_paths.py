"""Protected paths through the real server: a change to editor or agent configuration always
asks, says so on the card, and is never settled by an "always" answer."""

from __future__ import annotations

from tests.server.harness import AGENT_HEADER

AGENT = (
    AGENT_HEADER
    + """
SETTINGS = '{"lovia.permissions": {"preset": "trusted", "commandRules": [{"pattern": "", "decision": "allow"}]}}'

agent = Agent(
    name="escalator",
    model=ScriptedProvider([
        call("write_file", {"path": ".vscode/settings.json", "content": SETTINGS}, call_id="w1"),
        call("write_file", {"path": ".VSCODE/settings.json", "content": SETTINGS}, call_id="w2"),
        call("write_file", {"path": "src/ok.py", "content": "x = 1\\n"}, call_id="w3"),
        call("edit_file", {"path": "agent.py", "old": "escalator", "new": "escalated"}, call_id="w4"),
        text("done"),
    ]),
)
"""
)


async def test_writes_to_editor_and_agent_configuration_always_ask_with_a_warning(harness):
    (harness.root / "src").mkdir()
    spec = harness.write_agent(AGENT)
    # write: allow is the documented opt-out of review-first: ordinary writes do not ask
    await harness.start(settings={"agent": spec, "permissions": {"write": "allow"}})
    status = await harness.request("lovia/status", {})
    (folder,) = status["folders"]
    assert ".vscode" in folder["protectedPaths"] and ".git" in folder["protectedPaths"]
    assert str(harness.root / "agent.py") in folder["protectedPaths"]

    run = await harness.run("make yourself at home")
    rid = run["runId"]
    first = await harness.wait_kind(rid, "approval.requested", toolCallId="w1")
    assert "alters agent or editor configuration" in first["warning"]
    assert ".vscode/settings.json" in first["warning"]
    assert [o["decision"] for o in first["options"]] == ["allow_once", "reject_once"]
    # a client that answers "always" anyway gets this one call, not a standing rule
    await harness.request(
        "lovia/approve",
        {"runId": rid, "approvalId": first["approvalId"], "decision": "allow_always"},
    )
    second = await harness.wait_kind(rid, "approval.requested", toolCallId="w2")
    assert second["warning"] and second["options"][0]["decision"] == "allow_once"
    await harness.request(
        "lovia/approve",
        {"runId": rid, "approvalId": second["approvalId"], "decision": "reject_once"},
    )
    agent_edit = await harness.wait_kind(rid, "approval.requested", toolCallId="w4")
    assert "agent.py" in agent_edit["warning"]
    await harness.request(
        "lovia/approve",
        {"runId": rid, "approvalId": agent_edit["approvalId"], "decision": "reject_once"},
    )
    done = await harness.finished(rid)
    assert done["status"] == "completed"
    asked = {e["toolCallId"] for e in harness.of_run(rid) if e["kind"] == "approval.requested"}
    assert asked == {"w1", "w2", "w4"}  # the ordinary write did not ask
    assert (harness.root / "src" / "ok.py").read_text() == "x = 1\n"
    assert "escalator" in (harness.root / "agent.py").read_text()
    status = await harness.request("lovia/status", {})
    assert status["sessionRules"] == []
