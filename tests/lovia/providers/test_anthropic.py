"""AnthropicProvider driving the real anthropic SDK over HTTP against the local fake server."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from lovia.exceptions import ContextOverflowError, ProviderError, UserError
from lovia.messages import Usage
from lovia.parts import FilePart, ImagePart, TextPart
from lovia.providers.anthropic import AnthropicProvider, _to_anthropic_messages
from lovia.providers.base import ModelSettings
from lovia.reliability import RetryPolicy
from lovia.runtime.model_turn import _StreamReset, stream_with_retries
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    TextDelta,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)
from tests.lovia.providers.helpers import Sleeps, fold, run
from tests.support import fake_anthropic as ant
from tests.support.fake_anthropic import FakeAnthropic

HI: list[TranscriptEntry] = [InputEntry("user", "hi")]


def provider(server: FakeAnthropic, **kw: Any) -> AnthropicProvider:
    kw.setdefault("api_key", "test-key")
    kw.setdefault("timeout", 5.0)
    return AnthropicProvider("claude-fake", base_url=server.base_url, **kw)


async def with_retries(p: AnthropicProvider, sleeps: Sleeps | None = None) -> list[Any]:
    retry = RetryPolicy(
        max_attempts=3, backoff_base=0.0, sleep=sleeps if sleeps is not None else Sleeps()
    )
    return [
        d
        async for d in stream_with_retries(
            p, HI, tools=None, response_format=None, settings=None, retry=retry
        )
    ]


# --------------------------------------------------------------------------- streaming


async def test_thinking_and_text_stream_with_completed_entries(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.script(
        ant.message(
            ant.thinking_block("Let me ", "think.", signature="sig-123"),
            ant.text_block("Hel", "lo"),
            usage=ant.usage(input=12, output=4),
        )
    )
    result = await run(provider(fake_anthropic), [InputEntry("system", "be nice"), *HI])
    assert result.reasoning == "Let me think."
    assert result.text == "Hello"
    assert result.completed == [
        ReasoningEntry("Let me think.", provider="anthropic", metadata={"signature": "sig-123"}),
        AssistantTextEntry("Hello"),
    ]
    assert result.usage == Usage(input_tokens=12, output_tokens=4)
    assert result.finish == "stop"
    request = fake_anthropic.last_request
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "test-key"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    cached = {"type": "ephemeral"}  # prompt caching is on by default
    assert request.json == {
        "model": "claude-fake",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": cached}]}
        ],
        "max_tokens": 16384,
        "system": [{"type": "text", "text": "be nice", "cache_control": cached}],
        "stream": True,
    }


async def test_cache_tokens_count_as_input(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(
        ant.text("ok", usage=ant.usage(input=10, output=5, cache_read=100, cache_write=20))
    )
    result = await run(provider(fake_anthropic), HI)
    assert result.usage == Usage(
        input_tokens=130, output_tokens=5, cache_read_tokens=100, cache_write_tokens=20
    )


async def test_parallel_tool_use_split_into_many_fragments(fake_anthropic: FakeAnthropic) -> None:
    args = {"path": "src/main.py", "lines": [1, 2, 3], "note": "ünïcode"}
    fake_anthropic.script(
        ant.tool_use(
            ant.tool_block("read", args, id="toolu_1", chunk_size=4),
            ant.tool_block("add", {"a": 1}, id="toolu_2", chunk_size=2),
            text="Reading.",
        )
    )
    result = await run(provider(fake_anthropic), HI)
    assert result.finish == "tool_calls"
    calls = [e for e in result.completed if isinstance(e, ToolCallEntry)]
    assert [(c.call_id, c.name) for c in calls] == [("toolu_1", "read"), ("toolu_2", "add")]
    assert json.loads(calls[0].arguments) == args
    assert json.loads(calls[1].arguments) == {"a": 1}
    assert [c["arguments"] for c in result.calls.values()] == [c.arguments for c in calls]


async def test_tool_without_arguments_completes_with_empty_object(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.script(ant.tool_use(ant.tool_block("now", "")))
    result = await run(provider(fake_anthropic), HI)
    assert result.completed == [ToolCallEntry("toolu_now", "now", "{}")]


@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [("max_tokens", "length"), ("stop_sequence", "stop"), ("refusal", "refusal")],
)
async def test_stop_reasons_are_normalized(
    fake_anthropic: FakeAnthropic, stop_reason: str, finish: str
) -> None:
    fake_anthropic.script(ant.text("x", stop_reason=stop_reason))
    assert (await run(provider(fake_anthropic), HI)).finish == finish


async def test_thinking_round_trip_with_signature_and_tool_results(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.script(ant.text("done"))
    history: list[TranscriptEntry] = [
        *HI,
        ReasoningEntry("plan", provider="anthropic", metadata={"signature": "sig-1"}),
        ReasoningEntry("", provider="anthropic", metadata={"redacted": "opaque"}),
        ReasoningEntry("foreign", provider="openai-chat"),
        ToolCallEntry("t1", "read", '{"path": "a"}'),
        ToolCallEntry("t2", "read", "[1]"),
        ToolResultEntry("t1", "content a"),
        ToolResultEntry("t2", "boom", is_error=True),
        InputEntry("user", "continue"),
    ]
    await run(provider(fake_anthropic), history)
    messages = fake_anthropic.last_request.json["messages"]
    cached = {"type": "ephemeral"}  # the tail and the previous call's tail
    assert messages[0] == {
        "role": "user",
        "content": [{"type": "text", "text": "hi", "cache_control": cached}],
    }
    assert messages[1] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "plan", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}},
            {"type": "tool_use", "id": "t2", "name": "read", "input": {"_raw": "[1]"}},
        ],
    }
    assert messages[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "content a"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "boom", "is_error": True},
            {"type": "text", "text": "continue", "cache_control": cached},
        ],
    }


async def test_official_dialect_replays_thinking_only_when_enabled(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.script(ant.text("a"), ant.text("b"))
    history: list[TranscriptEntry] = [
        *HI,
        ReasoningEntry("plan", provider="anthropic", metadata={"signature": "s"}),
        AssistantTextEntry("answer"),
        InputEntry("user", "more"),
    ]
    p = provider(fake_anthropic, official_dialect=True)
    await run(p, history)
    assert fake_anthropic.last_request.json["messages"][1]["content"] == [
        {"type": "text", "text": "answer"}
    ]
    thinking = {"type": "enabled", "budget_tokens": 2048}
    settings = ModelSettings(provider_options={"anthropic": {"thinking": thinking}})
    await run(p, history, settings=settings)
    body = fake_anthropic.last_request.json
    assert body["thinking"] == thinking
    assert body["messages"][1]["content"][0]["type"] == "thinking"


async def test_payload_settings_structured_output_and_caching(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.script(ant.text('{"n": 1}'))
    tools = [
        {"type": "function", "function": {"name": "a", "description": "A", "parameters": None}},
        {"type": "function", "function": {"name": "b", "parameters": {"type": "object"}}},
    ]
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    settings = ModelSettings(
        temperature=0.5,
        max_tokens=0,
        stop=["STOP"],
        parallel_tool_calls=False,
        provider_options={"claude": {"cache_system": True, "top_k": 5}},
    )
    await run(
        provider(fake_anthropic),
        [InputEntry("system", "sys"), *HI],
        tools=tools,
        response_format={"type": "json_schema", "json_schema": {"name": "o", "schema": schema}},
        settings=settings,
    )
    body = fake_anthropic.last_request.json
    assert body["max_tokens"] == 0
    assert body["system"] == [
        {"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["tools"] == [
        {"name": "a", "description": "A", "input_schema": {"type": "object", "properties": {}}},
        {
            "name": "b",
            "description": "",
            "input_schema": {"type": "object"},
            "cache_control": {"type": "ephemeral"},
        },
    ]
    assert body["output_config"] == {"format": {"type": "json_schema", "schema": schema}}
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert body["temperature"] == 0.5 and body["stop_sequences"] == ["STOP"]
    assert body["top_k"] == 5 and "cache_system" not in body and "top_p" not in body


async def test_documents_and_images(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(ant.text("ok"))
    content = [
        TextPart("see"),
        ImagePart(data="aGk=", mime_type="image/png"),
        ImagePart(url="https://x/y.png"),
        FilePart(data="aGk=", mime_type="application/pdf", filename="a.pdf"),
        FilePart.from_bytes("héllo".encode(), mime_type="text/plain"),
        FilePart.from_url("https://x/z.pdf"),
    ]
    await run(provider(fake_anthropic), [InputEntry("user", content)])
    assert fake_anthropic.last_request.json["messages"][0]["content"] == [
        {"type": "text", "text": "see"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGk="}},
        {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "aGk="},
            "title": "a.pdf",
        },
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "héllo"},
        },
        {
            "type": "document",
            "source": {"type": "url", "url": "https://x/z.pdf"},
            "cache_control": {"type": "ephemeral"},
        },
    ]


@pytest.mark.parametrize(
    "part",
    [
        FilePart.from_url("https://x/a.docx", mime_type="application/msword"),
        FilePart.from_bytes(b"x", mime_type="application/zip"),
        FilePart.from_bytes(b"\xff\xfe", mime_type="text/plain"),
    ],
)
def test_unsupported_files_are_user_errors(part: FilePart) -> None:
    with pytest.raises(UserError):
        _to_anthropic_messages([InputEntry("user", [part])])


def test_message_assembly_rules() -> None:
    system, messages = _to_anthropic_messages(
        [
            InputEntry("system", "one"),
            InputEntry("user", "hi"),
            InputEntry("user", "again"),
            InputEntry("system", "two"),
            AssistantTextEntry("a"),
            InputEntry("user", ""),  # skipped without ending the assistant turn
            AssistantTextEntry("b"),
            ReasoningEntry("only thinking", provider="anthropic"),
            ToolResultEntry("t0", "orphan-free"),
            ReasoningEntry("dangling", provider="anthropic"),
        ]
    )
    assert system == [{"type": "text", "text": "one\n\ntwo"}]
    assert messages == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "text", "text": "\n\n"},
                {"type": "text", "text": "again"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "a"},
                {"type": "text", "text": "b"},
                {"type": "thinking", "thinking": "only thinking"},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t0", "content": "orphan-free"}],
        },
    ]


def test_tool_result_images_need_vision() -> None:
    parts = [
        TextPart("shot"),
        ImagePart(data="aGk=", mime_type="image/png"),
        FilePart.from_url("https://x/f.pdf"),
    ]
    entries: list[TranscriptEntry] = [ToolResultEntry("t", "shot", parts=parts)]
    _, plain = _to_anthropic_messages(entries)
    assert plain[0]["content"][0]["content"] == "shot"
    _, vision = _to_anthropic_messages(entries, include_images=True)
    assert vision[0]["content"][0]["content"] == [
        {"type": "text", "text": "shot"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGk="}},
        {"type": "text", "text": "[file: https://x/f.pdf]"},
    ]


# --------------------------------------------------------------------------- failures


async def test_429_is_retried_after_the_servers_retry_after(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(ant.rate_limited("3"), ant.text("ok"))
    sleeps = Sleeps()
    deltas = await with_retries(provider(fake_anthropic), sleeps)
    assert fold(deltas).text == "ok"
    assert sleeps == [3.0]


async def test_overloaded_then_success(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(
        ant.overloaded(), ant.error(500, "Internal error", type="api_error"), ant.text("ok")
    )
    deltas = await with_retries(provider(fake_anthropic))
    assert fold(deltas).text == "ok"
    assert len(fake_anthropic.stream_requests()) == 3


async def test_overloaded_error_event_mid_stream_retries(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(ant.stream_error(after=ant.text("Hel", "lo")), ant.text("Hello"))
    deltas = await with_retries(provider(fake_anthropic))
    reset = next(i for i, d in enumerate(deltas) if isinstance(d, _StreamReset))
    assert fold(deltas[reset + 1 :]).text == "Hello"


async def test_error_event_classification(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(ant.stream_error("invalid_request_error", "bad thing"))
    with pytest.raises(ProviderError, match="Anthropic stream error: bad thing") as info:
        await run(provider(fake_anthropic), HI)
    assert info.value.retryable is False


async def test_stream_cut_mid_answer_retries_without_duplicates(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.script(ant.text("Hel", "lo", " world").cut(after=5), ant.text("Hello world"))
    deltas = await with_retries(provider(fake_anthropic))
    reset = next(i for i, d in enumerate(deltas) if isinstance(d, _StreamReset))
    assert "".join(d.text for d in deltas[:reset] if isinstance(d, TextDelta)) == "Hello"
    assert fold(deltas[reset + 1 :]).text == "Hello world"


async def test_clean_end_without_stop_is_truncated(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(ant.text("Hel", "lo").truncate(after=5))
    with pytest.raises(ProviderError, match="truncated response") as info:
        await run(provider(fake_anthropic), HI)
    assert info.value.retryable is True


async def test_context_overflow_reports_the_window(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(ant.context_overflow(tokens=210_000, maximum=200_000))
    with pytest.raises(ContextOverflowError) as info:
        await with_retries(provider(fake_anthropic))
    assert info.value.reported_window == 200_000
    assert len(fake_anthropic.stream_requests()) == 1


async def test_hung_server_times_out(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(ant.text("x").stall())
    with pytest.raises(ProviderError, match="timed out") as info:
        await run(provider(fake_anthropic, timeout=0.3), HI)
    assert info.value.retryable is True


async def test_malformed_sse_is_skipped(
    fake_anthropic: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    frames = ant.text("ok").events
    fake_anthropic.script(ant.raw(frames[0], "event: ping\ndata: {oops\n\n", *frames[1:]))
    with caplog.at_level(logging.WARNING, logger="lovia.providers"):
        result = await run(provider(fake_anthropic), HI)
    assert result.text == "ok"
    assert "provider.bad_sse" in caplog.text


async def test_one_connection_for_many_requests(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(*(ant.text(str(i)) for i in range(4)))
    for _ in range(2):
        p = provider(fake_anthropic)
        await run(p, HI)
        await run(p, HI)
        await p.aclose()
    assert fake_anthropic.connections == 1


async def test_closing_the_stream_releases_the_connection(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.script(ant.text(*["x"] * 500).slow(event_delay=0.01))
    stream = provider(fake_anthropic).stream(HI)
    async for delta in stream:
        if isinstance(delta, TextDelta):
            break
    await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.to_thread(fake_anthropic.wait_for_open_connections, 0)


# --------------------------------------------------------------------------- configuration


def test_base_url_with_or_without_v1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    assert AnthropicProvider("c").base_url == "https://api.anthropic.com/v1"
    assert AnthropicProvider("c", base_url="http://gw:8080/").base_url == "http://gw:8080/v1"
    assert AnthropicProvider("c", base_url="http://gw:8080/v1").base_url == "http://gw:8080/v1"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "gw:8080")
    with pytest.raises(UserError) as info:
        AnthropicProvider("c")
    assert "ANTHROPIC_BASE_URL" in str(info.value)


async def test_missing_key_for_the_official_host_is_a_user_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with pytest.raises(UserError) as info:
        await run(AnthropicProvider("claude-sonnet-4-5"), HI)
    assert "ANTHROPIC_API_KEY" in str(info.value)


async def test_environment_configures_the_provider(
    fake_anthropic: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in fake_anthropic.env("env-key").items():
        monkeypatch.setenv(key, value)
    fake_anthropic.script(ant.text("ok"))
    await run(AnthropicProvider("claude-fake"), HI)
    assert fake_anthropic.last_request.headers["x-api-key"] == "env-key"


def test_windows_table_and_capabilities() -> None:
    official = AnthropicProvider(
        "claude-opus-4-7", api_key="k", base_url="https://api.anthropic.com"
    )
    assert official.context_window() == 1_000_000
    assert AnthropicProvider("claude-3-5-haiku-20241022", api_key="k").context_window() == 200_000
    assert official.supports_vision and official.supports_json_schema
    assert official._models_params() == {"limit": 100}
    gateway = AnthropicProvider("claude-opus-4-7", base_url="http://gw/v1")
    assert gateway.context_window() is None and not gateway.supports_vision
    assert gateway._models_params() == {}


async def test_context_window_discovery(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.models = [{"id": "claude-fake", "type": "model", "max_input_tokens": 150_000}]
    p = provider(fake_anthropic)
    assert await p.discover_context_window() == 150_000
    get = next(r for r in fake_anthropic.requests if r.method == "GET")
    assert get.path == "/v1/models"
    assert get.headers["x-api-key"] == "test-key"
