"""Prompt caching through the real SDKs against the local fakes: where Anthropic's marks go,
OpenAI's prompt_cache_key, and the cache-break report."""

from __future__ import annotations

import hashlib
import logging
from typing import Any

import pytest

from lovia import Agent, Runner, tool
from lovia.exceptions import UserError
from lovia.messages import Usage
from lovia.model_view import ModelView
from lovia.plugins.todo import Todo
from lovia.providers.anthropic import AnthropicProvider
from lovia.providers.base import ModelSettings
from lovia.providers.openai import OpenAIChatProvider
from lovia.providers.openai_responses import OpenAIResponsesProvider
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)
from tests.lovia.providers.helpers import run
from tests.support import fake_anthropic as ant
from tests.support import fake_openai as oai
from tests.support import fake_openai_responses as rsp
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_openai_responses import FakeOpenAIResponses
from tests.support.fake_server import Reply

EPHEMERAL = {"type": "ephemeral"}


def provider(server: FakeAnthropic, **kw: Any) -> AnthropicProvider:
    return AnthropicProvider("claude-fake", base_url=server.base_url, api_key="k", **kw)


def schemas(n: int) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": f"t{i}", "parameters": {"type": "object"}}}
        for i in range(n)
    ]


def history(turns: int, *, parallel: int = 1, prefix: str = "c") -> list[TranscriptEntry]:
    """A system prompt, a request, then ``turns`` rounds of tool calls and their results."""
    entries: list[TranscriptEntry] = [InputEntry("system", "sys"), InputEntry("user", "go")]
    for turn in range(turns):
        ids = [f"{prefix}{turn}_{i}" for i in range(parallel)]
        entries += [ToolCallEntry(i, "t0", "{}") for i in ids]
        entries += [ToolResultEntry(i, f"result {i}") for i in ids]
    return entries


def count_marks(value: Any) -> int:
    if isinstance(value, dict):
        own = 1 if "cache_control" in value else 0
        return own + sum(count_marks(v) for v in value.values())
    if isinstance(value, list):
        return sum(count_marks(v) for v in value)
    return 0


def blocks(body: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """Every message block of a request as ``(message index, block)``, in order."""
    return [(i, b) for i, m in enumerate(body["messages"]) for b in m["content"]]


def marked(body: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    return [(i, b) for i, b in blocks(body) if "cache_control" in b]


# --------------------------------------------------------------------------- Anthropic marks


async def test_default_marks_tools_system_tail_and_previous_tail(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.script(ant.text("ok"))
    await run(provider(fake_anthropic), ModelView(history(3)), tools=schemas(3))
    body = fake_anthropic.last_request.json
    assert count_marks(body) == 4
    assert body["tools"][-1]["cache_control"] == EPHEMERAL
    assert all("cache_control" not in t for t in body["tools"][:-1])
    assert body["system"] == [{"type": "text", "text": "sys", "cache_control": EPHEMERAL}]
    # messages: user go, (assistant call, user result) x 3; the tail is the last result, the
    # previous tail the result before the latest assistant message
    assert [(i, b.get("tool_use_id")) for i, b in marked(body)] == [(4, "c1_0"), (6, "c2_0")]


async def test_previous_tail_is_where_the_previous_call_put_its_tail(
    fake_anthropic: FakeAnthropic,
) -> None:
    """25 parallel results after the last call: the tail alone would sit more than 20 blocks
    past the previous write, so the previous tail mark reads it."""
    fake_anthropic.script(ant.text("a"), ant.text("b"))
    p = provider(fake_anthropic)
    first = history(2)
    await run(p, ModelView(first))
    [(_, first_tail)] = marked(fake_anthropic.last_request.json)[-1:]
    second = first + history(1, parallel=25, prefix="p")[2:]
    await run(p, ModelView(second))
    body = fake_anthropic.last_request.json
    (prev_index, prev), (tail_index, tail) = marked(body)
    assert prev == first_tail and prev["tool_use_id"] == "c1_0"
    assert prev_index == 4 and tail_index == 6 and tail["tool_use_id"] == "p0_24"
    assert len(body["messages"][6]["content"]) == 25


@pytest.mark.parametrize(
    ("extra", "user_marks"),
    [
        ({}, 0),
        ({"cache_control": EPHEMERAL}, 1),  # the API's automatic mode takes a slot too
        (
            {
                "system": [
                    {"type": "text", "text": "a", "cache_control": EPHEMERAL},
                    {"type": "text", "text": "b", "cache_control": EPHEMERAL},
                ]
            },
            2,
        ),
        (
            {
                "cache_control": EPHEMERAL,
                "system": [
                    {"type": "text", "text": "a", "cache_control": EPHEMERAL},
                    {"type": "text", "text": "b", "cache_control": EPHEMERAL},
                ],
            },
            3,
        ),
        (
            {
                "tools": [
                    {"name": f"u{i}", "input_schema": {}, "cache_control": EPHEMERAL}
                    for i in range(4)
                ]
            },
            4,
        ),
    ],
)
async def test_never_more_than_four_marks(
    fake_anthropic: FakeAnthropic, extra: dict[str, Any], user_marks: int
) -> None:
    fake_anthropic.script(*(ant.text("ok") for _ in range(3)))
    p = provider(fake_anthropic)
    settings = ModelSettings(provider_options={"anthropic": extra})
    entries = history(40, parallel=3)
    for size in (10, 80, len(entries)):  # a long history, marks moving between calls
        await run(p, ModelView(entries[:size]), tools=schemas(30), settings=settings)
        body = fake_anthropic.last_request.json
        assert count_marks(body) == 4
        ours = marked(body)
        if user_marks <= 3:  # the tail is the last mark of ours to go
            assert ours[-1][1] == body["messages"][-1]["content"][-1]
        assert len(ours) == {0: 2, 1: 1, 2: 1, 3: 1, 4: 0}[user_marks]


async def test_a_reminder_after_the_stable_entries_is_never_marked(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.script(ant.text("ok"))
    reminder = InputEntry("user", "<system-reminder>todo</system-reminder>")
    entries = [InputEntry("system", "sys"), InputEntry("user", "next task"), reminder]
    await run(provider(fake_anthropic), ModelView(entries, stable=2))
    content = fake_anthropic.last_request.json["messages"][0]["content"]
    assert content == [
        {"type": "text", "text": "next task", "cache_control": EPHEMERAL},
        {"type": "text", "text": "\n\n"},
        {"type": "text", "text": "<system-reminder>todo</system-reminder>"},
    ]


async def test_the_todo_reminder_lands_after_every_mark_in_a_real_run(
    anthropic_env: FakeAnthropic,
) -> None:
    @tool
    async def look(path: str) -> str:
        """Look at a file."""
        return f"contents of {path}"

    todos = [{"content": "fix it", "status": "in_progress"}]
    anthropic_env.script(
        ant.tool_use(ant.tool_block("todo_write", {"todos": todos}, id="toolu_1")),
        ant.tool_use(ant.tool_block("look", {"path": "a.py"}, id="toolu_2")),
        ant.tool_use(ant.tool_block("look", {"path": "b.py"}, id="toolu_3")),
        ant.text("done"),
    )
    agent: Agent[Any] = Agent(
        name="coder", model="anthropic:claude-fake", tools=[look], plugins=[Todo()]
    )
    result = await Runner.run(agent, "fix the bug")
    assert result.output == "done"
    requests = anthropic_env.stream_requests()
    assert len(requests) == 4
    for request in requests[1:]:
        body = request.json
        flat = blocks(body)
        where = [n for n, (_, b) in enumerate(flat) if "system-reminder" in str(b)]
        marks = [n for n, (_, b) in enumerate(flat) if "cache_control" in b]
        assert len(where) == 1 and marks
        assert max(marks) < where[0]
        assert max(marks) == where[0] - 1  # the block right before the reminder
        assert flat[max(marks)][1]["type"] == "tool_result"
    # what a call marked is still in the next call, unmarked content identical
    last = blocks(requests[-1].json)
    assert any(b.get("tool_use_id") == "toolu_2" and "cache_control" in b for _, b in last)


async def test_thinking_blocks_keep_their_signatures_and_are_never_marked(
    anthropic_env: FakeAnthropic,
) -> None:
    @tool
    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    anthropic_env.script(
        ant.message(
            ant.thinking_block("I should add.", signature="sig-abc"),
            ant.tool_block("add", {"a": 2, "b": 3}, id="toolu_1"),
            stop_reason="tool_use",
        ),
        ant.text("5"),
    )
    thinking = {"type": "enabled", "budget_tokens": 1024}
    agent: Agent[Any] = Agent(
        name="a",
        model="anthropic:claude-fake",
        tools=[add],
        settings=ModelSettings(provider_options={"anthropic": {"thinking": thinking}}),
    )
    assert (await Runner.run(agent, "2+3?")).output == "5"
    body = anthropic_env.last_request.json
    assistant = body["messages"][1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "I should add.", "signature": "sig-abc"}
    assert body["messages"][2]["content"][0]["cache_control"] == EPHEMERAL
    assert body["messages"][0]["content"][0]["cache_control"] == EPHEMERAL


async def test_a_trailing_thinking_block_passes_its_mark_to_the_block_before(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.script(ant.text("ok"))
    entries: list[TranscriptEntry] = [
        InputEntry("user", "q"),
        AssistantTextEntry("partial"),
        ReasoningEntry("more thought", provider="anthropic", metadata={"signature": "s"}),
    ]
    await run(provider(fake_anthropic), ModelView(entries))
    content = fake_anthropic.last_request.json["messages"][1]["content"]
    assert content[0] == {"type": "text", "text": "partial", "cache_control": EPHEMERAL}
    assert "cache_control" not in content[1]


@pytest.mark.parametrize(
    "options", [{"cache": False}, {"cache": False, "cache_system": True, "cache_ttl": "1h"}]
)
async def test_cache_false_removes_every_mark(
    fake_anthropic: FakeAnthropic, options: dict[str, Any]
) -> None:
    fake_anthropic.script(ant.text("ok"))
    settings = ModelSettings(provider_options={"anthropic": options})
    await run(provider(fake_anthropic), ModelView(history(5)), tools=schemas(4), settings=settings)
    request = fake_anthropic.last_request
    assert b"cache_control" not in request.body
    assert not {"cache", "cache_system", "cache_ttl"} & set(request.json)


async def test_cache_system_false_alone_keeps_caching(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(ant.text("ok"))
    settings = ModelSettings(provider_options={"claude": {"cache_system": False}})
    await run(provider(fake_anthropic), ModelView(history(2)), tools=schemas(2), settings=settings)
    assert count_marks(fake_anthropic.last_request.json) == 4


async def test_one_hour_ttl_on_every_mark(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(ant.text("ok"))
    settings = ModelSettings(provider_options={"anthropic": {"cache_ttl": "1h"}})
    await run(provider(fake_anthropic), ModelView(history(3)), tools=schemas(2), settings=settings)
    body = fake_anthropic.last_request.json
    controls = [body["tools"][-1], body["system"][0], *(b for _, b in marked(body))]
    assert len(controls) == 4
    assert all(c["cache_control"] == {"type": "ephemeral", "ttl": "1h"} for c in controls)
    with pytest.raises(UserError, match="cache_ttl"):
        bad = ModelSettings(provider_options={"anthropic": {"cache_ttl": "2h"}})
        await run(provider(fake_anthropic), history(1), settings=bad)


# --------------------------------------------------------------------------- OpenAI key


def openai(server: FakeOpenAI, **kw: Any) -> OpenAIChatProvider:
    return OpenAIChatProvider("gpt-fake", base_url=server.base_url, api_key="k", **kw)


async def test_prompt_cache_key_is_a_hash_of_the_conversation(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(*(oai.text("ok") for _ in range(5)))
    view = ModelView([InputEntry("user", "hi")], conversation="alice-private-session")
    expected = "lovia-" + hashlib.sha256(b"alice-private-session").hexdigest()[:32]
    official = openai(fake_openai, official_dialect=True)
    await run(official, view)
    assert fake_openai.last_request.json["prompt_cache_key"] == expected
    assert b"alice" not in fake_openai.last_request.body

    await run(official, [InputEntry("user", "hi")])  # no conversation: no key
    assert "prompt_cache_key" not in fake_openai.last_request.json

    override = ModelSettings(provider_options={"openai": {"prompt_cache_key": "mine"}})
    await run(official, view, settings=override)
    assert fake_openai.last_request.json["prompt_cache_key"] == "mine"

    off = ModelSettings(provider_options={"openai": {"prompt_cache_key": None}})
    await run(official, view, settings=off)
    assert "prompt_cache_key" not in fake_openai.last_request.json

    await run(openai(fake_openai), view)  # a compatible server: not sent unless asked
    assert "prompt_cache_key" not in fake_openai.last_request.json


# --------------------------------------------------------------------------- cache breaks


def cache_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "lovia.providers.cache"]


def anthropic_read(read: int) -> Reply:
    return ant.text("ok", usage=ant.usage(input=50, cache_read=read))


def conversation(*more: TranscriptEntry, system: str = "sys") -> list[TranscriptEntry]:
    return [
        InputEntry("system", system),
        InputEntry("user", "first"),
        AssistantTextEntry("answer"),
        InputEntry("user", "second"),
        *more,
    ]


NEXT = (AssistantTextEntry("more"), InputEntry("user", "third"))


@pytest.mark.parametrize(
    ("changed", "tools", "entries", "part"),
    [
        ("tools", schemas(3), conversation(*NEXT), "tools"),
        ("system", schemas(2), conversation(*NEXT, system="other"), "system"),
        (
            "message",
            schemas(2),
            [conversation()[0], InputEntry("user", "FIRST"), *conversation(*NEXT)[2:]],
            "message 0",
        ),
    ],
)
async def test_anthropic_cache_break_names_the_changed_part(
    fake_anthropic: FakeAnthropic,
    caplog: pytest.LogCaptureFixture,
    changed: str,
    tools: list[dict[str, Any]],
    entries: list[TranscriptEntry],
    part: str,
) -> None:
    fake_anthropic.script(anthropic_read(0), anthropic_read(6000), anthropic_read(200))
    p = provider(fake_anthropic)
    with caplog.at_level(logging.INFO, logger="lovia.providers.cache"):
        await run(p, ModelView(conversation(), conversation="c"), tools=schemas(2))
        await run(p, ModelView(conversation(), conversation="c"), tools=schemas(2))
        assert not cache_records(caplog)  # a read that grows is no break
        await run(p, ModelView(entries, conversation="c"), tools=tools)
    [record] = cache_records(caplog)
    assert record.levelno == logging.WARNING and record.name == "lovia.providers.cache"
    message = record.getMessage()
    assert f"; {part} changed" in message and "from 6000 to 200" in message


async def test_no_break_reported_after_a_compaction_or_for_another_conversation(
    fake_anthropic: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    fake_anthropic.script(anthropic_read(6000), anthropic_read(100), anthropic_read(50))
    p = provider(fake_anthropic)
    edited = [InputEntry("system", "sys"), InputEntry("user", "<summary>")]
    with caplog.at_level(logging.INFO, logger="lovia.providers.cache"):
        await run(p, ModelView(conversation(), conversation="c"))
        await run(p, ModelView(edited, conversation="c", rewritten=True))
        await run(p, ModelView(edited[:1], conversation="other"))
    assert not cache_records(caplog)


async def test_an_unchanged_prefix_that_misses_is_only_noted(
    fake_anthropic: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    fake_anthropic.script(anthropic_read(6000), anthropic_read(0))
    p = provider(fake_anthropic)
    with caplog.at_level(logging.INFO, logger="lovia.providers.cache"):
        await run(p, ModelView(conversation(), conversation="c"))
        await run(p, ModelView(conversation(*NEXT), conversation="c"))
    [record] = cache_records(caplog)
    assert record.levelno == logging.INFO and "expired" in record.getMessage()


async def test_openai_cache_break_names_the_system_prompt_or_a_message(
    fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    fake_openai.script(
        *(oai.text("ok", usage=oai.usage(prompt=9000, cached=read)) for read in (8000, 100))
    )
    fake_openai.script(
        *(oai.text("ok", usage=oai.usage(prompt=9000, cached=read)) for read in (8000, 100))
    )
    p = openai(fake_openai)
    with caplog.at_level(logging.WARNING, logger="lovia.providers.cache"):
        await run(p, ModelView(conversation(), conversation="c"))
        await run(p, ModelView(conversation(*NEXT, system="new"), conversation="c"))
        await run(p, ModelView(conversation(*NEXT, system="new"), conversation="c"))
        edited = conversation(*NEXT, system="new")
        edited[3] = InputEntry("user", "SECOND")
        await run(p, ModelView(edited, conversation="c"))
    assert [r.getMessage().split("; ")[1] for r in cache_records(caplog)] == [
        "system changed since the previous call of this conversation",
        "message 3 changed since the previous call of this conversation",
    ]


async def test_summary_calls_write_no_conversation_cache(fake_anthropic: FakeAnthropic) -> None:
    """A compaction's summary prompt is sent once: marking its tail would only pay 1.25x."""
    from lovia.context import CompactionRequest, LLMSummarizer

    fake_anthropic.script(ant.text("## Summary\nall done", usage=ant.usage(input=900)))
    summarizer = LLMSummarizer(provider(fake_anthropic), required_sections=None)
    req = CompactionRequest(entries=[], usage=Usage())
    summary = await summarizer.summarize(history(3), req=req)
    assert summary.startswith("## Summary")
    body = fake_anthropic.last_request.json
    assert marked(body) == [] and body["system"][0]["cache_control"] == EPHEMERAL
    assert req.usage == Usage(input_tokens=900, output_tokens=5)


async def test_responses_cache_break_names_the_changed_part(
    fake_responses: FakeOpenAIResponses, caplog: pytest.LogCaptureFixture
) -> None:
    fake_responses.script(
        *(rsp.text("ok", usage=rsp.usage(input=9000, cached=read)) for read in (8000, 100, 100))
    )
    p = OpenAIResponsesProvider("gpt-fake", base_url=fake_responses.base_url, api_key="k")
    with caplog.at_level(logging.WARNING, logger="lovia.providers.cache"):
        await run(p, ModelView(conversation(), conversation="c"), tools=schemas(2))
        await run(p, ModelView(conversation(*NEXT), conversation="c"), tools=schemas(3))
        await run(p, ModelView(conversation(*NEXT), conversation="other"), tools=schemas(3))
    [record] = cache_records(caplog)
    assert "; tools changed" in record.getMessage()
