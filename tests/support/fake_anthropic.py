"""A fake Anthropic Messages server speaking the real SSE wire format.

Use the ``fake_anthropic`` pytest fixture (``tests/support/fixtures.py``) or the class::

    from tests.support import fake_anthropic as ant

    def test_something(fake_anthropic, monkeypatch):
        for key, value in fake_anthropic.env().items():   # ANTHROPIC_BASE_URL / _API_KEY
            monkeypatch.setenv(key, value)
        fake_anthropic.script(
            ant.message(ant.thinking_block("hmm", signature="sig1"),
                        ant.tool_block("add", {"a": 2, "b": 3}, id="toolu_1"),
                        stop_reason="tool_use"),
            ant.text("The sum is ", "5."),
        )

``base_url`` is the server root (``http://127.0.0.1:<port>``), as the Anthropic SDK and
``ANTHROPIC_BASE_URL`` expect; the streaming endpoint is ``POST /v1/messages``.

Builders (each returns a :class:`~tests.support.fake_server.Reply`; see its ``cut``,
``truncate``, ``hang``, ``stall``, ``slow`` and ``with_headers`` modifiers):

- ``message(*blocks, stop_reason="end_turn", usage=usage(), message_stop=True)`` with blocks
  ``text_block(*pieces)``, ``thinking_block(*pieces, signature=...)``,
  ``redacted_block(data)``, ``tool_block(name, args, id=None, chunk_size=None)``;
- shortcuts ``text(*pieces, thinking=None)`` and ``tool_use(*tool_blocks, text=None)``;
- ``events(*event_dicts)`` for hand-made events;
- ``error(status, message, type=...)``, ``overloaded()``, ``rate_limited(retry_after)``,
  ``context_overflow(tokens, maximum)``, ``stream_error(type, message, after=None)``;
- ``raw(*frames)`` for arbitrary (malformed) SSE.

``usage(input=10, output=5, cache_read=0, cache_write=0)`` builds ``message_start.usage``.
``fake_anthropic.models = [{"id": "claude-x", "max_input_tokens": 200000}]`` feeds
``GET /v1/models``.

Run ``python -m tests.support.fake_anthropic`` for a standalone echo server (prints its URL).
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.fake_server import FakeServer, RecordedRequest, Reply, json_reply, sse_frames

MODEL = "claude-fake"
Block = list[dict[str, Any]]
"""The events of one content block, with a placeholder index filled in by ``message``."""


def usage(
    input: int = 10, output: int = 5, cache_read: int = 0, cache_write: int = 0
) -> dict[str, Any]:
    return {
        "input_tokens": input,
        "output_tokens": output,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }


_default_usage = usage


def _block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> Block:
    return [
        {"type": "content_block_start", "content_block": start},
        *({"type": "content_block_delta", "delta": d} for d in deltas),
        {"type": "content_block_stop"},
    ]


def text_block(*pieces: str) -> Block:
    return _block({"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in pieces])


def thinking_block(*pieces: str, signature: str | None = "sig-fake") -> Block:
    deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces]
    if signature is not None:
        deltas.append({"type": "signature_delta", "signature": signature})
    return _block({"type": "thinking", "thinking": "", "signature": ""}, deltas)


def redacted_block(data: str) -> Block:
    return _block({"type": "redacted_thinking", "data": data}, [])


def _pieces(s: str, size: int | None) -> list[str]:
    if not size:
        return [s]
    return [s[i : i + size] for i in range(0, len(s), size)]


def tool_block(
    name: str, args: dict[str, Any] | str, *, id: str | None = None, chunk_size: int | None = None
) -> Block:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return _block(
        {"type": "tool_use", "id": id or f"toolu_{name}", "name": name, "input": {}},
        [{"type": "input_json_delta", "partial_json": p} for p in _pieces(arguments, chunk_size)],
    )


def message(
    *blocks: Block,
    stop_reason: str | None = "end_turn",
    usage: dict[str, Any] | None = None,
    output_tokens: int | None = None,
    message_stop: bool = True,
) -> Reply:
    use = usage if usage is not None else _default_usage()
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**use, "output_tokens": 1},
        },
    }
    payloads: list[dict[str, Any]] = [start, {"type": "ping"}]
    for index, block in enumerate(blocks):
        payloads += [{**event, "index": index} for event in block]
    if stop_reason is not None:
        payloads.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens or use.get("output_tokens", 0)},
            }
        )
    if message_stop:
        payloads.append({"type": "message_stop"})
    return events(*payloads)


def events(*payloads: dict[str, Any]) -> Reply:
    return Reply(events=sse_frames(payloads, event_names=True))


def text(
    *pieces: str,
    thinking: str | None = None,
    signature: str = "sig-fake",
    usage: dict[str, Any] | None = None,
    stop_reason: str = "end_turn",
) -> Reply:
    blocks = [thinking_block(thinking, signature=signature)] if thinking else []
    return message(*blocks, text_block(*pieces), stop_reason=stop_reason, usage=usage)


def tool_use(
    *tools: Block,
    text: str | None = None,
    thinking: str | None = None,
    usage: dict[str, Any] | None = None,
) -> Reply:
    blocks = [thinking_block(thinking)] if thinking else []
    if text:
        blocks.append(text_block(text))
    return message(*blocks, *tools, stop_reason="tool_use", usage=usage)


def error(
    status: int,
    message: str,
    *,
    type: str = "invalid_request_error",
    headers: dict[str, str] | None = None,
) -> Reply:
    return json_reply(
        status,
        {"type": "error", "error": {"type": type, "message": message}, "request_id": "req_fake"},
        headers,
    )


def overloaded() -> Reply:
    return error(529, "Overloaded", type="overloaded_error")


def rate_limited(retry_after: str = "1") -> Reply:
    return error(
        429,
        "Number of request tokens has exceeded your per-minute rate limit",
        type="rate_limit_error",
        headers={"retry-after": retry_after},
    )


def context_overflow(tokens: int = 210_000, maximum: int = 200_000) -> Reply:
    return error(400, f"prompt is too long: {tokens} tokens > {maximum} maximum")


def stream_error(
    type: str = "overloaded_error", message: str = "Overloaded", *, after: Reply | None = None
) -> Reply:
    """``after``'s events up to (not including) its ``message_delta``, then an ``error`` event."""
    kept: list[bytes] = []
    for frame in after.events if after else []:
        if frame.startswith((b"event: message_delta", b"event: message_stop")):
            break
        kept.append(frame)
    error_event = {"type": "error", "error": {"type": type, "message": message}}
    return Reply(events=kept + sse_frames([error_event], event_names=True))


def raw(*frames: bytes | str) -> Reply:
    return Reply(events=[f.encode() if isinstance(f, str) else f for f in frames])


class FakeAnthropic(FakeServer):
    stream_path = "/v1/messages"
    path_prefix = ""

    def env(self, api_key: str = "test-key") -> dict[str, str]:
        """Environment for a client (or a subprocess) that should talk to this server."""
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": api_key}

    def models_payload(self) -> Any:
        ids = [m.get("id") for m in self.models]
        return {
            "data": self.models,
            "has_more": False,
            "first_id": ids[0] if ids else None,
            "last_id": ids[-1] if ids else None,
        }

    def error_reply(self, status: int, message: str) -> Reply:
        return error(status, message, type="not_found_error" if status == 404 else "api_error")


def echo(request: RecordedRequest) -> Reply:
    """Answer with the last user message's text."""
    last = next((m for m in reversed(request.messages) if m.get("role") == "user"), {})
    content = last.get("content")
    said = content if isinstance(content, str) else json.dumps(content)
    return text(f"echo: {said}")


if __name__ == "__main__":  # pragma: no cover - manual use
    import time

    server = FakeAnthropic(responder=echo).start()
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
