"""The pure mapping from lovia events to ACP session updates, table by table."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from acp import schema as a

from lovia_server import protocol as p
from lovia_server.acp import mapping
from lovia_server.acp.mapping import (
    MAPPED_KINDS,
    NO_ANSWER,
    OUTPUT_TAIL_CHARS,
    SessionMapper,
    permission_decision,
    permission_request,
    prompt_usage,
    question_answer,
    question_request,
    stop_reason,
)
from lovia_server.acp.prompt_input import prompt_input
from lovia_server.protocol import PAYLOADS, ApprovalChoice


def _dump(updates: list[Any]) -> list[dict[str, Any]]:
    return [u.model_dump(mode="json", by_alias=True, exclude_none=True) for u in updates]


# Required fields a case does not care about.
DEFAULTS: dict[str, dict[str, Any]] = {
    "tool.result": {"isError": False, "content": []},
    "subagent.finished": {"childRunId": "r_c", "usage": {}},
    "run.finished": {"usage": {}, "resumable": False},
}


def ev(kind: str, **fields: Any) -> p.LoviaEvent:
    """The event model, as the publisher hands it over (and as a replay reads it back)."""
    envelope = {"sessionId": "s", "runId": "r", "seq": 1, "ts": 0, "kind": kind}
    return p.parse_event({**envelope, **DEFAULTS.get(kind, {}), **fields})


def approval(**fields: Any) -> p.ApprovalRequested:
    base = {"approvalId": "ap", "toolCallId": "c1", "title": "t", "paths": [], "action": "other"}
    return p.ApprovalRequested.model_validate({**base, "detail": "", "options": [], **fields})


def run_finished(**fields: Any) -> p.RunFinished:
    return p.RunFinished.model_validate({"usage": {}, "resumable": False, **fields})


TOOL_CALL = ev(
    "tool.call",
    toolCallId="c1",
    name="edit_file",
    toolKind="edit",
    title="Edit a.py",
    input={"path": "a.py"},
    locations=[{"path": "/w/a.py", "uri": "file:///w/a.py", "line": 3}],
)

CASES: list[tuple[str, list[p.LoviaEvent], list[dict[str, Any]]]] = [
    (
        "text delta -> agent_message_chunk",
        [ev("message.delta", messageId="m1", text="Hi")],
        [
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": "m1",
                "content": {"type": "text", "text": "Hi"},
            }
        ],
    ),
    (
        "reasoning -> agent_thought_chunk",
        [ev("reasoning.delta", messageId="m1", text="hmm")],
        [
            {
                "sessionUpdate": "agent_thought_chunk",
                "messageId": "m1",
                "content": {"type": "text", "text": "hmm"},
            }
        ],
    ),
    (
        "the prompt is not echoed live",
        [ev("user.message", messageId="u1", text="go", source="prompt")],
        [],
    ),
    (
        "a steer is echoed where it entered the run",
        [ev("user.message", messageId="u2", text="also tests", source="steer")],
        [
            {
                "sessionUpdate": "user_message_chunk",
                "messageId": "u2",
                "content": {"type": "text", "text": "also tests"},
            }
        ],
    ),
    (
        "tool call -> tool_call with kind, title, locations, rawInput",
        [TOOL_CALL],
        [
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "c1",
                "title": "Edit a.py",
                "kind": "edit",
                "status": "pending",
                "content": [],
                "locations": [{"path": "/w/a.py", "line": 3}],
                "rawInput": {"path": "a.py"},
            }
        ],
    ),
    (
        "a call announced again (a resumed run) updates the card",
        [TOOL_CALL, TOOL_CALL],
        [
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "c1",
                "title": "Edit a.py",
                "kind": "edit",
                "status": "pending",
                "content": [],
                "locations": [{"path": "/w/a.py", "line": 3}],
                "rawInput": {"path": "a.py"},
            },
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c1",
                "title": "Edit a.py",
                "kind": "edit",
                "status": "pending",
                "content": [],
                "locations": [{"path": "/w/a.py", "line": 3}],
                "rawInput": {"path": "a.py"},
            },
        ],
    ),
    (
        "an allowed approval -> in_progress; a rejected one says nothing (the result does)",
        [
            ev(
                "approval.requested",
                approvalId="ap1",
                toolCallId="c1",
                title="t",
                paths=[],
                action="other",
                detail="d",
                options=[],
            ),
            ev("approval.resolved", approvalId="ap1", outcome="allowed", by="user"),
            ev(
                "approval.requested",
                approvalId="ap2",
                toolCallId="c2",
                title="t",
                paths=[],
                action="other",
                detail="d",
                options=[],
            ),
            ev("approval.resolved", approvalId="ap2", outcome="rejected", by="user"),
        ],
        [{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"}],
    ),
    (
        "shell output streams as the call's whole text so far",
        [
            ev("tool.update", toolCallId="c1", output={"text": "a\n", "stream": "stdout"}),
            ev("tool.update", toolCallId="c1", output={"text": "b\n", "stream": "stderr"}),
        ],
        [
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c1",
                "status": "in_progress",
                "content": [{"type": "content", "content": {"type": "text", "text": "a\n"}}],
            },
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c1",
                "status": "in_progress",
                "content": [{"type": "content", "content": {"type": "text", "text": "a\nb\n"}}],
            },
        ],
    ),
    (
        "a completed edit -> text and diff content",
        [
            ev(
                "tool.result",
                toolCallId="c1",
                status="completed",
                isError=False,
                content=[
                    {"type": "text", "text": "ok"},
                    {
                        "type": "diff",
                        "path": "/w/a.py",
                        "uri": "file:///w/a.py",
                        "oldText": "x",
                        "newText": "y",
                    },
                ],
            )
        ],
        [
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c1",
                "status": "completed",
                "content": [
                    {"type": "content", "content": {"type": "text", "text": "ok"}},
                    {"type": "diff", "path": "/w/a.py", "oldText": "x", "newText": "y"},
                ],
                "rawOutput": {"status": "completed", "output": "ok"},
            }
        ],
    ),
    (
        "a new file's diff has no oldText",
        [
            ev(
                "tool.result",
                toolCallId="c1",
                status="completed",
                isError=False,
                content=[
                    {
                        "type": "diff",
                        "path": "/w/n.py",
                        "uri": "file:///w/n.py",
                        "oldText": None,
                        "newText": "y",
                    }
                ],
            )
        ],
        [
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c1",
                "status": "completed",
                "content": [{"type": "diff", "path": "/w/n.py", "newText": "y"}],
                "rawOutput": {"status": "completed", "output": ""},
            }
        ],
    ),
    *[
        (
            f"a {status} call -> failed",
            [
                ev(
                    "tool.result",
                    toolCallId="c1",
                    status=status,
                    isError=True,
                    content=[{"type": "text", "text": "no"}],
                )
            ],
            [
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": "c1",
                    "status": "failed",
                    "content": [{"type": "content", "content": {"type": "text", "text": "no"}}],
                    "rawOutput": {"status": status, "output": "no"},
                }
            ],
        )
        for status in ("failed", "declined", "cancelled")
    ],
    (
        "todos -> the full plan",
        [
            ev(
                "todo.updated",
                items=[
                    {"content": "a", "status": "completed"},
                    {"content": "b", "status": "in_progress", "activeForm": "Doing b"},
                    {"content": "c", "status": "weird"},
                ],
            )
        ],
        [
            {
                "sessionUpdate": "plan",
                "entries": [
                    {"content": "a", "status": "completed", "priority": "medium"},
                    {"content": "b", "status": "in_progress", "priority": "medium"},
                    {"content": "c", "status": "pending", "priority": "medium"},
                ],
            }
        ],
    ),
    (
        "usage with a known window -> usage_update with the session's cost and the cache share;"
        " without one nothing",
        [
            ev(
                "usage.updated",
                inputTokens=5000,
                outputTokens=1,
                cacheReadTokens=4100,
                cacheWriteTokens=300,
                contextTokens=1200,
                contextWindow=128000,
                costUsd=0.0125,
                sessionCostUsd=0.05,
                turn={
                    "inputTokens": 1200,
                    "outputTokens": 1,
                    "cacheReadTokens": 1100,
                    "cacheWriteTokens": 90,
                },
            ),
            ev(
                "usage.updated",
                inputTokens=5,
                outputTokens=1,
                cacheReadTokens=0,
                contextTokens=1200,
                contextWindow=128000,
            ),
            ev(
                "usage.updated",
                inputTokens=5,
                outputTokens=1,
                cacheReadTokens=0,
                contextTokens=1200,
                contextWindow=None,
            ),
        ],
        [
            {
                "sessionUpdate": "usage_update",
                "used": 1200,
                "size": 128000,
                "cost": {"amount": 0.05, "currency": "USD"},
                "_meta": {
                    "lovia": {
                        "inputTokens": 5000,
                        "cacheReadTokens": 4100,
                        "cacheWriteTokens": 300,
                        "cachedShare": 0.82,
                        "turnCachedShare": 0.917,
                        "costUsd": 0.0125,
                    }
                },
            },
            {
                "sessionUpdate": "usage_update",
                "used": 1200,
                "size": 128000,
                "_meta": {"lovia": {"inputTokens": 5, "cacheReadTokens": 0, "cacheWriteTokens": 0}},
            },
        ],
    ),
    (
        "a handoff and a compaction are thoughts",
        [
            ev("handoff", fromAgent="a", toAgent="b", reason=None),
            ev(
                "compaction",
                tokensBefore=100,
                tokensAfter=40,
                stages=["trim"],
                reactive=False,
                detail=[],
            ),
        ],
        [
            {
                "sessionUpdate": "agent_thought_chunk",
                "content": {"type": "text", "text": "Handed over from a to b.\n"},
            },
            {
                "sessionUpdate": "agent_thought_chunk",
                "content": {
                    "type": "text",
                    "text": "The conversation was compacted to fit the context (100 → 40 tokens).\n",
                },
            },
        ],
    ),
    (
        "run start and end, completed messages: no update (the prompt response ends a turn)",
        [
            ev("run.started", prompt="p", cwd="/w", model="m", agent="a", resumed=False),
            ev("message.completed", messageId="m1", text="Hi"),
            ev("run.finished", status="completed", usage={}, resumable=False),
        ],
        [],
    ),
]


@pytest.mark.parametrize(("events", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_live_mapping(events: list[p.LoviaEvent], expected: list[dict[str, Any]]) -> None:
    mapper = SessionMapper()
    out = [u for e in events for u in mapper.updates(e)]
    assert _dump(out) == expected


def test_replay_adds_the_prompts() -> None:
    mapper = SessionMapper(replay=True)
    out = mapper.updates(ev("user.message", messageId="u1", text="go", source="prompt"))
    assert _dump(out) == [
        {
            "sessionUpdate": "user_message_chunk",
            "messageId": "u1",
            "content": {"type": "text", "text": "go"},
        }
    ]


def test_every_event_kind_is_either_mapped_or_deliberately_not() -> None:
    silent = {
        "run.started",
        "run.finished",
        "message.completed",
        "output.discarded",
        "question.requested",
        "question.answered",
        "checkpoint.created",  # the ACP host keeps no restore points
    }
    assert set(PAYLOADS) - silent <= MAPPED_KINDS
    assert set(PAYLOADS) >= MAPPED_KINDS


def test_each_handler_takes_the_event_class_it_is_keyed_by() -> None:
    """The mapper dispatches on the event's class: each handler's parameter is its key, and
    every key is a member of the ``LoviaEvent`` union."""
    members = set(p.EVENT_CLASSES.values())
    for cls, handler in mapping._HANDLERS.items():
        assert cls in members
        assert typing.get_type_hints(handler, vars(mapping))["event"] is cls


def test_a_bare_payload_is_not_an_event() -> None:
    """A bare payload (no envelope) is not an event: nothing maps it."""
    payload = p.MessageDelta(message_id="m1", text="Hi")
    assert SessionMapper().updates(payload) == []  # type: ignore[arg-type]


def test_output_keeps_only_its_tail() -> None:
    mapper = SessionMapper()
    big = "x" * (OUTPUT_TAIL_CHARS + 10)
    (update,) = mapper.updates(
        ev("tool.update", toolCallId="c", output={"text": big + "END", "stream": "stdout"})
    )
    text = update.content[0].content.text
    assert len(text) == OUTPUT_TAIL_CHARS and text.endswith("END")


def test_permission_request_carries_the_diff_and_the_four_decisions() -> None:
    payload = {
        "approvalId": "ap",
        "toolCallId": "c1",
        "title": "Edit a.py",
        "paths": ["/w/a.py"],
        "action": "file.write",
        "detail": "The agent wants to edit /w/a.py.",
        "diff": [{"path": "/w/a.py", "uri": "file:///w/a.py", "oldText": "x", "newText": "y"}],
        "options": [{"decision": d.value, "label": d.value} for d in ApprovalChoice],
    }
    tool_call, options = permission_request(approval(**payload))
    assert _dump([tool_call]) == [
        {
            "toolCallId": "c1",
            "title": "Edit a.py",
            "status": "pending",
            "content": [{"type": "diff", "path": "/w/a.py", "oldText": "x", "newText": "y"}],
            "locations": [{"path": "/w/a.py"}],
        }
    ]
    assert [(o.option_id, o.kind) for o in options] == [(d.value, d.value) for d in ApprovalChoice]
    shell = approval(**{**payload, "diff": None, "detail": "Run in .: make"})
    assert permission_request(shell)[0].content[0].content.text == "Run in .: make"


@pytest.mark.parametrize(
    ("outcome", "decision"),
    [
        (a.AllowedOutcome(outcome="selected", option_id="allow_once"), ApprovalChoice.ALLOW_ONCE),
        (
            a.AllowedOutcome(outcome="selected", option_id="reject_always"),
            ApprovalChoice.REJECT_ALWAYS,
        ),
        (a.AllowedOutcome(outcome="selected", option_id="bogus"), ApprovalChoice.REJECT_ONCE),
        (a.DeniedOutcome(outcome="cancelled"), None),
    ],
)
def test_permission_answers(outcome: Any, decision: ApprovalChoice | None) -> None:
    assert permission_decision(a.RequestPermissionResponse(outcome=outcome)) == decision


@pytest.mark.parametrize(
    ("finished", "reason"),
    [
        ({"status": "completed"}, "end_turn"),
        ({"status": "cancelled"}, "cancelled"),
        ({"status": "interrupted"}, "cancelled"),
        (
            {"status": "failed", "error": {"type": "MaxTurnsExceeded", "message": ""}},
            "max_turn_requests",
        ),
        ({"status": "failed", "error": {"type": "BudgetExceeded", "message": ""}}, "max_tokens"),
        ({"status": "failed", "error": {"type": "ContentFiltered", "message": ""}}, "refusal"),
        ({"status": "failed", "error": {"type": "ProviderError", "message": ""}}, None),
    ],
)
def test_stop_reasons(finished: dict[str, Any], reason: str | None) -> None:
    assert stop_reason(run_finished(**finished)) == reason


def test_prompt_usage() -> None:
    assert prompt_usage(run_finished(status="completed")) is None
    usage = prompt_usage(
        run_finished(
            status="completed", usage={"inputTokens": 10, "outputTokens": 4, "cacheReadTokens": 2}
        )
    )
    assert usage is not None and (usage.total_tokens, usage.cached_read_tokens) == (14, 2)
    assert usage.cached_write_tokens is None
    written = prompt_usage(
        run_finished(
            status="completed",
            usage={"inputTokens": 10, "outputTokens": 4, "cacheWriteTokens": 8},
        )
    )
    assert written is not None and written.cached_write_tokens == 8


def test_prompt_blocks_become_the_run_input() -> None:
    blocks = [
        a.TextContentBlock(type="text", text="explain this"),
        a.ResourceContentBlock(type="resource_link", uri="file:///w/a.py", name="a.py"),
        a.EmbeddedResourceContentBlock(
            type="resource",
            resource=a.TextResourceContents(uri="file:///w/b.py", text="print(1)"),
        ),
    ]
    given = prompt_input(blocks)
    assert given.display == "explain this"
    assert isinstance(given.model_input, str)
    assert given.model_input.startswith('explain this\n\n<context uri="file:///w/a.py"')
    assert '<context uri="file:///w/b.py">\nprint(1)\n</context>' in given.model_input
    image = a.ImageContentBlock(type="image", data="aGk=", mime_type="image/png")
    with_image = prompt_input([blocks[0], image])
    assert with_image.display == "explain this"
    (message,) = with_image.model_input
    assert [part.type for part in message.content] == ["text", "image"]


def test_questions_become_permission_options_and_back() -> None:
    event = ev(
        "question.requested", questionId="q", text="Tabs or spaces?", choices=["tabs", "spaces"]
    )
    tool_call, options = question_request(event, "call_1")
    assert (tool_call.tool_call_id, tool_call.title) == ("call_1", "Tabs or spaces?")
    assert [o.option_id for o in options] == ["choice-0", "choice-1", "skip"]

    def answered(option_id: str | None) -> str:
        outcome: Any = (
            a.DeniedOutcome(outcome="cancelled")
            if option_id is None
            else a.AllowedOutcome(outcome="selected", option_id=option_id)
        )
        return question_answer(a.RequestPermissionResponse(outcome=outcome), ["tabs", "spaces"])

    assert answered("choice-0") == "tabs"
    assert answered("choice-1") == "spaces"
    assert answered("skip") == answered(None) == answered("choice-9") == NO_ANSWER


def test_subagents_and_failing_mcp_servers_show_as_thoughts() -> None:
    mapper = SessionMapper()
    started = ev(
        "subagent.started",
        childRunId="r_c",
        childSessionId="s_c",
        taskId="t1",
        name="helper",
        prompt="look",
        toolCallId="c1",
        resumed=False,
    )
    finished = ev(
        "subagent.finished",
        childRunId="r_c",
        taskId="t1",
        status="completed",
        usage={"inputTokens": 1, "outputTokens": 1},
        summary="found it",
    )
    failing = ev("mcp.status", server="git", state="failed", tools=[], error="exited with 1")
    running = ev("mcp.status", server="git", state="running", tools=["log"])
    texts = [u.content.text for e in (started, finished, failing) for u in mapper.updates(e)]
    assert texts == [
        "Started subagent helper (t1).\n",
        "Subagent t1 completed: found it\n",
        "MCP server git is failed: exited with 1.\n",
    ]
    assert mapper.updates(running) == []


# ---------------------------------------------------------------------------- remote content

EVIL = "https://attacker.example/?d=sk-live-123"


def _texts(updates: list[Any]) -> list[tuple[str, str]]:
    out = []
    for u in _dump(updates):
        content = u.get("content")
        if isinstance(content, dict):
            out.append((u["sessionUpdate"], content["text"]))
    return out


def test_an_image_split_across_message_chunks_is_escaped() -> None:
    m = SessionMapper()
    got = [
        *m.updates(ev("message.delta", messageId="m1", text="Your key: !")),
        *m.updates(ev("message.delta", messageId="m1", text=f"[k]({EVIL}) and <im")),
        *m.updates(ev("message.delta", messageId="m1", text="g src=x> Done!")),
        *m.updates(ev("message.completed", messageId="m1", text="...")),
    ]
    assert _texts(got) == [
        ("agent_message_chunk", "Your key: "),
        ("agent_message_chunk", f"\\![k]({EVIL}) and "),
        ("agent_message_chunk", "\\<img src=x> Done"),
        ("agent_message_chunk", "!"),  # held back until the message ended
    ]
    assert all(u.message_id == "m1" for u in got)


def test_code_in_a_streamed_fence_is_not_touched() -> None:
    m = SessionMapper()
    text = "Use:\n```rust\nlet v = vec![1, 2];\n```\n"
    got = [u for c in text for u in m.updates(ev("message.delta", messageId="m1", text=c))]
    assert "".join(t for _, t in _texts(got)) == text


def test_what_is_held_goes_out_before_the_next_card() -> None:
    m = SessionMapper()
    got = [
        *m.updates(ev("reasoning.delta", messageId="m1", text="so!")),
        *m.updates(ev("message.delta", messageId="m2", text="ok!")),
        *m.updates(TOOL_CALL),
    ]
    assert [u.session_update for u in got] == [
        "agent_thought_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "agent_message_chunk",
        "tool_call",
    ]
    assert _texts(got) == [
        ("agent_thought_chunk", "so"),
        ("agent_thought_chunk", "!"),
        ("agent_message_chunk", "ok"),
        ("agent_message_chunk", "!"),
    ]


def test_titles_output_results_plans_and_permissions_are_escaped() -> None:
    m = SessionMapper()
    call = ev(
        "tool.call",
        toolCallId="c9",
        name="shell",
        toolKind="execute",
        title=f"Run echo ![x]({EVIL})",
        input={"command": f"echo ![x]({EVIL})"},
        locations=[],
    )
    (start,) = _dump(m.updates(call))
    assert start["title"] == f"Run echo \\![x]({EVIL})"
    assert start["rawInput"] == {"command": f"echo ![x]({EVIL})"}  # data, not markdown
    (output,) = _dump(
        m.updates(
            ev(
                "tool.update",
                toolCallId="c9",
                output={"text": f"<img src={EVIL}>\n", "stream": "stdout"},
            )
        )
    )
    assert output["content"][0]["content"]["text"] == f"\\<img src={EVIL}>\n"
    (result,) = _dump(
        m.updates(
            ev(
                "tool.result",
                toolCallId="c9",
                status="completed",
                content=[{"type": "text", "text": f"![x]({EVIL})"}],
            )
        )
    )
    assert result["content"][0]["content"]["text"] == f"\\![x]({EVIL})"
    (plan,) = _dump(
        m.updates(ev("todo.updated", items=[{"content": f"![x]({EVIL})", "status": "pending"}]))
    )
    assert plan["entries"][0]["content"] == f"\\![x]({EVIL})"
    tool_call, _ = permission_request(
        approval(toolCallId="c9", title=f"Run ![x]({EVIL})", detail=f"![y]({EVIL})")
    )
    assert tool_call.title == f"Run \\![x]({EVIL})"
    assert tool_call.content[0].content.text == f"\\![y]({EVIL})"
    asked, _ = question_request(
        p.QuestionRequested(question_id="q", text=f"Pick ![q]({EVIL})", choices=["a"]), "c9"
    )
    assert asked.title == f"Pick \\![q]({EVIL})"


def test_a_note_quoting_the_model_is_escaped() -> None:
    m = SessionMapper()
    got = m.updates(
        ev("subagent.finished", taskId="t1", status="completed", summary=f"![s]({EVIL})")
    )
    assert _texts(got) == [("agent_thought_chunk", f"Subagent t1 completed: \\![s]({EVIL})\n")]
