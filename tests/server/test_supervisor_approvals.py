"""An approval's answer keeps one shape (the wire's ApprovalChoice) from lovia/approve to the tool call."""

import pytest

from lovia.approvals import ApprovalChannel
from lovia.events import ApprovalRequired
from lovia.messages import ToolCall
from lovia_server.host.approval_answer import ReviewedFile
from lovia_server.host.approval_broker import CANCELLED_ANSWER, ApprovalAnswer, PendingApproval
from lovia_server.protocol import ApprovalChoice, ApprovalRequested


def _waiting_call(channel: ApprovalChannel) -> ApprovalRequired:
    return ApprovalRequired(call=ToolCall(id="c1", name="shell", arguments="{}"), _channel=channel)


@pytest.mark.parametrize("decision", list(ApprovalChoice))
async def test_the_wire_decision_lets_the_call_run_or_declines_it(decision):
    channel = ApprovalChannel()
    waiting = channel.register("c1")
    ApprovalAnswer(decision, "use the test database").apply(_waiting_call(channel))
    assert await waiting is decision.allows
    told = channel.rejection_message("c1")
    assert told == (None if decision.allows else "use the test database")


async def test_a_cancelled_approval_declines_the_call_and_reads_cancelled():
    channel = ApprovalChannel()
    waiting = channel.register("c1")
    CANCELLED_ANSWER.apply(_waiting_call(channel))
    assert await waiting is False
    assert CANCELLED_ANSWER.outcome == "cancelled"
    assert ApprovalAnswer(ApprovalChoice.ALLOW_ALWAYS, by="editor").outcome == "allowed"
    assert ApprovalAnswer(ApprovalChoice.REJECT_ONCE, by="policy").outcome == "rejected"


async def test_the_answer_goes_with_the_decision_and_the_first_answer_settles_the_one_future():
    channel = ApprovalChannel()
    waiting = channel.register("c1")
    event = _waiting_call(channel)
    payload = ApprovalRequested(
        approval_id="ap1",
        tool_call_id="c1",
        action="other",
        title="t",
        detail="d",
        paths=[],
        options=[],
    )
    pending = PendingApproval("ap1", "subject", event, payload)
    assert event.decision() is waiting and not pending.settled
    reviewed = ApprovalAnswer(
        ApprovalChoice.ALLOW_ONCE, edits=(ReviewedFile("a.txt", "old\n", "new\n", "mine\n"),)
    )
    assert pending.settle(reviewed) is True
    assert pending.settle(CANCELLED_ANSWER) is False  # a late cancel or editor answer loses
    assert await waiting is True and pending.answer is reviewed
    # lovia core keeps the answer for the call, which it hands over as current_approval
    assert channel.answer("c1") is reviewed
