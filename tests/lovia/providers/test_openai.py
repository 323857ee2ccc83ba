"""OpenAIChatProvider driving the real openai SDK over HTTP against the local fake server."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from lovia.exceptions import ContextOverflowError, ProviderError, RunCancelled, UserError
from lovia.messages import Usage
from lovia.parts import FilePart, ImagePart, TextPart
from lovia.providers.base import ModelSettings
from lovia.providers.openai import OpenAIChatProvider
from lovia.reliability import CancelToken, RetryPolicy
from lovia.runtime.model_turn import _StreamReset, stream_with_retries
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    TextDelta,
    ToolCallDelta,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)
from tests.lovia.providers.helpers import Sleeps, fold, run
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_server import json_reply

HI: list[TranscriptEntry] = [InputEntry("user", "hi")]


def provider(server: FakeOpenAI, **kw: Any) -> OpenAIChatProvider:
    kw.setdefault("api_key", "test-key")
    kw.setdefault("timeout", 5.0)
    return OpenAIChatProvider("fake-model", base_url=server.base_url, **kw)


def policy(attempts: int = 3, sleeps: Sleeps | None = None) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=attempts, backoff_base=0.0, sleep=sleeps if sleeps is not None else Sleeps()
    )


async def with_retries(
    p: OpenAIChatProvider, retry: RetryPolicy, entries: list[TranscriptEntry] = HI, **kw: Any
) -> list[Any]:
    return [
        d
        async for d in stream_with_retries(
            p, entries, tools=None, response_format=None, settings=None, retry=retry, **kw
        )
    ]


# --------------------------------------------------------------------------- streaming


async def test_text_streams_as_deltas_with_usage_and_finish(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text("Hel", "lo", " world", usage=oai.usage(12, 3)))
    result = await run(provider(fake_openai), HI)
    texts = [d.text for d in result.deltas if isinstance(d, TextDelta)]
    assert texts == ["Hel", "lo", " world"]
    assert result.usage == Usage(input_tokens=12, output_tokens=3)
    assert result.finish == "stop"
    request = fake_openai.last_request
    assert request.path == "/v1/chat/completions"
    assert request.json == {
        "model": "fake-model",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.headers["content-type"] == "application/json"


async def test_cached_prompt_tokens_are_reported(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text("ok", usage=oai.usage(prompt=100, completion=7, cached=60)))
    result = await run(provider(fake_openai), HI)
    assert result.usage == Usage(input_tokens=100, output_tokens=7, cache_read_tokens=60)


async def test_parallel_tool_calls_assembled_from_interleaved_fragments(
    fake_openai: FakeOpenAI,
) -> None:
    weather = {"city": "Zürich", "units": "metric", "days": [1, 2, 3]}
    fake_openai.script(
        oai.tool_calls(
            oai.call("get_weather", weather, id="call_a"),
            oai.call("add", {"a": 2, "b": 3}, id="call_b"),
            chunk_size=3,
            interleave=True,
        )
    )
    result = await run(provider(fake_openai), HI)
    assert result.finish == "tool_calls"
    assert result.calls[0]["id"] == "call_a" and result.calls[0]["name"] == "get_weather"
    assert json.loads(result.calls[0]["arguments"]) == weather
    assert result.calls[1] == {"id": "call_b", "name": "add", "arguments": '{"a": 2, "b": 3}'}
    fragments = [d for d in result.deltas if isinstance(d, ToolCallDelta)]
    assert len(fragments) > 10
    assert all(f.call_id == ("call_a" if f.index == 0 else "call_b") for f in fragments)


async def test_tool_round_trip_sends_calls_and_results_back(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text("5"))
    entries: list[TranscriptEntry] = [
        InputEntry("system", "be brief"),
        InputEntry("user", "add 2 and 3"),
        ToolCallEntry("c1", "add", '{"a":2,"b":3}'),
        ToolCallEntry("c2", "add", '{"a": 1, "b": 1}'),
        ToolResultEntry("c1", "5"),
        ToolResultEntry("c2", "2", is_error=False),
    ]
    tools = [{"type": "function", "function": {"name": "add", "parameters": {}}}]
    await run(provider(fake_openai), entries, tools=tools)
    body = fake_openai.last_request.json
    assert body["tools"] == tools
    assert body["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "add 2 and 3"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a":2,"b":3}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 1, "b": 1}'},
                },
            ],
        },
        {"role": "tool", "content": "5", "tool_call_id": "c1"},
        {"role": "tool", "content": "2", "tool_call_id": "c2"},
    ]


async def test_reasoning_content_streams_and_round_trips(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text("42", reasoning=("think", "ing")), oai.text("ok"))
    p = provider(fake_openai)
    result = await run(p, HI)
    assert result.reasoning == "thinking"
    assert result.completed == [ReasoningEntry("thinking", provider="openai-chat")]
    history = [*HI, *result.completed, AssistantTextEntry("42"), InputEntry("user", "why?")]
    await run(p, history)
    assistant = fake_openai.last_request.json["messages"][1]
    assert assistant == {"role": "assistant", "content": "42", "reasoning_content": "thinking"}


async def test_official_dialect_does_not_replay_reasoning(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text("ok"))
    p = provider(fake_openai, official_dialect=True)
    history = [*HI, ReasoningEntry("hidden", provider="openai-chat"), AssistantTextEntry("x")]
    await run(p, history)
    assert fake_openai.last_request.json["messages"][1] == {"role": "assistant", "content": "x"}


async def test_settings_structured_output_and_provider_options(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text('{"answer": 42}'), oai.text("ok"))
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": {"type": "object"}, "strict": True},
    }
    settings = ModelSettings(
        temperature=0.2,
        max_tokens=100,
        stop=["END"],
        parallel_tool_calls=False,
        provider_options={"openai": {"seed": 7, "stream_options": None}},
    )
    official = provider(fake_openai, official_dialect=True)
    assert official.supports_json_schema
    result = await run(official, HI, response_format=response_format, settings=settings)
    assert json.loads(result.text) == {"answer": 42}
    body = fake_openai.last_request.json
    assert body["response_format"] == response_format
    assert body["max_completion_tokens"] == 100 and "max_tokens" not in body
    assert body["temperature"] == 0.2 and body["stop"] == ["END"]
    assert body["parallel_tool_calls"] is False and body["seed"] == 7
    assert "stream_options" not in body and "top_p" not in body
    local = provider(fake_openai)
    assert not local.supports_json_schema
    await run(local, HI, settings=ModelSettings(max_tokens=50))
    assert fake_openai.last_request.json["max_tokens"] == 50


async def test_images_and_files_in_user_input(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text("ok"))
    content = [
        TextPart("look"),
        ImagePart(data="aGk=", mime_type="image/png", detail="low"),
        ImagePart(url="https://x/y.png"),
        FilePart(data="aGk=", mime_type="application/pdf", filename="a.pdf"),
    ]
    await run(provider(fake_openai), [InputEntry("user", content)])
    assert fake_openai.last_request.json["messages"][0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk=", "detail": "low"}},
        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
        {
            "type": "file",
            "file": {"file_data": "data:application/pdf;base64,aGk=", "filename": "a.pdf"},
        },
    ]


async def test_file_urls_are_rejected_before_any_request(fake_openai: FakeOpenAI) -> None:
    entries: list[TranscriptEntry] = [InputEntry("user", [FilePart(url="https://x/a.pdf")])]
    with pytest.raises(UserError, match="does not support FilePart URL inputs"):
        await run(provider(fake_openai), entries)
    assert fake_openai.requests == []


async def test_tool_images_follow_in_one_user_message_when_vision_is_on(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(oai.text("ok"), oai.text("ok"))
    shot = ImagePart(data="aGk=", mime_type="image/png")
    entries: list[TranscriptEntry] = [
        *HI,
        ToolCallEntry("c1", "shot", "{}"),
        ToolResultEntry("c1", "took it", parts=[TextPart("took it"), shot]),
        InputEntry("user", "and?"),
    ]
    await run(provider(fake_openai, supports_vision=True), entries)
    messages = fake_openai.last_request.json["messages"]
    assert messages[2]["role"] == "tool" and messages[2]["content"].startswith("took it")
    assert "image" in messages[2]["content"][len("took it") :]
    assert messages[3]["role"] == "user"
    label, image = messages[3]["content"]
    assert "c1" in label["text"]
    assert image == {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGk="}}
    assert messages[4] == {"role": "user", "content": "and?"}
    await run(provider(fake_openai), entries)
    assert [m["role"] for m in fake_openai.last_request.json["messages"]] == [
        "user",
        "assistant",
        "tool",
        "user",
    ]


# --------------------------------------------------------------------------- failures


async def test_rate_limit_error_carries_retry_after(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.rate_limited("2"))
    with pytest.raises(ProviderError) as info:
        await run(provider(fake_openai), HI)
    err = info.value
    assert err.status_code == 429 and err.retryable is True and err.retry_after == 2.0
    assert err.vendor == "openai" and err.model == "fake-model"
    assert "Rate limit" in (err.body or "")


async def test_429_is_retried_after_the_servers_retry_after(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.rate_limited("2"), oai.text("ok"))
    sleeps = Sleeps()
    deltas = await with_retries(provider(fake_openai), policy(sleeps=sleeps))
    assert fold(deltas).text == "ok"
    assert sleeps == [2.0]
    assert len(fake_openai.stream_requests()) == 2


async def test_500_then_success_without_output_discarded(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        oai.error(500, "The server had an error", type="server_error"), oai.text("ok")
    )
    deltas = await with_retries(provider(fake_openai), policy())
    assert not any(isinstance(d, _StreamReset) for d in deltas)
    assert fold([d for d in deltas if not isinstance(d, _StreamReset)]).text == "ok"


async def test_client_errors_are_final(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.error(401, "Incorrect API key provided"))
    with pytest.raises(ProviderError) as info:
        await with_retries(provider(fake_openai), policy())
    assert info.value.retryable is False and info.value.status_code == 401
    assert "OPENAI_API_KEY" in str(info.value)
    assert len(fake_openai.stream_requests()) == 1


async def test_stream_cut_mid_answer_retries_cleanly(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text("Hel", "lo", " wor", "ld").cut(after=3), oai.text("Hello world"))
    deltas = await with_retries(provider(fake_openai), policy())
    resets = [i for i, d in enumerate(deltas) if isinstance(d, _StreamReset)]
    assert len(resets) == 1 and deltas[resets[0]].visible
    before = "".join(d.text for d in deltas[: resets[0]] if isinstance(d, TextDelta))
    after = fold([d for d in deltas[resets[0] + 1 :]]).text
    assert before == "Hello"
    assert after == "Hello world"


async def test_cut_stream_is_a_retryable_provider_error(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text("Hel", "lo").cut(after=2))
    with pytest.raises(ProviderError, match="broke off") as info:
        await run(provider(fake_openai), HI)
    assert info.value.retryable is True


async def test_clean_end_without_finish_is_a_truncated_response(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text("Hel", "lo").truncate(after=3))
    with pytest.raises(ProviderError, match="truncated response") as info:
        await run(provider(fake_openai), HI)
    assert info.value.retryable is True


@pytest.mark.parametrize(
    "reply",
    [
        oai.context_overflow(window=128_000),
        oai.error(413, "Request too large for model: maximum context length is 128000 tokens"),
    ],
)
async def test_context_overflow_reports_the_window(fake_openai: FakeOpenAI, reply: Any) -> None:
    fake_openai.script(reply)
    with pytest.raises(ContextOverflowError) as info:
        await with_retries(provider(fake_openai), policy())
    assert info.value.reported_window == 128_000
    assert "context window" in str(info.value)
    assert len(fake_openai.stream_requests()) == 1


async def test_llama_cpp_context_error_is_an_overflow(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(
        oai.error(
            400,
            "the request exceeds the available context size, try increasing it",
            type="exceed_context_size_error",
        )
    )
    with pytest.raises(ContextOverflowError):
        await run(provider(fake_openai), HI)


async def test_in_stream_error_object(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.stream_error("The server had an error", after=oai.text("par")))
    with pytest.raises(ProviderError, match="OpenAI Chat stream error") as info:
        await run(provider(fake_openai), HI)
    assert info.value.retryable is True


async def test_json_error_object_with_status_200(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(json_reply(200, {"error": {"message": "model overloaded", "code": 503}}))
    with pytest.raises(ProviderError, match="model overloaded") as info:
        await run(provider(fake_openai), HI)
    assert info.value.retryable is True and info.value.status_code == 503


async def test_server_without_streaming_is_a_final_error(fake_openai: FakeOpenAI) -> None:
    completion = {"object": "chat.completion", "choices": [{"message": {"content": "hi"}}]}
    fake_openai.script(json_reply(200, completion))
    with pytest.raises(ProviderError, match="instead of an event stream") as info:
        await with_retries(provider(fake_openai), policy())
    assert info.value.retryable is False
    assert "OPENAI_BASE_URL" in str(info.value)
    assert len(fake_openai.stream_requests()) == 1


async def test_server_that_never_answers_times_out(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text("x").stall())
    with pytest.raises(ProviderError, match="timed out") as info:
        await run(provider(fake_openai, timeout=0.3), HI)
    assert info.value.retryable is True
    assert "LOVIA_PROVIDER_TIMEOUT" in str(info.value)


async def test_stream_that_stalls_mid_answer_times_out(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text("Hel", "lo").hang(after=2), oai.text("Hello"))
    deltas = await with_retries(provider(fake_openai, timeout=0.3), policy())
    assert any(isinstance(d, _StreamReset) for d in deltas)
    assert fold([d for d in deltas if not isinstance(d, _StreamReset)]).text.endswith("Hello")


async def test_malformed_sse_lines_are_skipped_with_a_warning(
    fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    good = oai.text("ok").events
    fake_openai.script(
        oai.raw(
            good[0],
            "data: {broken json\n\n",
            ": keep-alive comment\n\n",
            "garbage without a field name\n\n",
            "data: [1, 2, 3]\n\n",
            *good[1:],
        )
    )
    with caplog.at_level(logging.WARNING, logger="lovia.providers"):
        result = await run(provider(fake_openai), HI)
    assert result.text == "ok" and result.finish == "stop"
    assert "provider.bad_sse" in caplog.text and "2 malformed" in caplog.text


async def test_entirely_malformed_stream_is_retryable(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.raw("<html>502 Bad Gateway</html>\n"))
    with pytest.raises(ProviderError, match="truncated") as info:
        await run(provider(fake_openai), HI)
    assert info.value.retryable is True


# --------------------------------------------------------------------------- connections


async def test_one_connection_serves_every_turn_and_provider(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(*(oai.text(f"answer {i}") for i in range(6)))
    first = provider(fake_openai)
    for _ in range(3):
        await run(first, HI)
    await first.aclose()
    second = provider(fake_openai)  # a later run: new provider, same endpoint
    for _ in range(3):
        assert (await run(second, HI)).text.startswith("answer")
    assert fake_openai.connections == 1


async def test_consumer_closing_the_stream_releases_the_connection(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.script(oai.text(*["x"] * 500).slow(event_delay=0.01), oai.text("next"))
    p = provider(fake_openai)
    stream = p.stream(HI)
    assert isinstance(await anext(stream), TextDelta) or True
    await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.to_thread(fake_openai.wait_for_open_connections, 0)
    assert (await run(p, HI)).text == "next"
    assert fake_openai.connections == 2


async def test_cancelling_the_task_releases_the_connection(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text(*["x"] * 500).slow(event_delay=0.01))
    p = provider(fake_openai)
    started = asyncio.Event()

    async def consume() -> None:
        async for _ in p.stream(HI):
            started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.to_thread(fake_openai.wait_for_open_connections, 0)


async def test_cancel_token_stops_the_stream(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text(*["x"] * 500).slow(event_delay=0.01))
    token = CancelToken()
    seen = 0
    with pytest.raises(RunCancelled):
        async for d in stream_with_retries(
            provider(fake_openai),
            HI,
            tools=None,
            response_format=None,
            settings=None,
            retry=policy(),
            cancel_token=token,
        ):
            seen += isinstance(d, TextDelta)
            if seen == 3:
                token.cancel("user pressed stop")
    assert seen == 3
    await asyncio.to_thread(fake_openai.wait_for_open_connections, 0)


# --------------------------------------------------------------------------- configuration


async def test_keyless_local_server_gets_no_auth_header(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake_openai.script(oai.text("ok"))
    p = OpenAIChatProvider("fake-model", base_url=fake_openai.base_url)
    assert (await run(p, HI)).text == "ok"
    assert "authorization" not in fake_openai.last_request.headers


async def test_user_headers_are_sent_but_never_replace_the_key(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text("ok"))
    p = provider(fake_openai, default_headers={"X-Team": "blue", "Authorization": "Bearer user"})
    await run(p, HI)
    headers = fake_openai.last_request.headers
    assert headers["x-team"] == "blue"
    assert headers["authorization"] == "Bearer test-key"


async def test_environment_configures_base_url_and_key(
    fake_openai: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url + "/")
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    fake_openai.script(oai.text("ok"))
    p = OpenAIChatProvider("fake-model")
    assert p.base_url == fake_openai.base_url
    await run(p, HI)
    assert fake_openai.last_request.headers["authorization"] == "Bearer env-key"


async def test_missing_key_for_the_official_host_is_a_user_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    p = OpenAIChatProvider("gpt-5")
    with pytest.raises(UserError) as info:
        await run(p, HI)
    assert "OPENAI_API_KEY" in str(info.value)


async def test_unreachable_base_url_is_final_and_names_the_variable() -> None:
    p = OpenAIChatProvider("m", base_url="http://127.0.0.1:9/v1", api_key="k", timeout=2)
    with pytest.raises(ProviderError) as info:
        await run(p, HI)
    assert info.value.retryable is False  # nothing listening: a setting to fix, not a blip
    assert "OPENAI_BASE_URL" in str(info.value)


async def test_wrong_path_404_hints_at_the_base_url(fake_openai: FakeOpenAI) -> None:
    p = OpenAIChatProvider("fake-model", base_url=fake_openai.url, api_key="k")  # no /v1
    with pytest.raises(ProviderError) as info:
        await run(p, HI)
    assert info.value.status_code == 404 and info.value.retryable is False
    assert "OPENAI_BASE_URL" in str(info.value) and "/v1" in str(info.value)


def test_bad_base_url_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8000/v1")
    with pytest.raises(UserError) as info:
        OpenAIChatProvider("m")
    assert "OPENAI_BASE_URL" in str(info.value)


def test_capabilities_follow_the_host() -> None:
    official = OpenAIChatProvider("gpt-5", base_url="https://api.openai.com/v1", api_key="k")
    assert official.supports_json_schema and official.supports_vision
    assert not official.replay_reasoning
    local = OpenAIChatProvider("m", base_url="http://localhost:8000/v1")
    assert not local.supports_json_schema and not local.supports_vision
    assert local.replay_reasoning
    deepseek = OpenAIChatProvider(
        "deepseek-v4-pro", base_url="https://api.deepseek.com/v1", official_dialect=True
    )
    assert deepseek.replay_reasoning
    assert deepseek.context_window() == 1_048_565
    assert official.context_window() == 400_000


async def test_context_window_discovered_once_from_models(fake_openai: FakeOpenAI) -> None:
    fake_openai.models = [{"id": "fake-model", "object": "model", "max_model_len": 32768}]
    first = provider(fake_openai)
    assert first.context_window() is None
    assert await first.discover_context_window() == 32768
    second = provider(fake_openai)
    assert second.context_window() == 32768
    assert await second.discover_context_window() == 32768
    gets = [r for r in fake_openai.requests if r.method == "GET"]
    assert [r.path for r in gets] == ["/v1/models"]
    assert gets[0].headers["authorization"] == "Bearer test-key"


async def test_concurrent_discoveries_share_one_probe(fake_openai: FakeOpenAI) -> None:
    fake_openai.models = [{"id": "fake-model", "object": "model", "max_model_len": 65536}]
    windows = await asyncio.gather(
        *(provider(fake_openai).discover_context_window() for _ in range(3))
    )
    assert windows == [65536] * 3
    assert [r.path for r in fake_openai.requests if r.method == "GET"] == ["/v1/models"]


async def test_warm_up_opens_the_connection_the_first_request_reuses(
    fake_openai: FakeOpenAI,
) -> None:
    fake_openai.models = [{"id": "fake-model", "object": "model", "max_model_len": 32768}]
    await provider(fake_openai).warm_up()  # a host, at start-up
    assert fake_openai.connections == 1 and len(fake_openai.requests) == 1
    fake_openai.script(oai.text("hi"))
    first_run = provider(fake_openai)
    assert await first_run.discover_context_window() == 32768  # no second probe
    assert (await run(first_run, HI)).text == "hi"
    assert fake_openai.connections == 1
    assert [r.method for r in fake_openai.requests] == ["GET", "POST"]


async def test_warm_up_never_raises_and_leaves_an_unusable_endpoint_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    keyless = OpenAIChatProvider("gpt-4.1", base_url="https://api.openai.com/v1", api_key=None)
    await keyless.warm_up()  # no key for the official host: nothing is sent, nothing raised
    nowhere = OpenAIChatProvider("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    await nowhere.warm_up()  # connection refused: logged, not raised


async def test_official_host_is_never_probed() -> None:
    p = OpenAIChatProvider("gpt-4.1-2025-04-14", base_url="https://api.openai.com/v1", api_key="k")
    assert await p.discover_context_window() == 1_047_576


async def test_failed_discovery_is_silent(fake_openai: FakeOpenAI) -> None:
    p = provider(fake_openai)
    assert await p.discover_context_window() is None  # no model listed
