"""Request bodies reuse the previous request's encoding and stay identical to a fresh one."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lovia.model_view import ModelView
from lovia.parts import ImagePart, TextPart
from lovia.providers._encoding import PrefixCache, Raw, Unit, common_prefix, encode_body
from lovia.providers.anthropic import AnthropicProvider, _to_anthropic_messages
from lovia.providers.base import ModelSettings
from lovia.providers.openai import OpenAIChatProvider, entries_to_openai_messages
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)


def test_encode_body_splices_raw_pieces() -> None:
    body = encode_body({"a": 1, "m": Raw.array([b'{"x":1}', b"2"]), "e": Raw.array([]), "s": "é"})
    assert json.loads(body) == {"a": 1, "m": [{"x": 1}, 2], "e": [], "s": "é"}
    assert "é".encode() in body


def test_common_prefix_by_identity() -> None:
    a, b, c = object(), object(), object()
    assert common_prefix([a, b], [a, b, c]) == 2
    assert common_prefix([a, b, c], [a, c]) == 1
    assert common_prefix([], [a]) == 0
    assert common_prefix([a], [object()]) == 0


def test_prefix_cache_reencodes_only_from_the_last_reusable_unit() -> None:
    calls: list[int] = []
    items = [object() for _ in range(5)]

    def encode_from(entries: list[object], start: int) -> list[Unit]:
        calls.append(start)
        return [Unit(i, i + 1, [b"%d" % i]) for i in range(start, len(entries))]

    cache = PrefixCache()
    cache.units(items[:3], lambda s: encode_from(items[:3], s))
    cache.units(items, lambda s: encode_from(items, s))
    cache.units([items[0], object()], lambda s: encode_from(items[:2], s))
    cache.units(items[:2], lambda s: encode_from(items[:2], s), variant="other")
    assert calls == [0, 2, 0, 0]


_text = st.text(alphabet="ab é\n", max_size=6)


@st.composite
def _entry(draw: Any) -> TranscriptEntry:
    kind = draw(st.sampled_from(["system", "user", "parts", "text", "reasoning", "call", "result"]))
    if kind in ("system", "user"):
        return InputEntry(kind, draw(_text))
    if kind == "parts":
        return InputEntry("user", [TextPart(draw(_text)), ImagePart(url="https://x/i.png")])
    if kind == "text":
        return AssistantTextEntry(draw(_text))
    if kind == "reasoning":
        provider = draw(st.sampled_from(["openai-chat", "anthropic", "other"]))
        return ReasoningEntry(draw(_text), provider=provider, metadata={"signature": "s"})
    call_id = draw(st.sampled_from(["c1", "c2", "c3"]))
    if kind == "call":
        return ToolCallEntry(call_id, "tool", draw(st.sampled_from(['{"a":1}', "[1]", ""])))
    return ToolResultEntry(call_id, draw(_text), is_error=draw(st.booleans()))


@st.composite
def _views(draw: Any) -> list[list[TranscriptEntry]]:
    """Successive request views: mostly growth, sometimes edits and a regenerated tail."""
    transcript: list[TranscriptEntry] = draw(st.lists(_entry(), max_size=4))
    views = []
    for _ in range(draw(st.integers(1, 6))):
        transcript = transcript + draw(st.lists(_entry(), max_size=4))
        if transcript and draw(st.booleans()):
            i = draw(st.integers(0, len(transcript) - 1))
            transcript = [*transcript[:i], draw(_entry()), *transcript[i + 1 :]]
        tail = draw(st.lists(_entry(), max_size=2))  # e.g. an injector's fresh reminder
        views.append(transcript + tail)
    return views


@settings(max_examples=60, deadline=None)
@given(_views())
def test_openai_messages_match_a_fresh_encoding(views: list[list[TranscriptEntry]]) -> None:
    provider = OpenAIChatProvider("m", base_url="http://localhost:1/v1", supports_vision=True)
    for view in views:
        encoded = json.loads(encode_body({"messages": provider._encode_messages(view)}))
        fresh = entries_to_openai_messages(view, include_reasoning=True, include_images=True)
        assert encoded["messages"] == fresh


def _strip_marks(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    marks = 0
    for message in messages:
        for block in message["content"]:
            if block.pop("cache_control", None) is not None:
                assert block["type"] not in ("thinking", "redacted_thinking")
                marks += 1
    return messages, marks


@settings(max_examples=60, deadline=None)
@given(
    _views(),
    st.lists(st.booleans(), min_size=6, max_size=6),
    st.lists(st.integers(0, 2), min_size=6, max_size=6),
)
def test_anthropic_messages_match_a_fresh_encoding(
    views: list[list[TranscriptEntry]], replay: list[bool], tails: list[int]
) -> None:
    """Incremental bodies, cache marks included, equal a fresh provider's: a mark placed on
    one request never stays in the cached encoding for the next."""
    url = "http://localhost:1"
    provider = AnthropicProvider("c", base_url=url, official_dialect=True)
    for view, flag, tail in zip(views, replay, tails, strict=False):
        entries = ModelView(view, stable=len(view) - tail)
        thinking = {"thinking": {"type": "enabled", "budget_tokens": 1024}} if flag else {}
        options = ModelSettings(provider_options={"anthropic": thinking})
        body = provider._build_payload(entries, None, None, options)
        encoded = json.loads(encode_body(body))["messages"]
        fresh_provider = AnthropicProvider("c", base_url=url, official_dialect=True)
        fresh_body = fresh_provider._build_payload(entries, None, None, options)
        assert encoded == json.loads(encode_body(fresh_body))["messages"]
        stripped, marks = _strip_marks(encoded)
        assert marks <= 2
        _, plain = _to_anthropic_messages(view, replay_thinking=flag)
        assert stripped == plain
