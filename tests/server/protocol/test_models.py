"""The protocol models produce the wire's exact shapes: camelCase, optional fields left out."""

import asyncio
import json

import pytest
from pydantic import TypeAdapter, ValidationError

from lovia_server import protocol as p
from lovia_server.host.event_log import EventLog, encode_event
from lovia_server.host.event_log import Publisher as RealPublisher

EVENTS = TypeAdapter(p.LoviaEvent)
ENVELOPE = {"sessionId", "runId", "seq", "ts", "kind"}


def test_payload_fields_are_camel_case_on_the_wire():
    payload = p.ToolCallStarted(
        tool_call_id="c1",
        name="read_file",
        tool_kind="read",
        title="Read a.py",
        input={"path": "a.py", "some_arg": 1},
        locations=[p.Location(path="/w/a.py", uri="file:///w/a.py")],
    )
    assert payload.to_wire() == {
        "toolCallId": "c1",
        "name": "read_file",
        "toolKind": "read",
        "title": "Read a.py",
        "input": {"path": "a.py", "some_arg": 1},  # tool input is passed through untouched
        "locations": [{"path": "/w/a.py", "uri": "file:///w/a.py"}],
    }


def test_optional_fields_are_left_out_but_required_nulls_stay():
    started = p.RunStarted(prompt="hi", cwd="/w", model=None, agent="lovia:coding", resumed=False)
    assert started.to_wire()["model"] is None
    resolved = p.ApprovalResolved(approval_id="a", outcome="cancelled", by="user")
    assert resolved.to_wire() == {"approvalId": "a", "outcome": "cancelled", "by": "user"}
    decided = p.ApprovalResolved(
        approval_id="a", outcome="allowed", by="user", decision=p.ApprovalChoice.ALLOW_ALWAYS
    )
    assert decided.to_wire()["decision"] == "allow_always"
    diff = p.FileDiff(path="/w/new.py", uri="file:///w/new.py", old_text=None, new_text="x")
    assert diff.to_wire() == {
        "path": "/w/new.py",
        "uri": "file:///w/new.py",
        "oldText": None,
        "newText": "x",
    }


def test_a_cancelled_tool_result_has_one_shape():
    assert p.ToolResult.cancelled("c9", "Cancelled.").to_wire() == {
        "toolCallId": "c9",
        "status": "cancelled",
        "content": [{"type": "text", "text": "Cancelled."}],
        "isError": True,
    }


def test_run_finished_carries_output_and_error_only_when_present():
    usage = p.Usage(input_tokens=3, output_tokens=4, context_tokens=3, context_window=None)
    done = p.RunFinished(status="completed", usage=usage, resumable=False, output="ok")
    assert done.to_wire() == {
        "status": "completed",
        "usage": {
            "inputTokens": 3,
            "outputTokens": 4,
            "cacheReadTokens": 0,
            "cacheWriteTokens": 0,
            "contextTokens": 3,
            "contextWindow": None,
        },
        "resumable": False,
        "output": "ok",
    }
    failed = p.RunFinished(
        status="failed", usage=usage, resumable=False, error=p.RunError(type="E", message="m")
    )
    assert "output" not in failed.to_wire()
    assert failed.to_wire()["error"] == {"type": "E", "message": "m"}


def test_approval_requested_keeps_the_wire_key_order():
    payload = p.ApprovalRequested(
        approval_id="a",
        tool_call_id="c",
        title="Run `ls`",
        paths=[],
        action="shell",
        command="ls",
        detail="Run in .: ls",
        options=[p.ApprovalOption(decision=p.ApprovalChoice.ALLOW_ONCE, label="Run")],
    )
    assert list(payload.to_wire()) == [
        "approvalId",
        "toolCallId",
        "title",
        "paths",
        "action",
        "command",
        "detail",
        "options",
    ]


def test_payload_models_reject_unknown_fields_and_bad_literals():
    with pytest.raises(ValidationError):
        p.UserMessage.model_validate({"messageId": "m", "text": "t", "source": "robot"})
    with pytest.raises(ValidationError):
        p.OutputDiscarded.model_validate({"messageId": "m", "extra": 1})


def test_every_event_kind_has_a_payload_and_a_union_member():
    assert list(p.PAYLOADS) == p.EVENT_KINDS
    assert len(set(p.EVENT_KINDS)) == 23
    for kind in p.EVENT_KINDS:
        event = EVENTS.validate_python(_sample_event(kind))
        assert event.kind == kind
        assert isinstance(event, p.PAYLOADS[kind])


def _sample_event(kind):
    samples = {
        "run.started": {"prompt": "p", "cwd": "/w", "model": None, "agent": "a", "resumed": False},
        "user.message": {"messageId": "u", "text": "t", "source": "prompt"},
        "message.delta": {"messageId": "m", "text": "t"},
        "reasoning.delta": {"messageId": "m", "text": "t"},
        "message.completed": {"messageId": "m", "text": "t"},
        "output.discarded": {"messageId": "m"},
        "model.retrying": {
            "messageId": "m",
            "attempt": 1,
            "maxAttempts": 5,
            "delayMs": 1200,
            "retryAt": 1_700_000_001_200,
            "reason": "OpenAI Chat stream returned HTTP 503: Service Unavailable",
            "statusCode": 503,
        },
        "tool.call": {
            "toolCallId": "c",
            "name": "n",
            "toolKind": "other",
            "title": "n",
            "input": {},
            "locations": [],
        },
        "tool.update": {"toolCallId": "c", "output": {"text": "x", "stream": "stderr"}},
        "tool.result": {
            "toolCallId": "c",
            "status": "completed",
            "content": [
                {"type": "text", "text": "ok"},
                {"type": "diff", "path": "/a", "uri": "file:///a", "oldText": None, "newText": ""},
            ],
            "isError": False,
        },
        "approval.requested": {
            "approvalId": "a",
            "toolCallId": "c",
            "action": "other",
            "title": "t",
            "detail": "d",
            "paths": [],
            "options": [{"decision": "reject_once", "label": "Reject"}],
        },
        "approval.resolved": {"approvalId": "a", "outcome": "timed_out", "by": "policy"},
        "question.requested": {"questionId": "q", "text": "?", "choices": ["a"]},
        "question.answered": {"questionId": "q", "answer": "a"},
        "todo.updated": {"items": [{"content": "c", "status": "pending"}]},
        "handoff": {"fromAgent": "a", "toAgent": "b", "reason": None},
        "compaction": {
            "tokensBefore": 10,
            "tokensAfter": 5,
            "stages": ["prune"],
            "reactive": False,
            "detail": [],
        },
        "usage.updated": {
            "inputTokens": 1,
            "outputTokens": 1,
            "cacheReadTokens": 0,
            "cacheWriteTokens": 0,
            "contextTokens": 1,
            "contextWindow": 100,
            "costUsd": 0.5,
            "sessionCostUsd": 1.5,
            "turn": {
                "inputTokens": 1,
                "outputTokens": 1,
                "cacheReadTokens": 0,
                "cacheWriteTokens": 0,
            },
        },
        "subagent.started": {
            "childRunId": "r2",
            "childSessionId": "s2",
            "taskId": "t1",
            "name": "worker",
            "prompt": "p",
            "toolCallId": "c",
            "resumed": False,
        },
        "subagent.finished": {
            "childRunId": "r2",
            "taskId": "t1",
            "status": "completed",
            "usage": {
                "inputTokens": 1,
                "outputTokens": 1,
                "cacheReadTokens": 0,
                "cacheWriteTokens": 0,
                "contextTokens": None,
                "contextWindow": None,
            },
            "summary": "done",
        },
        "mcp.status": {"server": "git", "state": "failed", "tools": [], "error": "exited"},
        "checkpoint.created": {
            "checkpointId": "rp-0000000000000001-abcdef",
            "turnIndex": 0,
            "label": "fix it",
            "createdAt": 1,
            "root": "/w",
            "rootUri": "file:///w",
        },
        "run.finished": {
            "status": "cancelled",
            "usage": {
                "inputTokens": 0,
                "outputTokens": 0,
                "cacheReadTokens": 0,
                "cacheWriteTokens": 0,
                "contextTokens": None,
                "contextWindow": None,
            },
            "resumable": False,
        },
    }
    return {"sessionId": "s", "runId": "r", "seq": 1, "ts": 0, "kind": kind, **samples[kind]}


def test_the_event_log_sends_the_envelope_then_the_payload():
    sent = []

    class Publisher:
        def publish(self, event):
            sent.append(event)

    async def scenario():
        log = EventLog("r1", "s1", Publisher(), coalesce=False)
        log.emit(p.UserMessage(message_id="u1", text="hi", source="prompt"))
        log.delta(p.ToolUpdate, "c1", "out", "stderr")

    asyncio.run(scenario())
    wire = [json.loads(encode_event(e)[1]) for e in sent]
    assert [list(e)[:5] for e in wire] == [["sessionId", "runId", "seq", "ts", "kind"]] * 2
    first, second = sent
    assert isinstance(first, p.UserMessageEvent) and first.text == "hi" and first.seq == 1
    assert isinstance(second, p.ToolUpdateEvent) and second.output.stream == "stderr"
    assert [p.parse_event(e) for e in wire] == sent  # what the client reads back is the model


def test_essential_kinds_are_the_payloads_marked_essential():
    marked = {kind for kind, cls in p.PAYLOADS.items() if cls.ESSENTIAL}
    assert marked == p.ESSENTIAL_KINDS
    assert {"run.started", "run.finished", "approval.requested"} <= marked
    assert not marked & p.DELTA_KINDS  # deltas may always be replayed instead


async def test_an_essential_event_is_never_dropped_for_a_client_far_behind(store):
    """Every kind, through a transport that refuses all it may: exactly the kinds whose payload
    class is marked essential reach the client, in order; the rest are stored."""

    class Behind:
        def __init__(self):
            self.sent = []

        def send_event(self, event, data, *, essential):
            if essential:
                self.sent.append(json.loads(data)["kind"])
            return essential

        def pending(self):
            return False

        def drained(self):
            return None

    wire = Behind()
    publisher = RealPublisher(store, wire)
    log = EventLog("r1", "s", publisher, coalesce=False)
    for kind in p.EVENT_KINDS:
        sample = _sample_event(kind)
        payload = {k: v for k, v in sample.items() if k not in ENVELOPE}
        log.emit(p.PAYLOADS[kind].model_validate(payload))
    await log.close()
    assert wire.sent == [kind for kind in p.EVENT_KINDS if p.PAYLOADS[kind].ESSENTIAL]
    assert publisher.skipped == len(p.EVENT_KINDS) - len(wire.sent)
    stored = await store.typed_events_after("r1", 0)
    assert [e.kind for e in stored] == p.EVENT_KINDS


def test_decision_says_whether_it_allows_and_whether_it_is_remembered():
    assert [d.value for d in p.ApprovalChoice] == p.APPROVAL_CHOICES
    assert p.ApprovalChoice.ALLOW_ALWAYS.allows and p.ApprovalChoice.ALLOW_ALWAYS.always
    assert not p.ApprovalChoice.REJECT_ONCE.allows and not p.ApprovalChoice.REJECT_ONCE.always
    assert p.ApprovalChoice("reject_always").always


@pytest.mark.parametrize(
    ("model", "raw", "field"),
    [
        (
            p.RunParams,
            {"prompt": "x", "context": [{"uri": "file:///a", "range": {}}]},
            "context.0.range.start",
        ),
        (p.RunParams, {"prompt": "x", "sessionId": ""}, "sessionId"),
        (p.ApproveParams, {"runId": "r", "approvalId": "a"}, "decision"),
        (p.ReplayParams, "nope", "params"),
    ],
)
def test_the_first_bad_field_is_named_by_its_wire_path(model, raw, field):
    with pytest.raises(p.ProtocolError) as info:
        p.parse_params(model, raw)
    assert info.value.code == p.ErrorCode.INVALID_PARAMS == -32602
    assert info.value.data["field"] == field


def test_params_are_read_by_wire_name_and_ignore_unknown_fields():
    params = p.parse_params(p.ReplayParams, {"runId": "r1", "afterSeq": 4, "future": True})
    assert (params.run_id, params.after_seq) == ("r1", 4)
    assert p.parse_params(p.SessionsParams, None).limit == 50


def test_error_codes_are_one_enum_with_lovias_range():
    own = [c for c in p.ErrorCode if -32016 <= c <= -32010]
    assert [c.value for c in own] == list(range(-32010, -32017, -1))
    assert p.ErrorCode.RUN_ALREADY_ACTIVE.title == "RunAlreadyActive"
    assert p.RUN_NOT_FOUND is p.ErrorCode.RUN_NOT_FOUND
