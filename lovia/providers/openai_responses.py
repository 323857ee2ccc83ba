"""OpenAI's Responses API (``POST /responses``) on the official ``openai`` SDK.

OpenAI's reasoning and coding models carry their reasoning from one turn to the next only
through this API: each response's ``reasoning`` items must be sent back with the next
request. lovia keeps nothing on OpenAI's side (``store: false``) and asks for the reasoning
in encrypted form (``include: ["reasoning.encrypted_content"]``); the encrypted blob is kept
in the :class:`~lovia.transcript.ReasoningEntry`'s metadata, so it survives sessions,
checkpoints and resumes like Anthropic's thinking signatures.

The SDK is imported on first use, never by ``import lovia``.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lovia.exceptions import ProviderError, UserError
from lovia.messages import Usage
from lovia.model_view import conversation_of
from lovia.parts import ContentPart, ImagePart, TextPart
from lovia.providers._encoding import Raw, SchemaCache, Unit, dumpb
from lovia.providers._errors import Endpoint, stream_error
from lovia.providers._openai_sdk import OpenAISDKProvider
from lovia.providers.base import ModelSettings, provider_options
from lovia.providers.openai import WINDOWS, is_context_overflow
from lovia.transcript import (
    AssistantTextEntry,
    EntryCompletedDelta,
    FinishDelta,
    InputEntry,
    ModelDelta,
    ReasoningDelta,
    ReasoningEntry,
    TextDelta,
    ToolCallDelta,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    UsageDelta,
)

logger = logging.getLogger("lovia.providers")

LABEL = "OpenAI Responses"
REASONING_PROVIDER = "openai-responses"
OPTIONS_KEY = "openai-responses"
"""The ``ModelSettings.provider_options`` key this provider reads."""
ENCRYPTED_REASONING = "reasoning.encrypted_content"
CACHE_KEY_PREFIX = "lovia-"


def prompt_cache_key(entries: Sequence[TranscriptEntry]) -> str | None:
    """A ``prompt_cache_key`` for the conversation the run loop attached, else None.

    OpenAI routes requests with the same key to the same cache; a conversation is what
    shares a prefix. The id is hashed so that a session's name never leaves the machine.
    """
    conversation = conversation_of(entries)
    if not conversation:
        return None
    digest = hashlib.sha256(conversation.encode("utf-8")).hexdigest()
    return CACHE_KEY_PREFIX + digest[:32]


# --------------------------------------------------------------------------- request items


def _input_part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, ImagePart):
        url = part.url if part.url is not None else f"data:{part.mime_type};base64,{part.data}"
        image: dict[str, Any] = {"type": "input_image", "image_url": url}
        if part.detail:
            image["detail"] = part.detail
        return image
    file: dict[str, Any] = {"type": "input_file"}
    if part.url is not None:
        file["file_url"] = part.url
    else:
        file["file_data"] = f"data:{part.mime_type};base64,{part.data}"
    if part.filename:
        file["filename"] = part.filename
    return file


def _input_content(content: str | Sequence[ContentPart]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [_input_part(p) for p in content]


def reasoning_item(
    entry: ReasoningEntry, *, stored: bool, model: str | None = None
) -> dict[str, Any] | None:
    """The ``reasoning`` input item that gives a model back its own reasoning, or None.

    Without ``store`` OpenAI knows an item only by its ``encrypted_content``; an entry
    without it (or without an id when stored) cannot be sent back. Neither can reasoning
    another model wrote (after a model switch): only the model that encrypted it can read it.
    """
    encrypted = entry.metadata.get("encrypted_content")
    if not entry.id or not (encrypted or stored):
        return None
    author = entry.metadata.get("model")
    if model is not None and author is not None and author != model:
        return None
    summary = entry.metadata.get("summary")
    if not isinstance(summary, list):
        summary = [entry.content] if entry.content else []
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": entry.id,
        "summary": [{"type": "summary_text", "text": str(text)} for text in summary],
    }
    if encrypted:
        item["encrypted_content"] = encrypted
    return item


def entry_to_item(
    entry: TranscriptEntry,
    *,
    system_role: str = "developer",
    include_images: bool = False,
    stored: bool = False,
    model: str | None = None,
) -> dict[str, Any] | None:
    """One transcript entry as one Responses ``input`` item (None: nothing to send)."""
    if isinstance(entry, InputEntry):
        role = "user" if entry.role == "user" else system_role
        return {"type": "message", "role": role, "content": _input_content(entry.content)}
    if isinstance(entry, AssistantTextEntry):
        if not entry.content:
            return None
        return {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": entry.content}],
        }
    if isinstance(entry, ToolCallEntry):
        return {
            "type": "function_call",
            "call_id": entry.call_id,
            "name": entry.name,
            "arguments": entry.arguments,
        }
    if isinstance(entry, ToolResultEntry):
        images = (
            [p for p in entry.parts or () if isinstance(p, ImagePart)] if include_images else []
        )
        output: str | list[dict[str, Any]] = entry.output
        if images:
            output = [{"type": "input_text", "text": entry.output}, *map(_input_part, images)]
        return {"type": "function_call_output", "call_id": entry.call_id, "output": output}
    if entry.provider != REASONING_PROVIDER:
        return None  # another vendor's reasoning means nothing to this model
    return reasoning_item(entry, stored=stored, model=model)


def entries_to_input(
    entries: Sequence[TranscriptEntry],
    *,
    system_role: str = "developer",
    include_images: bool = False,
    stored: bool = False,
    model: str | None = None,
) -> list[dict[str, Any]]:
    """The transcript as the Responses ``input`` list."""
    items = (
        entry_to_item(
            e, system_role=system_role, include_images=include_images, stored=stored, model=model
        )
        for e in entries
    )
    return [item for item in items if item is not None]


def tool_to_responses(tool: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions tool schema in the Responses shape (others pass through).

    The Responses API treats a function without ``strict`` as strict, which rejects most
    hand-written schemas, so an absent ``strict`` is sent as ``false``.
    """
    function = tool.get("function")
    if tool.get("type") != "function" or not isinstance(function, dict):
        return tool
    out: dict[str, Any] = {"type": "function", "name": function.get("name", "")}
    if function.get("description"):
        out["description"] = function["description"]
    out["parameters"] = function.get("parameters") or {"type": "object", "properties": {}}
    out["strict"] = bool(function.get("strict", False))
    return out


def text_format(response_format: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions ``response_format`` as the Responses ``text.format``."""
    if response_format.get("type") != "json_schema":
        return response_format
    spec = response_format.get("json_schema") or {}
    out: dict[str, Any] = {"type": "json_schema", "name": spec.get("name") or "output"}
    if spec.get("description"):
        out["description"] = spec["description"]
    out["schema"] = spec.get("schema") or {}
    if spec.get("strict") is not None:
        out["strict"] = spec["strict"]
    return out


# --------------------------------------------------------------------------- provider


class OpenAIResponsesProvider(OpenAISDKProvider):
    """Responses API streaming through ``openai.AsyncOpenAI`` (``model="openai-responses:…"``).

    For OpenAI's reasoning and coding models: their reasoning items are sent back on every
    turn (encrypted, ``store: false``). Shares the SDK client, error sorting, retries and
    context windows with :class:`~lovia.providers.openai.OpenAIChatProvider`.
    """

    name = "openai-responses"
    label = LABEL
    windows = WINDOWS
    is_context_overflow = staticmethod(is_context_overflow)

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        timeout: float | None = None,
        default_headers: dict[str, str] | None = None,
        trust_env: bool | None = None,
        official_dialect: bool | None = None,
        supports_vision: bool | None = None,
        supports_json_schema: bool = True,
    ) -> None:
        super().__init__(
            model,
            api_key=api_key,
            base_url=base_url,
            client=client,
            timeout=timeout,
            default_headers=default_headers,
            trust_env=trust_env,
            official_dialect=official_dialect,
            supports_vision=supports_vision,
        )
        self.supports_json_schema: bool = supports_json_schema
        # OpenAI's own role for an application's instructions; other servers know "system"
        self.system_role = "developer" if self.official_dialect else "system"
        self._tools = SchemaCache()

    # ------------------------------------------------------------------ request body

    def _encode_from(
        self, entries: Sequence[TranscriptEntry], start: int, stored: bool
    ) -> list[Unit]:
        units = []
        for index in range(start, len(entries)):
            item = entry_to_item(
                entries[index],
                system_role=self.system_role,
                include_images=self.supports_vision,
                stored=stored,
                model=self.model,
            )
            units.append(Unit(index, index + 1, [] if item is None else [dumpb(item)]))
        return units

    def _encode_input(self, entries: Sequence[TranscriptEntry], stored: bool) -> Raw:
        units = self._messages.units(
            entries, lambda start: self._encode_from(entries, start, stored), variant=stored
        )
        return Raw.array([piece for unit in units for piece in unit.pieces])

    def _build_payload(
        self,
        entries: Sequence[TranscriptEntry],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None,
        settings: ModelSettings | None,
    ) -> dict[str, Any]:
        """The request body; ``input`` and ``tools`` are pre-encoded :class:`Raw` JSON."""
        extra = provider_options(settings, OPTIONS_KEY) if settings is not None else {}
        if settings is not None and settings.stop:
            raise UserError(
                "The OpenAI Responses API has no stop sequences (ModelSettings.stop)",
                hint="Remove stop=... from the agent's settings, or use the Chat Completions "
                "provider ('openai:<model>'), which supports them.",
            )
        stored = extra.get("store") is True
        payload: dict[str, Any] = {
            "model": self.model,
            "input": self._encode_input(entries, stored),
            "stream": True,
            "store": False,
            "include": [ENCRYPTED_REASONING],
            "prompt_cache_key": prompt_cache_key(entries),
        }
        if tools:
            data = self._tools.get(
                tools, lambda: dumpb([tool_to_responses(t) for t in tools]), variant=len(tools)
            )
            payload["tools"] = Raw([data])
        if response_format is not None:
            payload["text"] = {"format": text_format(response_format)}
        if settings is not None:
            payload["temperature"] = settings.temperature
            payload["top_p"] = settings.top_p
            payload["max_output_tokens"] = settings.max_tokens
            payload["parallel_tool_calls"] = settings.parallel_tool_calls
            text = extra.get("text")
            if isinstance(text, dict) and isinstance(payload.get("text"), dict):
                extra = {**extra, "text": {**payload["text"], **text}}
            payload.update(extra)
        return {k: v for k, v in payload.items() if v is not None}

    # ------------------------------------------------------------------ streaming

    async def stream(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelDelta]:
        sse = await self._open("/responses", entries, tools, response_format, settings)
        state = _StreamState(self.endpoint, self.model)
        try:
            async for event in sse.events():
                for delta in state.on_event(event):
                    yield delta
                if state.ended:
                    sse.finish()
        finally:
            await sse.aclose()
        if not state.ended:
            raise ProviderError(
                "OpenAI Responses stream ended without a response.completed event "
                "(truncated response)",
                vendor="openai",
                model=self.model,
                retryable=True,
            )
        yield UsageDelta(state.usage)
        yield FinishDelta(state.finish)


# --------------------------------------------------------------------------- event stream


@dataclass
class _Call:
    index: int
    call_id: str
    name: str
    sent: str = ""  # the arguments streamed so far


@dataclass
class _StreamState:
    """Turns Responses stream events into deltas; one per streamed response."""

    endpoint: Endpoint
    model: str
    usage: Usage = field(default_factory=Usage)
    finish: str | None = None
    ended: bool = False
    calls: dict[str, _Call] = field(default_factory=dict)  # by item id (else output index)
    summaries: dict[str, list[str]] = field(default_factory=dict)  # reasoning item id -> parts

    def on_event(self, event: dict[str, Any]) -> list[ModelDelta]:
        kind = event.get("type")
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            text = event.get("delta")
            return [TextDelta(text)] if isinstance(text, str) and text else []
        if kind == "response.function_call_arguments.delta":
            call = self.calls.get(_item_key(event))
            piece = event.get("delta")
            if call is None or not isinstance(piece, str) or not piece:
                return []
            call.sent += piece
            return [ToolCallDelta(call.index, call.call_id, call.name, piece)]
        if kind == "response.function_call_arguments.done":
            return self._rest_of_call(self.calls.get(_item_key(event)), event.get("arguments"))
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return self._reasoning_delta(event, kind)
        if kind == "response.output_item.added":
            return self._item_added(event)
        if kind == "response.output_item.done":
            return self._item_done(event)
        if kind == "response.completed" or kind == "response.incomplete":
            self._end(event.get("response") or {})
            return []
        if kind == "response.failed":
            response = event.get("response") or {}
            raise stream_error(self.endpoint, _error_object(response.get("error"), event))
        if kind == "error":
            raise stream_error(self.endpoint, _error_object(event.get("error"), event))
        return []

    def _reasoning_delta(self, event: dict[str, Any], kind: str) -> list[ModelDelta]:
        text = event.get("delta")
        if not isinstance(text, str) or not text:
            return []
        if kind == "response.reasoning_text.delta":
            return [ReasoningDelta(text)]
        parts = self.summaries.setdefault(str(event.get("item_id") or ""), [])
        index = event.get("summary_index")
        index = index if isinstance(index, int) and index >= 0 else max(len(parts) - 1, 0)
        out: list[ModelDelta] = []
        while len(parts) <= index:
            if parts:
                out.append(ReasoningDelta("\n\n"))  # a new summary part: a new paragraph
            parts.append("")
        parts[index] += text
        out.append(ReasoningDelta(text))
        return out

    def _item_added(self, event: dict[str, Any]) -> list[ModelDelta]:
        item = event.get("item") or {}
        if item.get("type") != "function_call":
            return []
        call = _Call(
            index=len(self.calls),
            call_id=str(item.get("call_id") or ""),
            name=str(item.get("name") or ""),
        )
        self.calls[_item_key(event, item)] = call
        out: list[ModelDelta] = [ToolCallDelta(call.index, call.call_id, call.name, "")]
        arguments = item.get("arguments")
        if isinstance(arguments, str) and arguments:
            call.sent = arguments
            out.append(ToolCallDelta(call.index, call.call_id, call.name, arguments))
        return out

    def _item_done(self, event: dict[str, Any]) -> list[ModelDelta]:
        item = event.get("item") or {}
        kind = item.get("type")
        if kind == "function_call":
            key = _item_key(event, item)
            if key not in self.calls:  # a server that sends whole items only
                return self._item_added(event)
            return self._rest_of_call(self.calls[key], item.get("arguments"))
        if kind != "reasoning":
            return []
        return [EntryCompletedDelta(self._reasoning_entry(item))]

    def _reasoning_entry(self, item: dict[str, Any]) -> ReasoningEntry:
        item_id = str(item.get("id") or "")
        summary = [
            str(part.get("text") or "")
            for part in item.get("summary") or ()
            if isinstance(part, dict)
        ]
        if not summary:
            summary = [p for p in self.summaries.get(item_id, []) if p]
        metadata: dict[str, Any] = {"summary": summary, "model": self.model}
        encrypted = item.get("encrypted_content")
        if isinstance(encrypted, str) and encrypted:
            metadata["encrypted_content"] = encrypted
        content = "\n\n".join(summary)
        if not content:  # open-weight models stream their raw reasoning text instead
            content = "".join(
                str(part.get("text") or "")
                for part in item.get("content") or ()
                if isinstance(part, dict)
            )
        return ReasoningEntry(
            content, id=item_id or None, provider=REASONING_PROVIDER, metadata=metadata
        )

    def _rest_of_call(self, call: _Call | None, arguments: object) -> list[ModelDelta]:
        """What the final arguments add to the streamed pieces (all of them if none came)."""
        if call is None or not isinstance(arguments, str) or not arguments.startswith(call.sent):
            return []
        rest = arguments[len(call.sent) :]
        if not rest:
            return []
        call.sent = arguments
        return [ToolCallDelta(call.index, call.call_id, call.name, rest)]

    def _end(self, response: dict[str, Any]) -> None:
        self.ended = True
        raw = response.get("usage")
        if isinstance(raw, dict):
            self.usage = _usage(raw)
        if response.get("status") == "incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason")
            self.finish = "length" if reason == "max_output_tokens" else str(reason or "length")
        elif self.calls or any(
            isinstance(item, dict) and item.get("type") == "function_call"
            for item in response.get("output") or ()
        ):
            self.finish = "tool_calls"
        else:
            self.finish = "stop"


def _item_key(event: dict[str, Any], item: dict[str, Any] | None = None) -> str:
    item_id = (item or {}).get("id") or event.get("item_id")
    return str(item_id) if item_id else f"#{event.get('output_index', 0)}"


def _error_object(error: object, event: dict[str, Any]) -> dict[str, Any]:
    """An error of ``response.failed`` or an ``error`` event for :func:`stream_error`.

    The Responses API names the kind of failure in ``code`` (``server_error``,
    ``rate_limit_exceeded``, ``context_length_exceeded``); it is what sorts the error.
    """
    source = error if isinstance(error, dict) else event
    message = source.get("message") or "the response failed"
    kind = " ".join(str(source.get(k)) for k in ("type", "code") if source.get(k))
    return {"message": str(message), "type": kind, "code": source.get("code")}


def _usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("input_tokens_details") or {}
    if not isinstance(details, dict):
        details = {}
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_tokens=int(details.get("cached_tokens") or 0),
        cache_write_tokens=int(details.get("cache_write_tokens") or 0),
    )


__all__ = [
    "OpenAIResponsesProvider",
    "entries_to_input",
    "entry_to_item",
    "prompt_cache_key",
    "reasoning_item",
    "text_format",
    "tool_to_responses",
]
