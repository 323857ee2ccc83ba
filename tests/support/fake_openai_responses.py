"""A fake OpenAI Responses API server speaking the real streaming wire format.

Every event is framed as the API frames it (``event: <type>`` then ``data: <json>``) and has
the fields of the SDK's event types in ``openai/types/responses/`` (``sequence_number``,
``output_index``, ``item_id``, ``content_index``, ``logprobs``…), so the ``openai`` SDK's own
``client.responses.create(stream=True)`` parses them into typed events::

    from tests.support import fake_openai_responses as rsp

    def test_something(fake_responses):
        fake_responses.script(
            rsp.response(
                rsp.reasoning("Adding.", encrypted="enc-1"),
                rsp.function_call("add", {"a": 2, "b": 3}, call_id="call_1"),
            ),
            rsp.text("The sum is ", "5.", usage=rsp.usage(input=1200, cached=1024)),
        )
        ...
        assert fake_responses.last_request.json["input"][-1]["type"] == "function_call_output"

Items for :func:`response` (each a list of events with placeholder output indexes):

- ``message(*pieces)``: an assistant message streamed as ``output_text`` deltas;
- ``reasoning(*summary_parts, encrypted=..., pieces=1)``: a reasoning item whose summary
  parts stream as ``reasoning_summary_text`` deltas (each split in ``pieces``) and whose
  ``encrypted_content`` only the ``output_item.done`` event carries in full;
- ``function_call(name, args, call_id=None, chunk_size=None)``: a function call whose
  arguments stream in pieces of ``chunk_size`` characters.

``response(*items, usage=usage(), status="completed", incomplete="max_output_tokens",
interleave=False)`` wraps them in ``response.created`` … ``response.completed`` (or
``response.incomplete``); ``interleave`` alternates the events of several items, as a
server streaming parallel calls at once would. Shortcuts: ``text(*pieces)``,
``tool_calls(*function_calls)``. Failures: ``failed(code, message)`` (``response.failed``),
``error_event(code, message)`` (an ``error`` event), HTTP errors ``error(status, message)``,
``rate_limited(retry_after)``, ``context_overflow()``; ``raw(*frames)`` for anything else.

``usage(input=10, output=5, cached=0, reasoning=0)`` is the ``response.usage`` object.
``fake.inputs()`` lists the ``input`` of every request; ``assert_sdk_accepts(request)``
checks a request body against the SDK's own parameter types.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from tests.support.fake_server import FakeServer, RecordedRequest, Reply, json_reply

MODEL = "fake-responses-model"
Item = list[dict[str, Any]]
"""The events of one output item; ``output_index`` is filled in by :func:`response`."""

_ids = itertools.count(1)


def _new_id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):04d}"


def usage(input: int = 10, output: int = 5, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    return {
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": input + output,
    }


_default_usage = usage


def _pieces(s: str, size: int | None) -> list[str]:
    if not size:
        return [s]
    return [s[i : i + size] for i in range(0, len(s), size)] or [""]


def _split(s: str, count: int) -> list[str]:
    size = max(1, -(-len(s) // max(1, count)))
    return _pieces(s, size)


def message(*pieces: str, id: str | None = None, phase: str | None = None) -> Item:
    """An assistant message; ``phase`` labels it as models from gpt-5.3-codex on do."""
    item_id = id or _new_id("msg")
    text = "".join(pieces)
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
    done_part = {**part, "text": text}
    where = {"item_id": item_id, "content_index": 0}
    labelled = {"phase": phase} if phase else {}
    return [
        {
            "type": "response.output_item.added",
            "item": {
                "id": item_id,
                "type": "message",
                "status": "in_progress",
                "content": [],
                "role": "assistant",
                **labelled,
            },
        },
        {"type": "response.content_part.added", **where, "part": part},
        *(
            {"type": "response.output_text.delta", **where, "delta": p, "logprobs": []}
            for p in pieces
        ),
        {"type": "response.output_text.done", **where, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **where, "part": done_part},
        {
            "type": "response.output_item.done",
            "item": {
                "id": item_id,
                "type": "message",
                "status": "completed",
                "content": [done_part],
                "role": "assistant",
                **labelled,
            },
        },
    ]


def reasoning(
    *summary: str, encrypted: str | None = "enc-fake", id: str | None = None, pieces: int = 1
) -> Item:
    item_id = id or _new_id("rs")
    events: Item = [
        {
            "type": "response.output_item.added",
            "item": {"id": item_id, "type": "reasoning", "summary": []},
        }
    ]
    for index, text in enumerate(summary):
        where = {"item_id": item_id, "summary_index": index}
        events.append(
            {
                "type": "response.reasoning_summary_part.added",
                **where,
                "part": {"type": "summary_text", "text": ""},
            }
        )
        events += [
            {"type": "response.reasoning_summary_text.delta", **where, "delta": p}
            for p in _split(text, pieces)
        ]
        events.append({"type": "response.reasoning_summary_text.done", **where, "text": text})
        events.append(
            {
                "type": "response.reasoning_summary_part.done",
                **where,
                "part": {"type": "summary_text", "text": text},
            }
        )
    done: dict[str, Any] = {
        "id": item_id,
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": t} for t in summary],
    }
    if encrypted is not None:
        done["encrypted_content"] = encrypted
    events.append({"type": "response.output_item.done", "item": done})
    return events


def function_call(
    name: str,
    args: dict[str, Any] | str,
    *,
    call_id: str | None = None,
    id: str | None = None,
    chunk_size: int | None = None,
) -> Item:
    arguments = args if isinstance(args, str) else json.dumps(args)
    item_id = id or _new_id("fc")
    item = {
        "id": item_id,
        "type": "function_call",
        "status": "in_progress",
        "arguments": "",
        "call_id": call_id or f"call_{name}",
        "name": name,
    }
    return [
        {"type": "response.output_item.added", "item": item},
        *(
            {"type": "response.function_call_arguments.delta", "item_id": item_id, "delta": p}
            for p in _pieces(arguments, chunk_size)
        ),
        {
            "type": "response.function_call_arguments.done",
            "item_id": item_id,
            "arguments": arguments,
        },
        {
            "type": "response.output_item.done",
            "item": {**item, "status": "completed", "arguments": arguments},
        },
    ]


def response_object(
    *,
    id: str,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    error: dict[str, Any] | None = None,
    incomplete: str | None = None,
) -> dict[str, Any]:
    """A ``Response`` object with the fields the SDK's type requires."""
    return {
        "id": id,
        "object": "response",
        "created_at": 1_700_000_000,
        "status": status,
        "error": error,
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": MODEL,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "metadata": {},
    }


def _frames(events: list[dict[str, Any]]) -> list[bytes]:
    """SSE frames as the API sends them: an ``event:`` line, then the JSON, numbered."""
    frames = []
    for number, event in enumerate(events):
        payload = {**event, "sequence_number": number}
        data = json.dumps(payload).encode()
        frames.append(b"event: %s\ndata: %s\n\n" % (payload["type"].encode(), data))
    return frames


def _placed(items: tuple[Item, ...], interleave: bool) -> list[dict[str, Any]]:
    numbered = [[{**e, "output_index": index} for e in item] for index, item in enumerate(items)]
    if not interleave:
        return [e for item in numbered for e in item]
    longest = max((len(item) for item in numbered), default=0)
    return [item[i] for i in range(longest) for item in numbered if i < len(item)]


def response(
    *items: Item,
    usage: dict[str, Any] | None = None,
    status: str = "completed",
    incomplete: str = "max_output_tokens",
    interleave: bool = False,
    id: str | None = None,
) -> Reply:
    """A whole streamed response: ``created``, ``in_progress``, the items, then the end."""
    response_id = id or _new_id("resp")
    use = usage if usage is not None else _default_usage()
    start = response_object(id=response_id, status="in_progress", output=[], usage=None)
    output = [item[-1]["item"] for item in items]
    end_kind = "response.completed" if status == "completed" else f"response.{status}"
    end = response_object(
        id=response_id,
        status=status,
        output=output,
        usage=use,
        incomplete=incomplete if status == "incomplete" else None,
    )
    events = [
        {"type": "response.created", "response": start},
        {"type": "response.in_progress", "response": start},
        *_placed(items, interleave),
        {"type": end_kind, "response": end},
    ]
    return Reply(events=_frames(events))


def text(*pieces: str, usage: dict[str, Any] | None = None) -> Reply:
    return response(message(*pieces), usage=usage)


def tool_calls(*calls: Item, text: str | None = None, interleave: bool = False) -> Reply:
    items = ((message(text),) if text else ()) + calls
    return response(*items, interleave=interleave)


def failed(code: str, message: str, *, after: tuple[Item, ...] = ()) -> Reply:
    """A stream that ends in ``response.failed`` (after the events of ``after``)."""
    response_id = _new_id("resp")
    start = response_object(id=response_id, status="in_progress", output=[], usage=None)
    end = response_object(
        id=response_id,
        status="failed",
        output=[],
        usage=None,
        error={"code": code, "message": message},
    )
    events = [
        {"type": "response.created", "response": start},
        *_placed(after, False),
        {"type": "response.failed", "response": end},
    ]
    return Reply(events=_frames(events))


def error_event(code: str, message: str) -> Reply:
    """A stream whose only event is an ``error`` event."""
    return Reply(
        events=_frames([{"type": "error", "code": code, "message": message, "param": None}])
    )


def error(
    status: int,
    message: str,
    *,
    type: str = "invalid_request_error",
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    return json_reply(
        status,
        {"error": {"message": message, "type": type, "param": None, "code": code}},
        headers,
    )


def rate_limited(retry_after: str = "1") -> Reply:
    return error(
        429,
        "Rate limit reached for requests per min. Please try again in 1s.",
        type="requests",
        code="rate_limit_exceeded",
        headers={"retry-after": retry_after},
    )


def context_overflow() -> Reply:
    return error(
        400,
        "Your input exceeds the context window of this model. Please adjust your input and "
        "try again.",
        code="context_length_exceeded",
    )


def raw(*frames: bytes | str) -> Reply:
    return Reply(events=[f.encode() if isinstance(f, str) else f for f in frames])


class FakeOpenAIResponses(FakeServer):
    """Answers ``POST /v1/responses``; ``base_url`` ends in ``/v1`` like OpenAI's."""

    stream_path = "/v1/responses"
    path_prefix = "/v1"

    def env(self, api_key: str = "test-key") -> dict[str, str]:
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": api_key}

    def error_reply(self, status: int, message: str) -> Reply:
        return error(status, message, type="fake_server_error")

    def inputs(self) -> list[list[dict[str, Any]]]:
        """The ``input`` list of every request made to ``/v1/responses``, in order."""
        return [_input_of(r) for r in self.stream_requests()]


def assert_sdk_accepts(request: RecordedRequest) -> None:
    """The request body is what the SDK's own ``responses.create(stream=True)`` allows."""
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming
    from pydantic import TypeAdapter

    TypeAdapter(ResponseCreateParamsStreaming).validate_python(request.json)


def _input_of(request: RecordedRequest) -> list[dict[str, Any]]:
    body = request.json if isinstance(request.json, dict) else {}
    value = body.get("input")
    return value if isinstance(value, list) else []


__all__ = [
    "FakeOpenAIResponses",
    "assert_sdk_accepts",
    "context_overflow",
    "error",
    "error_event",
    "failed",
    "function_call",
    "message",
    "rate_limited",
    "raw",
    "reasoning",
    "response",
    "response_object",
    "text",
    "tool_calls",
    "usage",
]
