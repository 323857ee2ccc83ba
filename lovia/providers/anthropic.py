"""Anthropic Messages streaming on the official ``anthropic`` SDK.

The SDK is imported on first use, never by ``import lovia``.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lovia.exceptions import ProviderError, UserError
from lovia.http_config import resolve_verify
from lovia.messages import Usage
from lovia.parts import ContentPart, FilePart, ImagePart, TextPart, project_parts, text_of
from lovia.providers._encoding import (
    Raw,
    SchemaCache,
    Unit,
    dumpb,
)
from lovia.providers._errors import stream_error
from lovia.providers._http import normalize_base_url
from lovia.providers._sdk import SDKProvider
from lovia.providers._windows import WindowRules
from lovia.providers.base import ModelSettings, provider_options
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

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
OFFICIAL_HOSTS = ("api.anthropic.com",)
LABEL = "Anthropic"
REASONING_PROVIDER = "anthropic"
DEFAULT_VERSION = "2023-06-01"

_MILLION = 1_000_000
WINDOWS: dict[str, WindowRules] = {
    "api.anthropic.com": {
        "claude-fable-5": _MILLION,
        "claude-mythos-5": _MILLION,
        "claude-opus-4-8": _MILLION,
        "claude-opus-4-7": _MILLION,
        "claude-opus-4-6": _MILLION,
        "claude-sonnet-5": _MILLION,
        "claude-sonnet-4-6": _MILLION,
        "claude-opus-": 200_000,
        "claude-sonnet-": 200_000,
        "claude-haiku-": 200_000,
        "claude-3-": 200_000,
    },
    "api.deepseek.com": {"deepseek-v4-pro": 1_048_565},
}

_OVERFLOW_MARKERS = (
    "prompt is too long",
    "input is too long",
    "context window",
    "context limit",
    "too many total text bytes",
    "context length",
    "context_length_exceeded",
)
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}
_SEPARATOR = b'{"type":"text","text":"\\n\\n"}'


def is_context_overflow(status: int, body: str) -> bool:
    """``body`` is lower-cased."""
    if not 400 <= status < 500:
        return False
    if any(m in body for m in _OVERFLOW_MARKERS):
        return True
    return "max_tokens_to_sample" in body and "exceeds" in body


def _normalize_stop_reason(reason: str | None) -> str | None:
    if reason is None:
        return None
    return _STOP_REASONS.get(reason, reason)


# --------------------------------------------------------------------------- wire mapping


def _source(part: ImagePart | FilePart, mime: str | None) -> dict[str, Any]:
    if part.url is not None:
        return {"type": "url", "url": part.url}
    return {"type": "base64", "media_type": mime, "data": part.data}


def _file_block(part: FilePart) -> dict[str, Any]:
    mime = (part.mime_type or "").lower()
    if part.url is not None:
        if mime not in ("", "application/pdf"):
            raise UserError(
                f"Anthropic accepts file URLs only for PDFs, not {part.mime_type}",
                hint="Pass the file inline (FilePart.from_path / from_bytes) or as a PDF URL.",
            )
        source: dict[str, Any] = {"type": "url", "url": part.url}
    elif mime == "application/pdf":
        source = _source(part, "application/pdf")
    elif mime == "text/plain":
        try:
            text = base64.b64decode(part.data or "", validate=True).decode("utf-8")
        except (binascii.Error, ValueError) as exc:
            raise UserError(
                "Anthropic text documents must be valid UTF-8",
                hint="Decode the file yourself and send it as text, or re-encode it as UTF-8.",
            ) from exc
        source = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        raise UserError(
            f"Anthropic does not accept {part.mime_type or 'untyped'} files as documents",
            hint="Send PDFs or text/plain files, or extract the content into text first.",
        )
    block: dict[str, Any] = {"type": "document", "source": source}
    if part.filename:
        block["title"] = part.filename
    return block


def _part_blocks(parts: Sequence[ContentPart]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            blocks.append({"type": "image", "source": _source(part, part.mime_type)})
        else:
            blocks.append(_file_block(part))
    return blocks


def _content_blocks(content: str | Sequence[ContentPart]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return _part_blocks(content)


def _tool_input(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {"_raw": arguments}
    return value if isinstance(value, dict) else {"_raw": arguments}


def _tool_result_block(entry: ToolResultEntry, include_images: bool) -> dict[str, Any]:
    content: str | list[dict[str, Any]] = entry.output
    if include_images and entry.parts:
        parts = [
            TextPart(project_parts([p])) if isinstance(p, FilePart) else p for p in entry.parts
        ]
        content = _part_blocks(parts)
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": entry.call_id,
        "content": content,
    }
    if entry.is_error:
        block["is_error"] = True
    return block


def _entry_blocks(
    entry: TranscriptEntry,
    *,
    reasoning_provider: str,
    replay_thinking: bool,
    include_images: bool,
) -> list[dict[str, Any]]:
    """The content blocks one non-system entry contributes to its message."""
    if isinstance(entry, InputEntry):
        return _content_blocks(entry.content)
    if isinstance(entry, AssistantTextEntry):
        return [{"type": "text", "text": entry.content}] if entry.content else []
    if isinstance(entry, ToolCallEntry):
        return [
            {
                "type": "tool_use",
                "id": entry.call_id,
                "name": entry.name,
                "input": _tool_input(entry.arguments),
            }
        ]
    if isinstance(entry, ToolResultEntry):
        return [_tool_result_block(entry, include_images)]
    if not replay_thinking or entry.provider != reasoning_provider:
        return []
    if "redacted" in entry.metadata:
        return [{"type": "redacted_thinking", "data": entry.metadata["redacted"]}]
    block: dict[str, Any] = {"type": "thinking", "thinking": entry.content}
    if entry.metadata.get("signature"):
        block["signature"] = entry.metadata["signature"]
    return [block]


def _system_text(entries: Sequence[TranscriptEntry]) -> str | None:
    texts = [
        text_of(e.content)
        for e in entries
        if isinstance(e, InputEntry) and e.role == "system" and text_of(e.content)
    ]
    return "\n\n".join(texts) if texts else None


@dataclass
class _Blocks:
    """One entry's blocks as encoded JSON, with what message assembly needs to know."""

    json: list[bytes]
    first_text: bool = False
    last_text: bool = False
    thinking_only: bool = False

    @classmethod
    def of(cls, blocks: list[dict[str, Any]]) -> _Blocks:
        return cls(
            [dumpb(b) for b in blocks],
            first_text=bool(blocks) and blocks[0]["type"] == "text",
            last_text=bool(blocks) and blocks[-1]["type"] == "text",
            thinking_only=all(b["type"] in ("thinking", "redacted_thinking") for b in blocks),
        )


def _encoded_blocks(
    entry: TranscriptEntry, *, reasoning_provider: str, replay_thinking: bool, include_images: bool
) -> _Blocks:
    return _Blocks.of(
        _entry_blocks(
            entry,
            reasoning_provider=reasoning_provider,
            replay_thinking=replay_thinking,
            include_images=include_images,
        )
    )


@dataclass
class _Message:
    role: str
    start: int
    end: int = 0
    blocks: list[bytes] = field(default_factory=list)
    last_text: bool = False
    thinking_only: bool = True

    def add(self, item: _Blocks, index: int) -> None:
        self.end = index + 1
        if not item.json:
            return
        if self.role == "user" and self.blocks and self.last_text and item.first_text:
            self.blocks.append(_SEPARATOR)  # merged user inputs stay visibly apart
        self.blocks.extend(item.json)
        self.last_text = item.last_text
        self.thinking_only = self.thinking_only and item.thinking_only

    def encode(self) -> bytes:
        head = b'{"role":"%s","content":' % self.role.encode()
        return b"".join([head, *Raw.array(self.blocks).parts, b"}"])


def _assemble(
    entries: Sequence[TranscriptEntry], start: int, blocks_of: Callable[[TranscriptEntry], _Blocks]
) -> list[_Message]:
    """Alternating user/assistant messages from ``entries[start:]`` (system entries skipped).

    Tool results and user inputs share user messages; consecutive assistant-side entries
    form one assistant message, dropped when it holds nothing but thinking.
    """
    messages: list[_Message] = []
    assistant: _Message | None = None

    def flush() -> None:
        nonlocal assistant
        if assistant is not None and assistant.blocks and not assistant.thinking_only:
            messages.append(assistant)
        assistant = None

    for index in range(start, len(entries)):
        entry = entries[index]
        if isinstance(entry, InputEntry):
            if entry.role == "system":
                continue
            blocks = blocks_of(entry)
            if not blocks.json:
                continue  # an empty user input does not even end the assistant turn
            flush()
        elif isinstance(entry, ToolResultEntry):
            blocks = blocks_of(entry)
            flush()
        else:
            if assistant is None:
                assistant = _Message("assistant", index)
            assistant.add(blocks_of(entry), index)
            continue
        if not messages or messages[-1].role != "user":
            messages.append(_Message("user", index, thinking_only=False))
        messages[-1].add(blocks, index)
    flush()
    return messages


def _to_anthropic_messages(
    entries: Sequence[TranscriptEntry],
    *,
    reasoning_provider: str = REASONING_PROVIDER,
    replay_thinking: bool = True,
    include_images: bool = False,
) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """``(system_blocks | None, messages)`` for the Messages API."""

    blocks_of = functools.partial(
        _encoded_blocks,
        reasoning_provider=reasoning_provider,
        replay_thinking=replay_thinking,
        include_images=include_images,
    )
    system = _system_text(entries)
    messages = [json.loads(m.encode()) for m in _assemble(entries, 0, blocks_of)]
    return ([{"type": "text", "text": system}] if system else None), messages


# --------------------------------------------------------------------------- provider


def _convert_tools(tools: list[dict[str, Any]], cache_last: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for schema in tools:
        fn = schema.get("function", schema)
        tool: dict[str, Any] = {
            "name": fn["name"],
            "description": fn.get("description") or "",
            "input_schema": fn.get("parameters") or {"type": "object", "properties": {}},
        }
        if "strict" in fn:
            tool["strict"] = fn["strict"]
        out.append(tool)
    if cache_last and out:
        out[-1]["cache_control"] = {"type": "ephemeral"}
    return out


class AnthropicProvider(SDKProvider):
    """Messages streaming through ``anthropic.AsyncAnthropic``.

    Thinking blocks round-trip with their signatures; ``provider_options={"anthropic":
    {"thinking": {...}, "cache_system": True}}`` enables extended thinking and prompt caching.
    The SDK client is shared per endpoint and built with ``max_retries=0``.
    """

    name = "anthropic"
    supports_json_schema = True
    vendor = "anthropic"
    label = LABEL
    api_key_env = "ANTHROPIC_API_KEY"
    base_url_env = "ANTHROPIC_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    base_url_example = "https://api.anthropic.com (a '/v1' suffix is optional)"
    official_hosts = OFFICIAL_HOSTS
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
        anthropic_version: str = DEFAULT_VERSION,
        default_max_tokens: int = 16_384,
        default_headers: dict[str, str] | None = None,
        trust_env: bool | None = None,
        official_dialect: bool | None = None,
        supports_vision: bool | None = None,
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
        self.anthropic_version = anthropic_version
        self.default_max_tokens = default_max_tokens
        self._tools = SchemaCache()
        self._headers: dict[str, object] | None = None

    # ------------------------------------------------------------------ SDK plumbing

    def _normalize_base_url(self, url: str) -> str:
        # The SDK convention (ANTHROPIC_BASE_URL) has no /v1; lovia's has. Accept both.
        cleaned = normalize_base_url(
            url, label=self.label, env_var=self.base_url_env, example=self.base_url_example
        )
        return cleaned if cleaned.endswith("/v1") else cleaned + "/v1"

    def _models_params(self) -> dict[str, Any]:
        return {"limit": 100} if self.is_official_host else {}

    def _sdk_errors(self) -> tuple[type[BaseException], type[BaseException], type[BaseException]]:
        import anthropic

        return (anthropic.APIStatusError, anthropic.APITimeoutError, anthropic.APIConnectionError)

    def _request_headers(self) -> dict[str, object]:
        if self._headers is None:
            import anthropic

            headers: dict[str, object] = {
                "content-type": "application/json",
                "anthropic-version": self.anthropic_version,
            }
            for key, value in self.default_headers.items():
                if key == "x-api-key" and self._api_key:
                    continue  # the API key wins over a user auth header
                headers[key] = value
            if self._client is None:
                if self._api_key:
                    headers["x-api-key"] = self._api_key
                headers.setdefault("authorization", anthropic.omit)  # no SDK bearer header
            self._headers = headers
        return self._headers

    def _build_client(self) -> Any:
        import anthropic

        http = anthropic.DefaultAsyncHttpxClient(
            timeout=self._http_timeout(), verify=resolve_verify(), trust_env=self.trust_env
        )
        # api_key="" keeps the SDK from reading credentials from the environment or disk;
        # lovia sends x-api-key itself.
        return anthropic.AsyncAnthropic(
            api_key="", base_url=self.base_url, max_retries=0, http_client=http
        )

    # ------------------------------------------------------------------ request body

    def _encode_messages(self, entries: Sequence[TranscriptEntry], replay_thinking: bool) -> Raw:
        blocks_of = functools.partial(
            _encoded_blocks,
            reasoning_provider=REASONING_PROVIDER,
            replay_thinking=replay_thinking,
            include_images=self.supports_vision,
        )

        def encode_from(start: int) -> list[Unit]:
            # an assistant message is a safe restart point: nothing merges into it later
            return [
                Unit(m.start, m.end, [m.encode()], resumable=m.role == "assistant")
                for m in _assemble(entries, start, blocks_of)
            ]

        units = self._messages.units(entries, encode_from, variant=replay_thinking)
        return Raw.array([piece for unit in units for piece in unit.pieces])

    def _build_payload(
        self,
        entries: Sequence[TranscriptEntry],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None,
        settings: ModelSettings | None,
    ) -> dict[str, Any]:
        """The request body; ``messages`` and ``tools`` are pre-encoded :class:`Raw` JSON."""
        extra = provider_options(settings, "claude", "anthropic") if settings else {}
        cache_system = bool(extra.pop("cache_system", False))
        thinking = extra.get("thinking")
        replay_thinking = not (
            self.official_dialect and (thinking is None or thinking == {"type": "disabled"})
        )
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": self._encode_messages(entries, replay_thinking),
            "max_tokens": settings.max_tokens
            if settings is not None and settings.max_tokens is not None
            else self.default_max_tokens,
        }
        system = _system_text(entries)
        if system:
            block: dict[str, Any] = {"type": "text", "text": system}
            if cache_system:
                block["cache_control"] = {"type": "ephemeral"}
            payload["system"] = [block]
        if tools:
            data = self._tools.get(
                tools,
                lambda: dumpb(_convert_tools(tools, cache_system)),
                variant=(cache_system, len(tools)),
            )
            payload["tools"] = Raw([data])
        if response_format is not None and response_format.get("type") == "json_schema":
            schema = (response_format.get("json_schema") or {}).get("schema")
            if schema is not None:
                payload["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
        no_parallel = settings is not None and settings.parallel_tool_calls is False
        if tools and no_parallel and "tool_choice" not in extra:
            payload["tool_choice"] = {"type": "auto", "disable_parallel_tool_use": True}
        payload["stream"] = True
        if settings is not None:
            payload["temperature"] = settings.temperature
            payload["top_p"] = settings.top_p
            payload["stop_sequences"] = settings.stop
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
        sse = await self._open("/messages", entries, tools, response_format, settings)
        endpoint = self.endpoint
        usage = Usage()
        stop_reason: str | None = None
        stopped = False
        blocks: dict[int, _BlockState] = {}
        try:
            async for event in sse.events():
                kind = event.get("type")
                if kind == "content_block_delta":
                    state = blocks.get(event.get("index", 0))
                    delta = event.get("delta") or {}
                    if state is None:
                        continue
                    dkind = delta.get("type")
                    if dkind == "text_delta":
                        text = delta.get("text") or ""
                        if text:
                            state.parts.append(text)
                            yield TextDelta(text)
                    elif dkind == "thinking_delta":
                        thought = delta.get("thinking") or ""
                        if thought:
                            state.parts.append(thought)
                            yield ReasoningDelta(thought)
                    elif dkind == "signature_delta":
                        state.signature += delta.get("signature") or ""
                    elif dkind == "input_json_delta":
                        partial = delta.get("partial_json") or ""
                        state.parts.append(partial)
                        yield ToolCallDelta(
                            index=state.index, call_id=state.id, name=state.name, arguments=partial
                        )
                elif kind == "content_block_start":
                    index = event.get("index", 0)
                    state = _BlockState.start(index, event.get("content_block") or {})
                    blocks[index] = state
                    if state.kind == "tool_use":
                        yield ToolCallDelta(
                            index=index,
                            call_id=state.id,
                            name=state.name,
                            arguments="".join(state.parts),
                        )
                    elif state.parts and state.kind == "text":
                        yield TextDelta(state.parts[0])
                    elif state.parts and state.kind == "thinking":
                        yield ReasoningDelta(state.parts[0])
                elif kind == "content_block_stop":
                    state = blocks.pop(event.get("index", 0), None)
                    entry = state.entry() if state is not None else None
                    if entry is not None:
                        yield EntryCompletedDelta(entry)
                elif kind == "message_start":
                    raw = (event.get("message") or {}).get("usage") or {}
                    usage = Usage(
                        input_tokens=int(raw.get("input_tokens") or 0),
                        output_tokens=int(raw.get("output_tokens") or 0),
                        cache_read_tokens=int(raw.get("cache_read_input_tokens") or 0),
                        cache_write_tokens=int(raw.get("cache_creation_input_tokens") or 0),
                    )
                elif kind == "message_delta":
                    reason = (event.get("delta") or {}).get("stop_reason")
                    if reason:
                        stop_reason = reason
                    _update_usage(usage, event.get("usage") or {})
                elif kind == "message_stop":
                    stopped = True
                    sse.finish()
                elif kind == "error":
                    raise stream_error(endpoint, event.get("error"))
        finally:
            await sse.aclose()
        if stop_reason is None and not stopped:
            raise ProviderError(
                "Anthropic stream ended without a stop_reason or message_stop event "
                "(truncated response)",
                vendor="anthropic",
                model=self.model,
                retryable=True,
            )
        usage.input_tokens += usage.cache_read_tokens + usage.cache_write_tokens
        yield UsageDelta(usage)
        yield FinishDelta(_normalize_stop_reason(stop_reason))


@dataclass
class _BlockState:
    index: int
    kind: str
    id: str = ""
    name: str = ""
    signature: str = ""
    data: str = ""
    parts: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, index: int, block: dict[str, Any]) -> _BlockState:
        kind = str(block.get("type") or "")
        state = cls(index, kind, id=block.get("id") or "", name=block.get("name") or "")
        if kind == "tool_use":
            initial = block.get("input")
            if initial:
                state.parts.append(json.dumps(initial))
        elif kind == "text" and block.get("text"):
            state.parts.append(block["text"])
        elif kind == "thinking":
            if block.get("thinking"):
                state.parts.append(block["thinking"])
            state.signature = block.get("signature") or ""
        elif kind == "redacted_thinking":
            state.data = block.get("data") or ""
        return state

    def entry(self) -> TranscriptEntry | None:
        content = "".join(self.parts)
        if self.kind == "text":
            return AssistantTextEntry(content) if content else None
        if self.kind == "thinking":
            metadata = {"signature": self.signature} if self.signature else {}
            return ReasoningEntry(content, provider=REASONING_PROVIDER, metadata=metadata)
        if self.kind == "redacted_thinking":
            return ReasoningEntry("", provider=REASONING_PROVIDER, metadata={"redacted": self.data})
        if self.kind == "tool_use":
            return ToolCallEntry(self.id, self.name, content or "{}")
        return None


def _update_usage(usage: Usage, raw: dict[str, Any]) -> None:
    if raw.get("output_tokens") is not None:
        usage.output_tokens = int(raw["output_tokens"])
    if raw.get("input_tokens") is not None:
        usage.input_tokens = int(raw["input_tokens"])
    if raw.get("cache_read_input_tokens") is not None:
        usage.cache_read_tokens = int(raw["cache_read_input_tokens"])
    if raw.get("cache_creation_input_tokens") is not None:
        usage.cache_write_tokens = int(raw["cache_creation_input_tokens"])


__all__ = ["AnthropicProvider", "is_context_overflow"]
