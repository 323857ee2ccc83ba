"""Hunk-level review: ``lovia/approve`` with ``edits`` writes the text the user approved
(some hunks, or an edited proposal) instead of the tool's, and the model is told exactly what
was applied. The real server process, a scripted agent on the editor's workspace."""

from __future__ import annotations

import pytest

from tests.server.harness import AGENT_HEADER

OLD = "".join(f"line {i}\n" for i in range(1, 21))
NEW = OLD.replace("line 2\n", "line two\n").replace("line 19\n", "line nineteen\n")
# The user keeps the first hunk and rejects the second.
APPLIED = OLD.replace("line 2\n", "line two\n")

WRITER = (
    AGENT_HEADER
    + f"""
agent = Agent(
    name="writer",
    model=ScriptedProvider([
        call("write_file", {{"path": "notes.txt", "content": {NEW!r}}}, call_id="w1"),
        text("done"),
    ]),
)
"""
)


async def _pending(harness):
    (harness.root / "notes.txt").write_text(OLD)
    spec = harness.write_agent(WRITER)
    await harness.start(settings={"agent": spec, "permissions": {"write": "ask"}})
    run = await harness.run("rewrite the notes")
    req = await harness.wait_kind(run["runId"], "approval.requested", toolCallId="w1")
    return run, req


async def test_approved_hunks_are_written_and_the_model_is_told_what_was_applied(harness):
    run, req = await _pending(harness)
    rid = run["runId"]
    path = req["diff"][0]["path"]
    result = await harness.request(
        "lovia/approve",
        {
            "runId": rid,
            "approvalId": req["approvalId"],
            "decision": "allow_once",
            "edits": [{"path": path, "newText": APPLIED}],
        },
    )
    assert result["outcome"] == "allowed"
    done = await harness.finished(rid)
    assert done["status"] == "completed"
    assert (harness.root / "notes.txt").read_text() == APPLIED
    events = harness.of_run(rid)
    resolved = next(e for e in events if e["kind"] == "approval.resolved")
    assert resolved["edited"] is True and resolved["outcome"] == "allowed"
    tool = next(e for e in events if e["kind"] == "tool.result" and e["toolCallId"] == "w1")
    assert tool["status"] == "completed"
    assert [c["newText"] for c in tool["content"] if c["type"] == "diff"] == [APPLIED]
    # What the model saw for the call: the exact change applied and the part left out.
    note = tool["content"][0]["text"]
    assert "approved a different version" in note
    assert "-line 2\n+line two\n" in note
    applied_part, _, missing_part = note.partition("NOT applied")
    assert "line nineteen" not in applied_part
    assert "-line 19\n+line nineteen\n" in missing_part
    view = await harness.request("lovia/session", {"sessionId": run["sessionId"]})
    tool_entry = next(e for e in view["entries"] if e["role"] == "tool")
    assert tool_entry["content"] == note


async def test_edits_equal_to_the_proposal_are_a_plain_accept(harness):
    run, req = await _pending(harness)
    rid = run["runId"]
    await harness.request(
        "lovia/approve",
        {
            "runId": rid,
            "approvalId": req["approvalId"],
            "decision": "allow_once",
            "edits": [{"path": req["diff"][0]["path"], "newText": NEW}],
        },
    )
    await harness.finished(rid)
    assert (harness.root / "notes.txt").read_text() == NEW
    resolved = next(e for e in harness.of_run(rid) if e["kind"] == "approval.resolved")
    assert "edited" not in resolved


@pytest.mark.parametrize(
    ("decision", "edit_path", "field"),
    [("reject_once", None, "edits"), ("allow_once", "/elsewhere/other.txt", "edits.0.path")],
)
async def test_bad_edits_are_refused_and_the_approval_stays_open(
    harness, decision, edit_path, field
):
    run, req = await _pending(harness)
    rid = run["runId"]
    path = edit_path or req["diff"][0]["path"]
    with pytest.raises(Exception) as info:
        await harness.request(
            "lovia/approve",
            {
                "runId": rid,
                "approvalId": req["approvalId"],
                "decision": decision,
                "edits": [{"path": path, "newText": APPLIED}],
            },
        )
    assert info.value.code == -32602 and info.value.data["field"] == field
    # Still pending: a plain answer works.
    await harness.request(
        "lovia/approve", {"runId": rid, "approvalId": req["approvalId"], "decision": "allow_once"}
    )
    assert (await harness.finished(rid))["status"] == "completed"
    assert (harness.root / "notes.txt").read_text() == NEW


def _writer(path: str, content: str, call_id: str) -> str:
    return (
        AGENT_HEADER
        + f"""
agent = Agent(
    name="writer",
    model=ScriptedProvider([
        call("write_file", {{"path": {path!r}, "content": {content!r}}}, call_id={call_id!r}),
        text("done"),
    ]),
)
"""
    )


async def test_two_pending_approvals_resolve_independently_each_with_its_own_text(harness):
    """Two runs wait on an edit approval at once; each answer settles only its own call and
    the reviewed text of one never reaches the other (it goes with the answer, not a table)."""
    (harness.root / "a.txt").write_text(OLD)
    (harness.root / "b.txt").write_text(OLD)
    spec_a = harness.write_agent(_writer("a.txt", NEW, "same"), name="writer_a.py")
    spec_b = harness.write_agent(_writer("b.txt", NEW, "same"), name="writer_b.py")
    await harness.start(settings={"agent": spec_a, "permissions": {"write": "ask"}})
    run_a = await harness.run("rewrite a", agent=spec_a)
    run_b = await harness.run("rewrite b", agent=spec_b)
    req_a = await harness.wait_kind(run_a["runId"], "approval.requested")
    req_b = await harness.wait_kind(run_b["runId"], "approval.requested")
    assert req_a["approvalId"] != req_b["approvalId"]
    assert req_a["toolCallId"] == req_b["toolCallId"] == "same"  # call ids collide across runs

    # b first: a plain accept; a stays pending.
    await harness.request(
        "lovia/approve",
        {"runId": run_b["runId"], "approvalId": req_b["approvalId"], "decision": "allow_once"},
    )
    assert (await harness.finished(run_b["runId"]))["status"] == "completed"
    assert (harness.root / "b.txt").read_text() == NEW
    assert (harness.root / "a.txt").read_text() == OLD
    assert not any(e["kind"] == "approval.resolved" for e in harness.of_run(run_a["runId"]))

    # then a, with the user's version of the file.
    await harness.request(
        "lovia/approve",
        {
            "runId": run_a["runId"],
            "approvalId": req_a["approvalId"],
            "decision": "allow_once",
            "edits": [{"path": req_a["diff"][0]["path"], "newText": APPLIED}],
        },
    )
    assert (await harness.finished(run_a["runId"]))["status"] == "completed"
    assert (harness.root / "a.txt").read_text() == APPLIED
    assert (harness.root / "b.txt").read_text() == NEW
    edited = {
        run["runId"]: next(
            e for e in harness.of_run(run["runId"]) if e["kind"] == "approval.resolved"
        ).get("edited")
        for run in (run_a, run_b)
    }
    assert edited == {run_a["runId"]: True, run_b["runId"]: None}
