"""Build request bodies as bytes, reusing the JSON of transcript entries sent last time.

An agent run resends the whole transcript on every turn, and almost all of it is what the
previous request carried. :class:`FragmentCache` keeps, per provider instance, the JSON text
produced for each group of entries in the last request, keyed by the identity of those
entry objects (entries are immutable by convention: the runtime replaces, never mutates
them). A turn therefore only encodes what is new, and building a body costs about the same
at turn 50 as at turn 1.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

T = TypeVar("T")

dumps: Callable[[Any], str] = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""Compact JSON, UTF-8 text kept as is."""


class Raw:
    """Already-encoded JSON text to splice into a body."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class FragmentCache(Generic[T]):
    """What a group of entries encoded to, remembered from one request to the next.

    Keys are the ``id()``s of the entries. The cache holds the entries themselves, so while a
    key is cached no other object can have those ids: a hit is always the same objects.
    """

    __slots__ = ("_last", "_next")

    def __init__(self) -> None:
        self._last: dict[tuple[int, ...], tuple[tuple[object, ...], T]] = {}
        self._next: dict[tuple[int, ...], tuple[tuple[object, ...], T]] = {}

    def begin(self) -> None:
        self._next = {}

    def get(self, items: Sequence[object], build: Callable[[], T]) -> T:
        key = tuple(map(id, items))
        hit = self._last.get(key)
        value = hit[1] if hit is not None else build()
        self._next[key] = (tuple(items), value)
        return value

    def commit(self) -> None:
        self._last = self._next
        self._next = {}

    def clear(self) -> None:
        self._last = {}
        self._next = {}


class SchemaCache:
    """The encoded JSON of the last tools list seen, keyed by the list's identity."""

    __slots__ = ("_src", "_text")

    def __init__(self) -> None:
        self._src: object = None
        self._text = ""

    def get(self, src: object, build: Callable[[], str]) -> str:
        if src is not self._src:
            self._text = build()
            self._src = src
        return self._text


def encode_body(payload: Mapping[str, Any]) -> bytes:
    """``payload`` as compact JSON bytes; :class:`Raw` values are spliced in verbatim."""
    parts: list[str] = []
    for key, value in payload.items():
        parts.append(dumps(key) + ":" + (value.text if isinstance(value, Raw) else dumps(value)))
    return ("{" + ",".join(parts) + "}").encode()


__all__ = ["FragmentCache", "Raw", "SchemaCache", "dumps", "encode_body"]
