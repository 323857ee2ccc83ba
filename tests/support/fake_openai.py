"""A fake OpenAI Chat Completions server speaking the real SSE wire format.

Use the ``fake_openai`` pytest fixture (``tests/support/fixtures.py``) or the class directly::

    from tests.support import fake_openai as oai

    def test_something(fake_openai, monkeypatch):
        monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)   # http://127.0.0.1:<port>/v1
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")              # or: fake_openai.env()
        fake_openai.script(
            oai.tool_calls(oai.call("add", {"a": 2, "b": 3}, id="c1")),  # turn 1: a tool call
            oai.text("The sum is ", "5."),                               # turn 2: the answer
        )
        ...
        assert fake_openai.last_request.json["messages"][-1]["role"] == "tool"

Another process (a language server under test, say) only needs the URL: pass
``fake_openai.env()`` into its environment; replies are still scripted from the test.
``fake_openai.responder = lambda request: oai.text("ok")`` answers every request that the
queue does not cover (handy for long end-to-end sessions).

Reply builders (all return a :class:`~tests.support.fake_server.Reply`, see its ``cut``,
``truncate``, ``hang``, ``stall``, ``slow`` and ``with_headers`` modifiers):

- ``text(*pieces, reasoning=(), finish="stop", usage=usage(), done=True)``
- ``tool_calls(*calls, text=None, chunk_size=None, interleave=False, finish="tool_calls")``
  with ``call(name, args, id=None)``; ``chunk_size`` splits each call's argument JSON
  into pieces of that many characters; ``interleave`` alternates the parallel calls' pieces.
- ``chunks(*chunk_dicts, done=True)`` for hand-made ``chat.completion.chunk`` payloads built
  with ``chunk(delta, finish_reason=None, usage=None)``.
- ``error(status, message, type=..., code=None, headers=None)``,
  ``context_overflow(window=128000)``, ``rate_limited(retry_after="1")``,
  ``stream_error(message, after=...)``.
- ``raw(*frames)`` sends arbitrary bytes/str frames (malformed SSE).

``usage(prompt=10, completion=5, cached=0)`` builds the usage object of the final chunk.
``fake_openai.models = [{"id": "m", "max_model_len": 32768}]`` feeds ``GET /v1/models``.

Embeddings: ``POST /v1/embeddings`` answers from its own queue, filled with
``fake_openai.script_embeddings(reply, ...)`` (``embeddings(*vectors, shuffle=False)`` or any
``error(...)`` reply); when that queue is empty it embeds every input with
:func:`bag_of_words` (``dimensions`` from the request, else ``fake_openai.embedding_dimensions``),
so similar texts get similar vectors. ``fake_openai.embedding_requests()`` lists those requests.

Run ``python -m tests.support.fake_openai`` for a standalone echo server (prints its URL).
"""

from __future__ import annotations

import json
import math
import re
import zlib
from collections import deque
from dataclasses import dataclass
from typing import Any

from tests.support.fake_server import FakeServer, RecordedRequest, Reply, json_reply, sse_frames

MODEL = "fake-model"
DONE = b"data: [DONE]\n\n"


def usage(prompt: int = 10, completion: int = 5, cached: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached:
        out["prompt_tokens_details"] = {"cached_tokens": cached}
    return out


_default_usage = usage


def chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    usage: dict[str, Any] | None = None,
    model: str = MODEL,
) -> dict[str, Any]:
    """One ``chat.completion.chunk``; ``delta=None`` gives the usage-only final chunk."""
    payload: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": []
        if delta is None
        else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }
    if usage is not None:
        payload["usage"] = usage
    return payload


def chunks(*payloads: dict[str, Any], done: bool = True) -> Reply:
    return Reply(events=sse_frames(payloads) + ([DONE] if done else []))


def _finish(
    body: list[dict[str, Any]], finish: str | None, use: dict[str, Any] | None, done: bool
) -> Reply:
    if finish is not None:
        body.append(chunk({}, finish_reason=finish))
    if use is not None:
        body.append(chunk(None, usage=use))
    return chunks(*body, done=done)


def text(
    *pieces: str,
    reasoning: tuple[str, ...] | list[str] = (),
    finish: str | None = "stop",
    usage: dict[str, Any] | None = None,
    done: bool = True,
) -> Reply:
    """A streamed answer: optional ``reasoning_content`` pieces, then the text pieces."""
    body = [chunk({"role": "assistant", "content": ""})]
    body += [chunk({"reasoning_content": r}) for r in reasoning]
    body += [chunk({"content": p}) for p in pieces]
    return _finish(body, finish, usage if usage is not None else _default_usage(), done)


@dataclass
class Call:
    name: str
    arguments: str
    id: str


def call(name: str, args: dict[str, Any] | str, *, id: str | None = None) -> Call:
    arguments = args if isinstance(args, str) else json.dumps(args)
    return Call(name, arguments, id or f"call_{name}")


def _pieces(s: str, size: int | None) -> list[str]:
    if not size:
        return [s]
    return [s[i : i + size] for i in range(0, len(s), size)] or [""]


def tool_calls(
    *calls: Call,
    text: str | None = None,
    chunk_size: int | None = None,
    interleave: bool = False,
    finish: str | None = "tool_calls",
    usage: dict[str, Any] | None = None,
    done: bool = True,
) -> Reply:
    """Streamed tool calls (the first fragment of each names it; arguments follow in pieces)."""
    body = [chunk({"role": "assistant", "content": None})]
    if text:
        body.append(chunk({"content": text}))
    streams: list[list[dict[str, Any]]] = []
    for index, c in enumerate(calls):
        frags = [
            {
                "index": index,
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": ""},
            }
        ]
        frags += [
            {"index": index, "function": {"arguments": p}} for p in _pieces(c.arguments, chunk_size)
        ]
        streams.append(frags)
    if interleave:
        longest = max((len(s) for s in streams), default=0)
        ordered = [s[i] for i in range(longest) for s in streams if i < len(s)]
    else:
        ordered = [f for s in streams for f in s]
    body += [chunk({"tool_calls": [f]}) for f in ordered]
    return _finish(body, finish, usage if usage is not None else _default_usage(), done)


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


def rate_limited(retry_after: str = "1", *, retry_after_ms: str | None = None) -> Reply:
    headers = {"retry-after": retry_after}
    if retry_after_ms is not None:
        headers["retry-after-ms"] = retry_after_ms
    return error(
        429,
        "Rate limit reached for requests per min. Please try again in 1s.",
        type="requests",
        code="rate_limit_exceeded",
        headers=headers,
    )


def context_overflow(window: int = 128_000, requested: int = 130_017) -> Reply:
    return error(
        400,
        f"This model's maximum context length is {window} tokens. However, your messages "
        f"resulted in {requested} tokens. Please reduce the length of the messages.",
        code="context_length_exceeded",
    )


def stream_error(message: str, *, type: str = "server_error", after: Reply | None = None) -> Reply:
    """Events of ``after`` (if any, without its end) followed by an in-stream error object."""
    events = [e for e in (after.events if after else []) if e != DONE]
    return Reply(events=events + sse_frames([{"error": {"message": message, "type": type}}]))


def raw(*frames: bytes | str) -> Reply:
    return Reply(events=[f.encode() if isinstance(f, str) else f for f in frames])


_WORDS = re.compile(r"\w")


def bag_of_words(text: str, dimensions: int = 32) -> list[float]:
    """A deterministic unit vector: words (and single CJK characters) hashed into buckets."""
    vector = [0.0] * max(1, dimensions)
    tokens = re.findall(r"[a-z0-9_]+|[^\x00-\x7f]", text.lower())
    for token in tokens:
        if _WORDS.match(token):
            vector[zlib.crc32(token.encode()) % len(vector)] += 1.0
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector


def embeddings(
    *vectors: list[float], model: str = "fake-embedding", shuffle: bool = False
) -> Reply:
    """An OpenAI ``/embeddings`` answer; ``shuffle`` sends the items in reverse index order."""
    data = [
        {"object": "embedding", "index": i, "embedding": list(v)} for i, v in enumerate(vectors)
    ]
    if shuffle:
        data.reverse()
    return json_reply(
        200,
        {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": len(vectors), "total_tokens": len(vectors)},
        },
    )


class FakeOpenAI(FakeServer):
    stream_path = "/v1/chat/completions"
    embeddings_path = "/v1/embeddings"
    path_prefix = "/v1"

    def __init__(self, *, responder: Any = None) -> None:
        super().__init__(responder=responder)
        self.embedding_dimensions = 32
        self._embedding_queue: deque[Reply] = deque()

    def env(self, api_key: str = "test-key") -> dict[str, str]:
        """Environment for a client (or a subprocess) that should talk to this server."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": api_key}

    def error_reply(self, status: int, message: str) -> Reply:
        return error(status, message, type="fake_server_error")

    # ------------------------------------------------------------------ embeddings

    def script_embeddings(self, *replies: Reply) -> None:
        """Queue replies for the next ``POST /v1/embeddings`` requests, in order."""
        with self._lock:
            self._embedding_queue.extend(replies)

    def embedding_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.split("?", 1)[0] == self.embeddings_path]

    def reset(self) -> None:
        super().reset()
        with self._lock:
            self._embedding_queue.clear()

    def _reply_for(self, request: RecordedRequest) -> Reply:
        path = request.path.split("?", 1)[0]
        if request.method != "POST" or path != self.embeddings_path:
            return super()._reply_for(request)
        with self._lock:
            self.requests.append(request)
            if self._embedding_queue:
                return self._embedding_queue.popleft()
            dimensions = self.embedding_dimensions
        body = request.json if isinstance(request.json, dict) else {}
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not all(isinstance(t, str) for t in inputs):
            return error(400, "fake server: 'input' must be a string or a list of strings")
        wanted = body.get("dimensions")
        if isinstance(wanted, int) and wanted > 0:
            dimensions = wanted
        return embeddings(
            *(bag_of_words(t, dimensions) for t in inputs),
            model=str(body.get("model") or "fake-embedding"),
        )


def echo(request: RecordedRequest) -> Reply:
    """Answer with the last user message's text (a responder for demos and smoke tests)."""
    messages = request.messages
    last = next((m for m in reversed(messages) if m.get("role") == "user"), {})
    content = last.get("content")
    said = content if isinstance(content, str) else json.dumps(content)
    return text(f"echo: {said}")


if __name__ == "__main__":  # pragma: no cover - manual use
    import time

    server = FakeOpenAI(responder=echo).start()
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()
