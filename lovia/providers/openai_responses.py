"""OpenAI's Responses API (``POST /responses``) on the official ``openai`` SDK.

OpenAI's reasoning and coding models carry their reasoning from one turn to the next only
through this API: each response's ``reasoning`` items must be sent back with the next
request. lovia keeps nothing on OpenAI's side (``store: false``) and asks for the reasoning
in encrypted form (``include: ["reasoning.encrypted_content"]``); the encrypted blob is kept
in the :class:`~lovia.transcript.ReasoningEntry`'s metadata, so it survives sessions,
checkpoints and resumes like Anthropic's thinking signatures.

The request items are built in :mod:`._responses_request`, the event stream is read in
:mod:`._responses_stream`. The SDK is imported on first use, never by ``import lovia``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from lovia.exceptions import ProviderError, UserError
from lovia.providers._encoding import Raw, SchemaCache, Unit, dumpb
from lovia.providers._openai_sdk import OpenAISDKProvider
from lovia.providers._responses_request import (
    entries_to_input,
    entry_to_item,
    input_items,
    prompt_cache_key,
    reasoning_item,
    text_format,
    tool_to_responses,
)
from lovia.providers._responses_stream import StreamState
from lovia.providers.base import ModelSettings, provider_options
from lovia.providers.cache_watch import leading_system_fingerprint
from lovia.providers.openai import WINDOWS, is_context_overflow
from lovia.transcript import FinishDelta, ModelDelta, TranscriptEntry, UsageDelta

logger = logging.getLogger("lovia.providers")

LABEL = "OpenAI Responses"
OPTIONS_KEY = "openai-responses"
"""The ``ModelSettings.provider_options`` key this provider reads."""
ENCRYPTED_REASONING = "reasoning.encrypted_content"

_PLAIN_MODELS: set[tuple[str, str]] = set()
"""``(base_url, model)`` pairs that refused encrypted reasoning: models that do not reason."""
_PHASED_MODELS: set[tuple[str, str]] = set()
"""``(base_url, model)`` pairs seen labelling their messages with a ``phase``: they get the
labels back. Others never see the field (a server that does not know it may refuse it)."""


def _refuses_encrypted_reasoning(exc: ProviderError) -> bool:
    """OpenAI's answer to ``include: ["reasoning.encrypted_content"]`` for a model without
    reasoning (``gpt-4.1``, ``gpt-4o``): 400 "Encrypted content is not supported"."""
    body = (exc.body or exc.message).lower()
    return exc.status_code == 400 and "encrypted content" in body and "not supported" in body


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
        self._last_pieces: list[bytes] = []  # the last request's messages, for its fingerprint
        self._asked_encrypted = False  # whether the last request added the default include

    # ------------------------------------------------------------------ request body

    def _encode_from(
        self, entries: Sequence[TranscriptEntry], start: int, stored: bool, phases: bool
    ) -> list[Unit]:
        items = input_items(
            entries,
            start,
            system_role=self.system_role,
            include_images=self.supports_vision,
            stored=stored,
            model=self.model,
            phases=phases,
        )
        # A reasoning item depends on the entry after it; the prefix cache always re-encodes
        # the last unit it shares, so that decision is remade once that entry exists.
        return [
            Unit(index, index + 1, [] if item is None else [dumpb(item)])
            for index, item in enumerate(items, start)
        ]

    def _encode_input(self, entries: Sequence[TranscriptEntry], stored: bool) -> Raw:
        phases = self._phased_model()
        units = self._messages.units(
            entries,
            lambda start: self._encode_from(entries, start, stored, phases),
            variant=(stored, phases),
        )
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
        """The request body; ``input`` and ``tools`` are pre-encoded :class:`Raw` JSON."""
        extra = provider_options(settings, OPTIONS_KEY) if settings is not None else {}
        if settings is not None and settings.stop:
            raise UserError(
                "The OpenAI Responses API has no stop sequences (ModelSettings.stop)",
                hint="Remove stop=... from the agent's settings, or use the Chat Completions "
                "provider ('openai:<model>'), which supports them.",
            )
        stored = extra.get("store") is True
        self._asked_encrypted = "include" not in extra and not self._plain_model()
        payload: dict[str, Any] = {
            "model": self.model,
            "input": self._encode_input(entries, stored),
            "stream": True,
            "store": False,
            "include": [ENCRYPTED_REASONING] if self._asked_encrypted else None,
            "prompt_cache_key": prompt_cache_key(entries),
        }
        tools_data = b""
        if tools:
            tools_data = self._tools.get(
                tools, lambda: dumpb([tool_to_responses(t) for t in tools]), variant=len(tools)
            )
            payload["tools"] = Raw([tools_data])
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
        self._remember_prefix(
            entries,
            leading_system_fingerprint(self._last_pieces, self._system_head, tools_data, extra),
        )
        return {k: v for k, v in payload.items() if v is not None}

    @property
    def _system_head(self) -> bytes:
        """How an encoded system-prompt item starts (see :func:`leading_system_fingerprint`)."""
        return b'{"type":"message","role":"%s"' % self.system_role.encode()

    def _plain_model(self) -> bool:
        return (self.base_url, self.model) in _PLAIN_MODELS

    def _phased_model(self) -> bool:
        return (self.base_url, self.model) in _PHASED_MODELS

    # ------------------------------------------------------------------ streaming

    async def stream(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelDelta]:
        try:
            sse = await self._open("/responses", entries, tools, response_format, settings)
        except ProviderError as exc:
            if not (self._asked_encrypted and _refuses_encrypted_reasoning(exc)):
                raise
            # a model without reasoning: ask again without it, and from now on never ask
            logger.info(
                "provider.no_reasoning: %s at %s has no encrypted reasoning",
                self.model,
                self.base_url,
            )
            _PLAIN_MODELS.add((self.base_url, self.model))
            sse = await self._open("/responses", entries, tools, response_format, settings)
        state = StreamState(self.endpoint, self.model)
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
        if state.phased:
            _PHASED_MODELS.add((self.base_url, self.model))
        self._check_cache(entries, state.usage.cache_read_tokens)
        yield UsageDelta(state.usage)
        yield FinishDelta(state.finish)


__all__ = [
    "OpenAIResponsesProvider",
    "entries_to_input",
    "entry_to_item",
    "input_items",
    "prompt_cache_key",
    "reasoning_item",
    "text_format",
    "tool_to_responses",
]
