"""OpenAI Chat Completions (and every OpenAI-compatible server) on the official ``openai`` SDK.

The SDK is imported on first use, never by ``import lovia``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from lovia.exceptions import ProviderError, UserError
from lovia.messages import Message, Usage
from lovia.model_view import conversation_of
from lovia.parts import ContentPart, ImagePart, TextPart
from lovia.providers._encoding import (
    Raw,
    SchemaCache,
    Unit,
    dumpb,
)
from lovia.providers._errors import stream_error
from lovia.providers._http import host_matches
from lovia.providers._openai_sdk import OpenAISDKProvider
from lovia.providers._windows import WindowRules
from lovia.providers.base import ModelSettings, provider_options
from lovia.providers.cache_keys import prompt_cache_key
from lovia.providers.cache_watch import leading_system_fingerprint
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

REPLAY_REASONING_HOSTS = ("api.deepseek.com",)
LABEL = "OpenAI Chat"
REASONING_PROVIDER = "openai-chat"

WINDOWS: dict[str, WindowRules] = {
    "api.openai.com": {
        "gpt-4.1": 1_047_576,
        "gpt-5": 400_000,
        "gpt-5.5": 1_050_000,
        "gpt-5.5-pro": 1_050_000,
        "gpt-5.4": 1_050_000,
        "gpt-5.4-mini": 400_000,
        "gpt-5.2": 400_000,
        "gpt-5.2-pro": 400_000,
    },
    "api.deepseek.com": {"deepseek-v4-pro": 1_048_565},
}

_OVERFLOW_MARKERS = (
    "context_length_exceeded",
    "context length",
    "context window",
    "context limit",
    "context size",  # llama.cpp: exceed_context_size_error
    "prompt is too long",
    "input is too long",
    "input length",
    "reduce the length of the input",
    "reduce the length of the messages",
    "too many tokens",
    "token count exceeds",
    "exceeds the maximum number of tokens",
    "too many total text bytes",
    "request too large",
)
_SYSTEM_HEAD = b'{"role":"system"'
_IMAGE_NOTE = "\n\n[The image output of this tool follows in a user message.]"


def is_context_overflow(status: int, body: str) -> bool:
    """``body`` is lower-cased."""
    if status not in (400, 413):
        return False
    if any(m in body for m in _OVERFLOW_MARKERS):
        return True
    return "string too long" in body and "context" in body


# --------------------------------------------------------------------------- wire mapping


def _part_to_openai(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        url = part.url if part.url is not None else f"data:{part.mime_type};base64,{part.data}"
        image: dict[str, Any] = {"url": url}
        if part.detail:
            image["detail"] = part.detail
        return {"type": "image_url", "image_url": image}
    if part.url is not None:
        raise UserError(
            "OpenAI Chat provider does not support FilePart URL inputs",
            hint="Pass the file inline: FilePart.from_path(...) or FilePart.from_bytes(...).",
        )
    file: dict[str, Any] = {"file_data": f"data:{part.mime_type};base64,{part.data}"}
    if part.filename:
        file["filename"] = part.filename
    return {"type": "file", "file": file}


def _content_to_openai(content: str | Sequence[ContentPart]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [_part_to_openai(p) for p in content]


def _call_to_openai(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def message_to_openai(msg: Message) -> dict[str, Any]:
    """One lovia ``Message`` as a Chat Completions message."""
    out: dict[str, Any] = {"role": msg.role}
    if msg.content is not None:
        out["content"] = _content_to_openai(msg.content)
    if msg.tool_calls:
        out["tool_calls"] = [_call_to_openai(c.id, c.name, c.arguments) for c in msg.tool_calls]
    if msg.tool_call_id is not None:
        out["tool_call_id"] = msg.tool_call_id
    if msg.name is not None and msg.role in ("user", "assistant"):
        out["name"] = msg.name
    return out


def _merge_contents(
    a: str | list[dict[str, Any]], b: str | list[dict[str, Any]]
) -> str | list[dict[str, Any]]:
    if isinstance(a, str) and isinstance(b, str):
        return b if not a else a if not b else a + "\n\n" + b
    if isinstance(a, str) and not a:
        return b
    if isinstance(b, str) and not b:
        return a
    left = [{"type": "text", "text": a}] if isinstance(a, str) else a
    right = [{"type": "text", "text": b}] if isinstance(b, str) else b
    return [*left, {"type": "text", "text": "\n\n"}, *right]


_Group = tuple[str, int, list[TranscriptEntry]]


def _groups(entries: Sequence[TranscriptEntry], start: int = 0) -> list[_Group]:
    """Runs of entries (from ``start``) that become one message or a block of tool messages.

    Each group is ``(kind, index of its first entry, entries)``; kinds are the input roles,
    ``assistant`` and ``tool``.
    """
    groups: list[_Group] = []
    last = ""
    for index in range(start, len(entries)):
        entry = entries[index]
        kind: str
        if isinstance(entry, InputEntry):
            kind = entry.role
        elif isinstance(entry, ToolResultEntry):
            kind = "tool"
        else:
            kind = "assistant"
        if kind == last:
            groups[-1][2].append(entry)
        else:
            groups.append((kind, index, [entry]))
            last = kind
    return groups


def _group_to_messages(
    kind: str,
    entries: Sequence[TranscriptEntry],
    *,
    reasoning_provider: str,
    include_reasoning: bool,
    include_images: bool,
) -> list[dict[str, Any]]:
    if kind == "assistant":
        text: list[str] = []
        reasoning: list[str] = []
        calls: list[dict[str, Any]] = []
        for e in entries:
            if isinstance(e, AssistantTextEntry):
                text.append(e.content)
            elif isinstance(e, ToolCallEntry):
                calls.append(_call_to_openai(e.call_id, e.name, e.arguments))
            elif (
                isinstance(e, ReasoningEntry)
                and include_reasoning
                and e.provider == reasoning_provider
            ):
                reasoning.append(e.content)
        joined = "".join(text)
        if not joined and not calls:
            return []  # nothing, or reasoning only
        msg: dict[str, Any] = {"role": "assistant"}
        if joined:
            msg["content"] = joined
        if reasoning and "".join(reasoning):
            msg["reasoning_content"] = "".join(reasoning)
        if calls:
            msg["tool_calls"] = calls
        return [msg]
    if kind == "tool":
        out: list[dict[str, Any]] = []
        images: list[dict[str, Any]] = []
        for e in entries:
            assert isinstance(e, ToolResultEntry)
            output = e.output
            parts = [p for p in e.parts or () if isinstance(p, ImagePart)] if include_images else []
            if parts:
                output += _IMAGE_NOTE
                for p in parts:
                    images.append({"type": "text", "text": f"Image from tool call {e.call_id}:"})
                    images.append(_part_to_openai(p))
            out.append({"role": "tool", "content": output, "tool_call_id": e.call_id})
        if images:
            out.append({"role": "user", "content": images})
        return out
    merged: str | list[dict[str, Any]] = ""
    for i, e in enumerate(entries):
        assert isinstance(e, InputEntry)
        converted = _content_to_openai(e.content)
        merged = converted if i == 0 else _merge_contents(merged, converted)
    return [{"role": kind, "content": merged}]


def entries_to_openai_messages(
    entries: Sequence[TranscriptEntry],
    *,
    reasoning_provider: str = REASONING_PROVIDER,
    include_reasoning: bool = True,
    include_images: bool = False,
) -> list[dict[str, Any]]:
    """The transcript as Chat Completions ``messages``."""
    return [
        m
        for kind, _, group in _groups(entries)
        for m in _group_to_messages(
            kind,
            group,
            reasoning_provider=reasoning_provider,
            include_reasoning=include_reasoning,
            include_images=include_images,
        )
    ]


# --------------------------------------------------------------------------- provider


class OpenAIChatProvider(OpenAISDKProvider):
    """Chat Completions streaming through ``openai.AsyncOpenAI``.

    Works with api.openai.com and any OpenAI-compatible server (vLLM, llama.cpp, Ollama,
    LM Studio, gateways) through ``base_url`` / ``OPENAI_BASE_URL``. The SDK client is
    shared per endpoint (see :mod:`lovia.providers._clients` for the ownership rule) and
    built with ``max_retries=0``: retries are lovia's ``RetryPolicy``. On the official dialect
    each conversation's requests share a ``prompt_cache_key`` (a hash of its id), so OpenAI
    routes them to one prompt cache; ``provider_options={"openai": {"prompt_cache_key": ...}}``
    overrides it, ``None`` leaves it out.
    """

    name = "openai-chat"
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
        supports_json_schema: bool | None = None,
        trust_env: bool | None = None,
        replay_reasoning: bool | None = None,
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
        self.supports_json_schema: bool = (
            supports_json_schema if supports_json_schema is not None else self.official_dialect
        )
        if replay_reasoning is not None:
            self.replay_reasoning = replay_reasoning
        elif host_matches(self.host, REPLAY_REASONING_HOSTS):
            self.replay_reasoning = True
        else:
            self.replay_reasoning = not self.official_dialect
        self._tools = SchemaCache()
        self._last_pieces: list[bytes] = []  # the last request's messages, for its fingerprint

    # ------------------------------------------------------------------ request body

    def _encode_from(self, entries: Sequence[TranscriptEntry], start: int) -> list[Unit]:
        units = []
        for kind, first, group in _groups(entries, start):
            messages = _group_to_messages(
                kind,
                group,
                reasoning_provider=REASONING_PROVIDER,
                include_reasoning=self.replay_reasoning,
                include_images=self.supports_vision,
            )
            units.append(Unit(first, first + len(group), [dumpb(m) for m in messages]))
        return units

    def _encode_messages(self, entries: Sequence[TranscriptEntry]) -> Raw:
        units = self._messages.units(entries, lambda start: self._encode_from(entries, start))
        pieces = [piece for unit in units for piece in unit.pieces]
        self._last_pieces = pieces
        return Raw.array(pieces)

    def _build_payload(
        self,
        entries: Sequence[TranscriptEntry],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None,
        settings: ModelSettings | None,
    ) -> dict[str, Any]:
        """The request body; ``messages`` and ``tools`` are pre-encoded :class:`Raw` JSON.

        On the official dialect ``prompt_cache_key`` is derived from the conversation
        (:func:`~lovia.providers.cache_keys.prompt_cache_key`); an option overrides it and
        ``None`` removes it. Other servers get it only when the options set it: some reject
        fields they do not know.
        """
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": self._encode_messages(entries),
            "stream": True,
        }
        tools_data = b""
        if tools:
            tools_data = self._tools.get(tools, lambda: dumpb(tools), variant=len(tools))
            payload["tools"] = Raw([tools_data])
        if response_format is not None:
            payload["response_format"] = response_format
        if self.official_dialect:
            payload["prompt_cache_key"] = prompt_cache_key(conversation_of(entries))
        extra: dict[str, Any] = {}
        if settings is not None:
            payload["temperature"] = settings.temperature
            payload["top_p"] = settings.top_p
            max_key = "max_completion_tokens" if self.official_dialect else "max_tokens"
            payload[max_key] = settings.max_tokens
            payload["stop"] = settings.stop
            payload["parallel_tool_calls"] = settings.parallel_tool_calls
            extra = provider_options(settings, "openai", "openai-chat")
            payload.update(extra)
        payload.setdefault("stream_options", {"include_usage": True})
        self._remember_prefix(
            entries, leading_system_fingerprint(self._last_pieces, _SYSTEM_HEAD, tools_data, extra)
        )
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
        sse = await self._open("/chat/completions", entries, tools, response_format, settings)
        endpoint = self.endpoint
        usage = Usage()
        finish: str | None = None
        reasoning: list[str] = []
        call_ids: dict[int, str] = {}
        call_names: dict[int, str] = {}
        try:
            async for chunk in sse.events():
                error = chunk.get("error")
                if error:
                    raise stream_error(endpoint, error)
                raw_usage = chunk.get("usage")
                if raw_usage:
                    usage = _usage(raw_usage)
                choices = chunk.get("choices")
                if not choices:
                    continue
                choice = choices[0]
                delta = choice.get("delta") or {}
                text = delta.get("content")
                if text:
                    yield TextDelta(text)
                thought = delta.get("reasoning_content") or delta.get("reasoning")
                if thought and isinstance(thought, str):
                    reasoning.append(thought)
                    yield ReasoningDelta(thought)
                for position, call in enumerate(delta.get("tool_calls") or ()):
                    index = call.get("index")
                    if not isinstance(index, int) or isinstance(index, bool):
                        index = position
                    if call.get("id"):
                        call_ids[index] = call["id"]
                    function = call.get("function") or {}
                    if function.get("name"):
                        call_names[index] = function["name"]
                    yield ToolCallDelta(
                        index=index,
                        call_id=call_ids.get(index, ""),
                        name=call_names.get(index, ""),
                        arguments=function.get("arguments") or "",
                    )
                reason = choice.get("finish_reason")
                if reason:
                    finish = reason
        finally:
            await sse.aclose()
        if finish is None and not sse.saw_done_marker:
            raise ProviderError(
                "OpenAI Chat stream ended without a finish_reason or [DONE] marker "
                "(truncated response)",
                vendor="openai",
                model=self.model,
                retryable=True,
            )
        if reasoning:
            yield EntryCompletedDelta(
                ReasoningEntry("".join(reasoning), provider=REASONING_PROVIDER)
            )
        self._check_cache(entries, usage.cache_read_tokens)
        yield UsageDelta(usage)
        yield FinishDelta(finish)


def _usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if cached is None:
        cached = raw.get("prompt_cache_hit_tokens")  # DeepSeek
    return Usage(
        input_tokens=int(raw.get("prompt_tokens") or 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cache_read_tokens=int(cached or 0),
    )


__all__ = [
    "OpenAIChatProvider",
    "entries_to_openai_messages",
    "is_context_overflow",
    "message_to_openai",
]
