"""Anthropic Messages streaming on the official ``anthropic`` SDK.

The SDK is imported on first use, never by ``import lovia``.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from lovia.exceptions import ProviderError
from lovia.http_config import resolve_verify
from lovia.messages import Usage
from lovia.model_view import stable_count
from lovia.providers import anthropic_cache
from lovia.providers._encoding import Raw, SchemaCache, dumpb
from lovia.providers._errors import stream_error
from lovia.providers._http import normalize_base_url
from lovia.providers._sdk import SDKProvider
from lovia.providers._windows import WindowRules
from lovia.providers.anthropic_wire import (
    REASONING_PROVIDER,
    MessageUnit,
    assemble,
    convert_tools,
    encoded_blocks,
    system_text,
    to_anthropic_messages,
)
from lovia.providers.base import ModelSettings, provider_options
from lovia.providers.cache_watch import Fingerprint
from lovia.transcript import (
    AssistantTextEntry,
    EntryCompletedDelta,
    FinishDelta,
    ModelDelta,
    ReasoningDelta,
    ReasoningEntry,
    TextDelta,
    ToolCallDelta,
    ToolCallEntry,
    TranscriptEntry,
    UsageDelta,
)

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
OFFICIAL_HOSTS = ("api.anthropic.com",)
LABEL = "Anthropic"
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
_digest = operator.attrgetter("digest")
_STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}


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


# --------------------------------------------------------------------------- provider


class AnthropicProvider(SDKProvider):
    """Messages streaming through ``anthropic.AsyncAnthropic``.

    Prompt caching is on by default: ``cache_control`` marks on the last tool, the system
    prompt and the moving tail of the conversation (:mod:`lovia.providers.anthropic_cache`),
    never more than four with any the caller's options add. ``provider_options={"anthropic":
    {"cache": False}}`` turns it off, ``{"cache_ttl": "1h"}`` picks the 1-hour cache; the old
    ``cache_system: True`` is accepted and changes nothing. ``{"thinking": {...}}`` enables
    extended thinking; thinking blocks round-trip with their signatures. The SDK client is
    shared per endpoint and built with ``max_retries=0``.
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

    def _encode_messages(
        self, entries: Sequence[TranscriptEntry], replay_thinking: bool
    ) -> list[MessageUnit]:
        blocks_of = functools.partial(
            encoded_blocks,
            reasoning_provider=REASONING_PROVIDER,
            replay_thinking=replay_thinking,
            include_images=self.supports_vision,
        )

        def encode_from(start: int) -> list[MessageUnit]:
            return [m.unit() for m in assemble(entries, start, blocks_of)]

        return self._messages.units(entries, encode_from, variant=replay_thinking)

    def _build_payload(
        self,
        entries: Sequence[TranscriptEntry],
        tools: list[dict[str, Any]] | None,
        response_format: dict[str, Any] | None,
        settings: ModelSettings | None,
    ) -> dict[str, Any]:
        """The request body; ``messages`` and ``tools`` are pre-encoded :class:`Raw` JSON."""
        extra = provider_options(settings, "claude", "anthropic") if settings else {}
        control = anthropic_cache.cache_control(extra)
        thinking = extra.get("thinking")
        replay_thinking = not (
            self.official_dialect and (thinking is None or thinking == {"type": "disabled"})
        )
        system = system_text(entries)
        cache = anthropic_cache.plan(control, extra, has_tools=bool(tools), has_system=bool(system))
        units = self._encode_messages(entries, replay_thinking)
        marks = anthropic_cache.message_marks(units, stable_count(entries), cache.messages)
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": Raw.array(anthropic_cache.message_items(units, marks, control or {})),
            "max_tokens": settings.max_tokens
            if settings is not None and settings.max_tokens is not None
            else self.default_max_tokens,
        }
        if system:
            block: dict[str, Any] = {"type": "text", "text": system}
            if cache.system and control is not None:
                block["cache_control"] = control
            payload["system"] = [block]
        tools_data = b""
        if tools:
            tools_control = control if cache.tools else None
            tools_data = self._tools.get(
                tools,
                lambda: dumpb(convert_tools(tools, tools_control)),
                variant=(tools_control and tools_control.get("ttl", ""), len(tools)),
            )
            payload["tools"] = Raw([tools_data])
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
        self._remember_prefix(
            entries,
            Fingerprint(
                tools=hash(tools_data) if "tools" not in extra else hash(dumpb(extra["tools"])),
                system=hash(system) if "system" not in extra else hash(dumpb(extra["system"])),
                messages=tuple(map(_digest, units)),
            ),
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
        self._check_cache(entries, usage.cache_read_tokens)
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


_to_anthropic_messages = to_anthropic_messages  # the name the spec (core.md §19.5) gives it

__all__ = ["AnthropicProvider", "is_context_overflow"]
