"""OpenAIResponsesProvider driving the real openai SDK over HTTP against a local Responses fake."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from lovia.exceptions import ContextOverflowError, ProviderError, UserError
from lovia.messages import Usage
from lovia.model_view import ModelView
from lovia.parts import FilePart, ImagePart, TextPart
from lovia.providers._responses_request import message_phase
from lovia.providers.base import ModelSettings
from lovia.providers.openai_responses import OpenAIResponsesProvider, prompt_cache_key
from lovia.reliability import RetryPolicy
from lovia.runtime.model_turn import stream_with_retries
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningDelta,
    ReasoningEntry,
    TextDelta,
    ToolCallDelta,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)
from tests.lovia.providers.helpers import Sleeps, run
from tests.support import fake_openai_responses as rsp
from tests.support.fake_openai_responses import FakeOpenAIResponses, assert_sdk_accepts

HI: list[TranscriptEntry] = [InputEntry("user", "hi")]


def provider(server: FakeOpenAIResponses, **kw: Any) -> OpenAIResponsesProvider:
    kw.setdefault("api_key", "test-key")
    kw.setdefault("timeout", 5.0)
    return OpenAIResponsesProvider("fake-model", base_url=server.base_url, **kw)


def policy(attempts: int = 3, sleeps: Sleeps | None = None) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=attempts, backoff_base=0.0, sleep=sleeps if sleeps is not None else Sleeps()
    )


async def with_retries(
    p: OpenAIResponsesProvider, retry: RetryPolicy, entries: list[TranscriptEntry] = HI
) -> list[Any]:
    return [
        d
        async for d in stream_with_retries(
            p, entries, tools=None, response_format=None, settings=None, retry=retry
        )
    ]


# --------------------------------------------------------------------------- the fake itself


async def test_the_sdk_parses_the_fakes_events_into_its_typed_events(
    fake_responses: FakeOpenAIResponses,
) -> None:
    import openai
    from openai.types.responses import (
        ResponseCompletedEvent,
        ResponseFunctionCallArgumentsDeltaEvent,
        ResponseOutputItemDoneEvent,
        ResponseReasoningItem,
        ResponseReasoningSummaryTextDeltaEvent,
        ResponseTextDeltaEvent,
    )

    fake_responses.script(
        rsp.response(
            rsp.reasoning("Think.", encrypted="enc-x"),
            rsp.message("Hi"),
            rsp.function_call("f", {"x": 1}, chunk_size=4),
            usage=rsp.usage(input=2000, output=9, cached=1536),
        )
    )
    client = openai.AsyncOpenAI(base_url=fake_responses.base_url, api_key="k", max_retries=0)
    try:
        stream = await client.responses.create(model="m", input="hi", stream=True)
        events = [event async for event in stream]
    finally:
        await client.close()
    kinds = {type(e) for e in events}
    assert {
        ResponseReasoningSummaryTextDeltaEvent,
        ResponseTextDeltaEvent,
        ResponseFunctionCallArgumentsDeltaEvent,
        ResponseCompletedEvent,
    } <= kinds
    done = [e for e in events if isinstance(e, ResponseOutputItemDoneEvent)]
    assert isinstance(done[0].item, ResponseReasoningItem)
    assert done[0].item.encrypted_content == "enc-x"
    completed = events[-1]
    assert isinstance(completed, ResponseCompletedEvent)
    assert completed.response.usage is not None
    assert completed.response.usage.input_tokens_details.cached_tokens == 1536
    assert [e.sequence_number for e in events] == list(range(len(events)))


# --------------------------------------------------------------------------- streaming


async def test_text_streams_as_deltas_with_usage_and_finish(
    fake_responses: FakeOpenAIResponses,
) -> None:
    fake_responses.script(rsp.text("Hel", "lo", " world", usage=rsp.usage(12, 3)))
    result = await run(provider(fake_responses), HI)
    assert [d.text for d in result.deltas if isinstance(d, TextDelta)] == ["Hel", "lo", " world"]
    assert result.usage == Usage(input_tokens=12, output_tokens=3)
    assert result.finish == "stop"
    request = fake_responses.last_request
    assert request.path == "/v1/responses"
    assert request.json == {
        "model": "fake-model",
        "input": [{"type": "message", "role": "user", "content": "hi"}],
        "stream": True,
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    assert request.headers["authorization"] == "Bearer test-key"


async def test_cached_input_tokens_are_reported(fake_responses: FakeOpenAIResponses) -> None:
    fake_responses.script(rsp.text("ok", usage=rsp.usage(input=4096, output=7, cached=3968)))
    result = await run(provider(fake_responses), HI)
    assert result.usage == Usage(input_tokens=4096, output_tokens=7, cache_read_tokens=3968)


async def test_parallel_tool_calls_keep_stable_indexes(fake_responses: FakeOpenAIResponses) -> None:
    weather = {"city": "Zürich", "units": "metric", "days": [1, 2, 3]}
    fake_responses.script(
        rsp.tool_calls(
            rsp.function_call("get_weather", weather, call_id="call_a", chunk_size=3),
            rsp.function_call("add", '{"a": 2, "b": 3}', call_id="call_b", chunk_size=2),
            interleave=True,
        )
    )
    result = await run(provider(fake_responses), HI)
    assert result.finish == "tool_calls"
    assert result.calls[0]["id"] == "call_a" and result.calls[0]["name"] == "get_weather"
    assert json.loads(result.calls[0]["arguments"]) == weather
    assert result.calls[1] == {"id": "call_b", "name": "add", "arguments": '{"a": 2, "b": 3}'}
    fragments = [d for d in result.deltas if isinstance(d, ToolCallDelta)]
    assert len(fragments) > 10
    assert all(f.call_id == ("call_a" if f.index == 0 else "call_b") for f in fragments)
    assert all(f.name == ("get_weather" if f.index == 0 else "add") for f in fragments)


async def test_arguments_sent_only_when_done_are_not_lost(
    fake_responses: FakeOpenAIResponses,
) -> None:
    call = [e for e in rsp.function_call("add", {"a": 1}, call_id="c1") if "delta" not in e]
    fake_responses.script(rsp.response(call))
    result = await run(provider(fake_responses), HI)
    assert result.calls[0] == {"id": "c1", "name": "add", "arguments": '{"a": 1}'}
    assert result.finish == "tool_calls"


async def test_reasoning_summaries_stream_and_complete_with_encrypted_content(
    fake_responses: FakeOpenAIResponses,
) -> None:
    fake_responses.script(
        rsp.response(
            rsp.reasoning("First, add.", "Then answer.", encrypted="enc-1", id="rs_1", pieces=3),
            rsp.message("5"),
        )
    )
    result = await run(provider(fake_responses), HI)
    thoughts = [d.text for d in result.deltas if isinstance(d, ReasoningDelta)]
    assert len(thoughts) > 4
    assert result.reasoning == "First, add.\n\nThen answer."
    assert result.text == "5"
    assert result.completed == [
        ReasoningEntry(
            "First, add.\n\nThen answer.",
            id="rs_1",
            provider="openai-responses",
            metadata={
                "summary": ["First, add.", "Then answer."],
                "model": "fake-model",
                "encrypted_content": "enc-1",
            },
        )
    ]


async def test_reasoning_without_a_summary_still_completes(
    fake_responses: FakeOpenAIResponses,
) -> None:
    fake_responses.script(
        rsp.response(rsp.reasoning(encrypted="enc-2", id="rs_2"), rsp.message("ok"))
    )
    result = await run(provider(fake_responses), HI)
    assert result.reasoning == ""
    assert result.completed == [
        ReasoningEntry(
            "",
            id="rs_2",
            provider="openai-responses",
            metadata={"summary": [], "model": "fake-model", "encrypted_content": "enc-2"},
        )
    ]


async def test_raw_reasoning_text_of_open_weight_models_streams_as_reasoning(
    fake_responses: FakeOpenAIResponses,
) -> None:
    item = {"id": "rs_o", "type": "reasoning", "summary": []}
    raw_reasoning: rsp.Item = [
        {"type": "response.output_item.added", "item": item},
        *(
            {
                "type": "response.reasoning_text.delta",
                "item_id": "rs_o",
                "content_index": 0,
                "delta": d,
            }
            for d in ("Let me ", "think.")
        ),
        {
            "type": "response.output_item.done",
            "item": {**item, "content": [{"type": "reasoning_text", "text": "Let me think."}]},
        },
    ]
    fake_responses.script(rsp.response(raw_reasoning, rsp.message("ok")))
    result = await run(provider(fake_responses), HI)
    assert result.reasoning == "Let me think."
    assert [e.content for e in result.completed if isinstance(e, ReasoningEntry)] == [
        "Let me think."
    ]


async def test_whole_function_call_items_without_deltas(
    fake_responses: FakeOpenAIResponses,
) -> None:
    done = rsp.function_call("add", {"a": 1}, call_id="c1")[-1]
    fake_responses.script(rsp.response([done]))
    result = await run(provider(fake_responses), HI)
    assert result.calls[0] == {"id": "c1", "name": "add", "arguments": '{"a": 1}'}
    assert result.finish == "tool_calls"


async def test_output_limit_is_a_length_finish(fake_responses: FakeOpenAIResponses) -> None:
    fake_responses.script(rsp.response(rsp.message("cut sh"), status="incomplete"))
    result = await run(provider(fake_responses), HI)
    assert result.text == "cut sh"
    assert result.finish == "length"


# --------------------------------------------------------------------------- request


async def test_transcript_becomes_input_items(fake_responses: FakeOpenAIResponses) -> None:
    fake_responses.script(rsp.text("done"))
    entries: list[TranscriptEntry] = [
        InputEntry("system", "be brief"),
        InputEntry("user", "add 2 and 3, then 1 and 1"),
        ReasoningEntry(
            "Two adds.",
            id="rs_9",
            provider="openai-responses",
            metadata={"summary": ["Two adds."], "encrypted_content": "enc-9"},
        ),
        ReasoningEntry("not mine", provider="anthropic", metadata={"signature": "s"}),
        ReasoningEntry("no blob", id="rs_x", provider="openai-responses"),
        AssistantTextEntry("Adding."),
        ToolCallEntry("c1", "add", '{"a":2,"b":3}'),
        ToolCallEntry("c2", "add", '{"a": 1, "b": 1}'),
        ToolResultEntry("c1", "5"),
        ToolResultEntry("c2", "boom", is_error=True),
    ]
    await run(provider(fake_responses), entries)
    assert fake_responses.last_request.json["input"] == [
        {"type": "message", "role": "system", "content": "be brief"},
        {"type": "message", "role": "user", "content": "add 2 and 3, then 1 and 1"},
        {
            "type": "reasoning",
            "id": "rs_9",
            "summary": [{"type": "summary_text", "text": "Two adds."}],
            "encrypted_content": "enc-9",
        },
        {"type": "message", "role": "assistant", "content": "Adding."},
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a":2,"b":3}'},
        {"type": "function_call", "call_id": "c2", "name": "add", "arguments": '{"a": 1, "b": 1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "5"},
        {"type": "function_call_output", "call_id": "c2", "output": "boom"},
    ]
    assert_sdk_accepts(fake_responses.last_request)


async def test_reasoning_of_another_model_is_not_sent_back(
    fake_responses: FakeOpenAIResponses,
) -> None:
    fake_responses.script(rsp.text("ok"))
    blob = {"summary": [], "encrypted_content": "enc"}
    entries: list[TranscriptEntry] = [
        InputEntry("user", "hi"),
        ReasoningEntry(
            "", id="rs_a", provider="openai-responses", metadata={**blob, "model": "o3"}
        ),
        ReasoningEntry("", id="rs_b", provider="openai-responses", metadata=blob),
        ReasoningEntry(
            "", id="rs_c", provider="openai-responses", metadata={**blob, "model": "fake-model"}
        ),
        AssistantTextEntry("hello"),
    ]
    await run(provider(fake_responses), entries)
    sent = [i["id"] for i in fake_responses.last_request.json["input"] if i["type"] == "reasoning"]
    assert sent == ["rs_b", "rs_c"]


async def test_reasoning_cut_off_from_its_output_is_not_sent(
    fake_responses: FakeOpenAIResponses,
) -> None:
    fake_responses.script(rsp.text("a"), rsp.text("b"))
    blob = {"summary": [], "encrypted_content": "enc", "model": "fake-model"}
    thought = ReasoningEntry("", id="rs_1", provider="openai-responses", metadata=blob)
    p = provider(fake_responses)
    # what a context policy may leave: the reasoning, but not the answer it led to
    entries: list[TranscriptEntry] = [InputEntry("user", "hi"), thought]
    await run(p, entries)
    await run(p, [*entries, InputEntry("user", "and?")])
    for items in fake_responses.inputs():
        assert [i["type"] for i in items] == ["message"] * (len(items))
    fake_responses.script(rsp.text("c"))
    await run(p, [*entries, AssistantTextEntry("a")])  # the same objects, answered now
    assert [i["type"] for i in fake_responses.inputs()[-1]] == ["message", "reasoning", "message"]


async def test_stored_responses_replay_reasoning_by_id(fake_responses: FakeOpenAIResponses) -> None:
    fake_responses.script(rsp.text("ok"))
    entries: list[TranscriptEntry] = [
        InputEntry("user", "hi"),
        ReasoningEntry("thought", id="rs_3", provider="openai-responses"),
        AssistantTextEntry("hello"),
        InputEntry("user", "again"),
    ]
    settings = ModelSettings(provider_options={"openai-responses": {"store": True}})
    await run(provider(fake_responses), entries, settings=settings)
    body = fake_responses.last_request.json
    assert body["store"] is True
    assert body["input"][1] == {
        "type": "reasoning",
        "id": "rs_3",
        "summary": [{"type": "summary_text", "text": "thought"}],
    }


async def test_official_host_sends_system_entries_as_developer_messages(
    fake_responses: FakeOpenAIResponses,
) -> None:
    fake_responses.script(rsp.text("ok"))
    p = provider(fake_responses, official_dialect=True)
    await run(p, [InputEntry("system", "rules"), InputEntry("user", "hi")])
    first = fake_responses.last_request.json["input"][0]
    assert first == {"type": "message", "role": "developer", "content": "rules"}


async def test_images_and_files(fake_responses: FakeOpenAIResponses) -> None:
    fake_responses.script(rsp.text("ok"))
    entries: list[TranscriptEntry] = [
        InputEntry(
            "user",
            [
                TextPart("look"),
                ImagePart(data="aGk=", mime_type="image/png", detail="low"),
                ImagePart(url="https://x/y.png"),
                FilePart(data="JVBERg==", mime_type="application/pdf", filename="a.pdf"),
                FilePart(url="https://x/z.pdf"),
            ],
        ),
        ToolCallEntry("c1", "shot", "{}"),
        ToolResultEntry(
            "c1", "a screenshot", parts=[ImagePart(data="aGk=", mime_type="image/png")]
        ),
    ]
    await run(provider(fake_responses, supports_vision=True), entries)
    items = fake_responses.last_request.json["input"]
    assert items[0]["content"] == [
        {"type": "input_text", "text": "look"},
        {"type": "input_image", "image_url": "data:image/png;base64,aGk=", "detail": "low"},
        {"type": "input_image", "image_url": "https://x/y.png", "detail": "auto"},
        {
            "type": "input_file",
            "file_data": "data:application/pdf;base64,JVBERg==",
            "filename": "a.pdf",
        },
        {"type": "input_file", "file_url": "https://x/z.pdf"},
    ]
    assert_sdk_accepts(fake_responses.last_request)
    assert items[2]["output"] == [
        {"type": "input_text", "text": "a screenshot"},
        {"type": "input_image", "image_url": "data:image/png;base64,aGk=", "detail": "auto"},
    ]
    fake_responses.script(rsp.text("ok"))
    await run(provider(fake_responses, supports_vision=False), entries)
    assert fake_responses.last_request.json["input"][2]["output"] == "a screenshot"


async def test_tools_settings_structured_output_and_options(
    fake_responses: FakeOpenAIResponses,
) -> None:
    fake_responses.script(rsp.text('{"n": 5}'))
    tools = [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two numbers.",
                "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
            },
        },
        {"type": "function", "function": {"name": "now", "strict": True}},
        {"type": "web_search"},
    ]
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    settings = ModelSettings(
        temperature=0.2,
        top_p=0.9,
        max_tokens=256,
        parallel_tool_calls=False,
        provider_options={
            "openai-responses": {
                "reasoning": {"effort": "high", "summary": "auto"},
                "text": {"verbosity": "low"},
                "include": None,
            },
            "openai": {"seed": 7},  # Chat Completions options are not this API's
        },
    )
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": schema, "strict": True},
    }
    await run(
        provider(fake_responses),
        HI,
        tools=tools,
        response_format=response_format,
        settings=settings,
    )
    body = fake_responses.last_request.json
    assert body["tools"] == [
        {
            "type": "function",
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
            "strict": False,
        },
        {
            "type": "function",
            "name": "now",
            "parameters": {"type": "object", "properties": {}},
            "strict": True,
        },
        {"type": "web_search"},
    ]
    assert body["text"] == {
        "format": {"type": "json_schema", "name": "output", "schema": schema, "strict": True},
        "verbosity": "low",
    }
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["temperature"] == 0.2 and body["top_p"] == 0.9
    assert body["max_output_tokens"] == 256
    assert body["parallel_tool_calls"] is False
    assert "include" not in body and "seed" not in body and "stop" not in body
    assert_sdk_accepts(fake_responses.last_request)


async def test_a_model_without_reasoning_is_asked_again_without_encrypted_content(
    fake_responses: FakeOpenAIResponses,
) -> None:
    refusal = rsp.error(400, "Encrypted content is not supported with this model.")
    fake_responses.script(refusal, rsp.text("a"), rsp.text("b"))
    result = await run(provider(fake_responses), HI)
    assert result.text == "a"
    await run(provider(fake_responses), HI)  # another run: the model is known by now
    includes = [r.json.get("include") for r in fake_responses.stream_requests()]
    assert includes == [["reasoning.encrypted_content"], None, None]
    # an include the user asked for is theirs: the refusal is reported, not worked around
    fake_responses.script(refusal)
    mine = ModelSettings(provider_options={"openai-responses": {"include": ["x"]}})
    with pytest.raises(ProviderError, match="Encrypted content is not supported"):
        await run(provider(fake_responses), HI, settings=mine)


async def test_message_phases_go_back_only_to_a_model_that_labels_its_messages(
    fake_responses: FakeOpenAIResponses,
) -> None:
    history: list[TranscriptEntry] = [
        InputEntry("user", "Fix it."),
        AssistantTextEntry("Let me look."),
        ToolCallEntry("c1", "read_file", '{"path": "a.py"}'),
        ToolResultEntry("c1", "x = 1"),
        AssistantTextEntry("Fixed."),
        InputEntry("user", "Thanks. Now the tests?"),
    ]

    def assistant_items() -> list[dict[str, Any]]:
        body = fake_responses.stream_requests()[-1].json
        return [i for i in body["input"] if i.get("role") == "assistant"]

    # A model that never labels its messages never sees the field.
    plain = OpenAIResponsesProvider(
        "plain-model", base_url=fake_responses.base_url, api_key="k", timeout=5.0
    )
    fake_responses.script(rsp.text("a"), rsp.text("b"))
    await run(plain, history)
    await run(plain, history)
    assert [i.get("phase") for i in assistant_items()] == [None, None]

    # One that does gets every message's label back from its next request on: a preamble
    # before tool calls is commentary, the answer that ends a turn is the final answer.
    coder = OpenAIResponsesProvider(
        "codex-model", base_url=fake_responses.base_url, api_key="k", timeout=5.0
    )
    fake_responses.script(
        rsp.response(rsp.message("Running them.", phase="commentary")), rsp.text("c")
    )
    await run(coder, history)
    assert [i.get("phase") for i in assistant_items()] == [None, None]
    await run(coder, history)
    assert [(i["content"], i.get("phase")) for i in assistant_items()] == [
        ("Let me look.", "commentary"),
        ("Fixed.", "final_answer"),
    ]
    # Reasoning between a message and its tool calls does not change the label.
    thought = ReasoningEntry("hm", id="rs_1", provider="openai-responses")
    assert message_phase([AssistantTextEntry("a"), thought, history[2]], 0) == "commentary"
    assert message_phase([AssistantTextEntry("a"), thought], 0) == "final_answer"


async def test_stop_sequences_are_a_user_error_before_any_request(
    fake_responses: FakeOpenAIResponses,
) -> None:
    with pytest.raises(UserError, match="stop sequences") as info:
        await run(provider(fake_responses), HI, settings=ModelSettings(stop=["\n\n"]))
    assert "openai:" in (info.value.hint or "")
    assert fake_responses.stream_requests() == []


# --------------------------------------------------------------------------- prompt_cache_key


async def test_prompt_cache_key_is_the_hashed_conversation(
    fake_responses: FakeOpenAIResponses,
) -> None:
    fake_responses.script(rsp.text("a"), rsp.text("b"), rsp.text("c"))
    p = provider(fake_responses)
    view = ModelView(HI, conversation="my-secret-session")
    await run(p, view)
    await run(p, ModelView([*HI, AssistantTextEntry("a"), *HI], conversation="my-secret-session"))
    await run(p, ModelView(HI, conversation="another"))
    keys = [r.json["prompt_cache_key"] for r in fake_responses.stream_requests()]
    expected = "lovia-" + hashlib.sha256(b"my-secret-session").hexdigest()[:32]
    assert keys[0] == keys[1] == expected == prompt_cache_key(view)
    assert keys[2] != keys[0]
    assert all("secret" not in r.body.decode() for r in fake_responses.stream_requests())
    assert_sdk_accepts(fake_responses.last_request)


async def test_prompt_cache_key_can_be_overridden_or_turned_off(
    fake_responses: FakeOpenAIResponses,
) -> None:
    fake_responses.script(rsp.text("a"), rsp.text("b"))
    p = provider(fake_responses)
    view = ModelView(HI, conversation="s1")
    mine = ModelSettings(provider_options={"openai-responses": {"prompt_cache_key": "team-42"}})
    off = ModelSettings(provider_options={"openai-responses": {"prompt_cache_key": None}})
    await run(p, view, settings=mine)
    await run(p, view, settings=off)
    first, second = fake_responses.stream_requests()
    assert first.json["prompt_cache_key"] == "team-42"
    assert "prompt_cache_key" not in second.json


# --------------------------------------------------------------------------- errors


async def test_429_is_retried_after_the_servers_retry_after(
    fake_responses: FakeOpenAIResponses,
) -> None:
    fake_responses.script(rsp.rate_limited("7"), rsp.text("ok"))
    sleeps = Sleeps()
    deltas = await with_retries(provider(fake_responses), policy(sleeps=sleeps))
    assert [d.text for d in deltas if isinstance(d, TextDelta)] == ["ok"]
    assert sleeps == [7.0]


async def test_500_is_retried_and_400_is_final(fake_responses: FakeOpenAIResponses) -> None:
    fake_responses.script(rsp.error(500, "boom", type="server_error"), rsp.text("ok"))
    deltas = await with_retries(provider(fake_responses), policy())
    assert [d.text for d in deltas if isinstance(d, TextDelta)] == ["ok"]
    fake_responses.script(rsp.error(400, "Unsupported parameter: 'temperature'"), rsp.text("no"))
    with pytest.raises(ProviderError) as info:
        await with_retries(provider(fake_responses), policy())
    assert info.value.retryable is False and info.value.status_code == 400
    assert "OpenAI Responses stream returned HTTP 400" in str(info.value)
    assert fake_responses.pending == 1


async def test_context_overflow_is_a_context_overflow_error(
    fake_responses: FakeOpenAIResponses,
) -> None:
    fake_responses.script(rsp.context_overflow())
    with pytest.raises(ContextOverflowError):
        await run(provider(fake_responses), HI)
    fake_responses.script(rsp.failed("context_length_exceeded", "Your input exceeds the window."))
    with pytest.raises(ContextOverflowError):
        await run(provider(fake_responses), HI)


@pytest.mark.parametrize(
    ("reply", "retryable"),
    [
        (rsp.failed("server_error", "The server had an error."), True),
        (rsp.failed("rate_limit_exceeded", "Slow down."), True),
        (rsp.failed("invalid_prompt", "Invalid prompt."), False),
        (rsp.error_event("server_error", "Something broke."), True),
        (rsp.error_event("invalid_request_error", "Bad item."), False),
    ],
)
async def test_failed_responses_and_error_events_are_sorted(
    fake_responses: FakeOpenAIResponses, reply: Any, retryable: bool
) -> None:
    fake_responses.script(reply)
    with pytest.raises(ProviderError) as info:
        await run(provider(fake_responses), HI)
    assert info.value.retryable is retryable
    assert "OpenAI Responses stream error" in str(info.value)


async def test_a_stream_without_its_final_event_is_truncated(
    fake_responses: FakeOpenAIResponses,
) -> None:
    reply = rsp.text("partial answer")
    fake_responses.script(reply.truncate(after=len(reply.events) - 1))
    with pytest.raises(ProviderError, match="truncated response") as info:
        await run(provider(fake_responses), HI)
    assert info.value.retryable is True


async def test_a_cut_stream_is_retried_from_scratch(fake_responses: FakeOpenAIResponses) -> None:
    reply = rsp.text("Hel", "lo")
    fake_responses.script(reply.cut(after=5), reply)
    deltas = await with_retries(provider(fake_responses), policy())
    after_reset = deltas[[type(d).__name__ for d in deltas].index("_StreamReset") + 1 :]
    assert [d.text for d in after_reset if isinstance(d, TextDelta)] == ["Hel", "lo"]


async def test_one_connection_serves_every_provider_instance(
    fake_responses: FakeOpenAIResponses,
) -> None:
    fake_responses.script(rsp.text("a"), rsp.text("b"))
    await run(provider(fake_responses), HI)
    await run(provider(fake_responses), HI)
    assert fake_responses.connections == 1
