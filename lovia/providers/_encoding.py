"""Build request bodies as bytes, reusing the JSON of transcript entries sent last time.

An agent run resends the whole transcript on every turn, and almost all of it is what the
previous request carried. :class:`PrefixCache` keeps, per provider instance, the encoded
JSON of the last request's messages together with the entry objects they came from; the
next request reuses everything up to where its entries stop being the very same objects
(entries are immutable by convention: the runtime replaces, never mutates them). A turn
therefore only encodes what is new, and the body is one ``b"".join`` of cached pieces, so
building it costs about the same at turn 50 as at turn 1.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

dumps: Callable[[Any], str] = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""Compact JSON, UTF-8 text kept as is."""


def dumpb(value: Any) -> bytes:
    """Compact JSON as UTF-8 bytes."""
    return dumps(value).encode()


class Raw:
    """Already-encoded JSON (as byte pieces) to splice into a body verbatim."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[bytes]) -> None:
        self.parts = parts

    @classmethod
    def array(cls, items: Sequence[bytes]) -> Raw:
        """``[item,item,...]`` from encoded items, without joining them yet."""
        if not items:
            return cls([b"[]"])
        inner = [b","] * (2 * len(items) - 1)
        inner[::2] = items
        return cls([b"[", *inner, b"]"])


@dataclass
class Unit:
    """Encoded JSON for the entries ``[start, end)`` of a transcript: a message or a group.

    ``resumable``: encoding may restart at ``start`` knowing nothing of earlier entries.
    """

    start: int
    end: int
    pieces: list[bytes]
    resumable: bool = True


def common_prefix(a: Sequence[object], b: Sequence[object]) -> int:
    """How many leading items ``a`` and ``b`` share by identity."""
    n = min(len(a), len(b))
    if all(map(operator.is_, a, b)):
        return n
    for i in range(n):  # pragma: no branch - a mismatch exists
        if a[i] is not b[i]:
            return i
    return n


U = TypeVar("U", bound=Unit)


class PrefixCache:
    """The units of the previous request, reused for the part of the transcript it shares.

    A run's transcript grows at the end, so each request shares all but its tail with the
    previous one (compared by entry identity). Encoding restarts at the last resumable unit
    lying wholly inside the shared prefix; everything before it is reused as is.
    """

    __slots__ = ("_entries", "_units", "_variant")

    def __init__(self) -> None:
        self._entries: list[object] = []
        self._units: list[Unit] = []
        self._variant: object = None

    def units(
        self,
        entries: Sequence[object],
        encode_from: Callable[[int], list[U]],
        variant: object = None,
    ) -> list[U]:
        """All units for ``entries``; ``encode_from(i)`` encodes ``entries[i:]`` (one
        ``encode_from`` per cache, so the cached units are of its type)."""
        shared = common_prefix(self._entries, entries) if variant == self._variant else 0
        keep, start = 0, 0
        for i in range(len(self._units) - 1, -1, -1):
            unit = self._units[i]
            if unit.resumable and unit.end <= shared:
                keep, start = i, unit.start
                break
        units = cast("list[U]", self._units[:keep]) + encode_from(start)
        self._entries = list(entries)
        self._units = cast("list[Unit]", units)
        self._variant = variant
        return units

    def clear(self) -> None:
        self._entries = []
        self._units = []


class SchemaCache:
    """The encoded JSON of the last tools list seen, keyed by the list's identity.

    The run loop passes the same, unmodified list object on every turn of an agent;
    ``variant`` (e.g. the list's length) guards what else the encoding depends on.
    """

    __slots__ = ("_data", "_src", "_variant")

    def __init__(self) -> None:
        self._src: object = None
        self._variant: object = None
        self._data = b""

    def get(self, src: object, build: Callable[[], bytes], variant: object = None) -> bytes:
        if src is not self._src or variant != self._variant:
            self._data = build()
            self._src = src
            self._variant = variant
        return self._data


def encode_body(payload: Mapping[str, Any]) -> bytes:
    """``payload`` as compact JSON bytes; :class:`Raw` values are spliced in verbatim."""
    parts: list[bytes] = [b"{"]
    for key, value in payload.items():
        if len(parts) > 1:
            parts.append(b",")
        parts.append(dumpb(key) + b":")
        if isinstance(value, Raw):
            parts.extend(value.parts)
        else:
            parts.append(dumpb(value))
    parts.append(b"}")
    return b"".join(parts)


__all__ = [
    "PrefixCache",
    "Raw",
    "SchemaCache",
    "Unit",
    "common_prefix",
    "dumpb",
    "dumps",
    "encode_body",
]
