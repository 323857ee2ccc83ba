"""Report a prompt-cache break, and which part of the prompt caused it.

A cache read that falls far below the previous call's, in the same conversation and without
a compaction (which rewrites history on purpose), means some earlier part of the prompt
changed: a tool list, the system prompt, an edited message. The user only sees a bill that
grew. Each request's fingerprint (hashes of its already-encoded tools, system and message
pieces) is kept per conversation, so the warning can name the first part that differs.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lovia.providers._encoding import dumpb

logger = logging.getLogger("lovia.providers.cache")

MIN_CACHED = 1024
"""Reads below this are too small to judge (the providers' smallest cacheable prefix)."""


@dataclass(frozen=True)
class Fingerprint:
    """Hashes of one request's prefix, in the order the provider caches it."""

    tools: int
    system: int
    messages: tuple[int, ...]
    system_messages: int = 0
    """How many leading ``messages`` are the system prompt (OpenAI sends it as messages)."""


def leading_system_fingerprint(
    messages: Sequence[bytes], system_head: bytes, tools: bytes, extra: Mapping[str, Any]
) -> Fingerprint:
    """The fingerprint of an OpenAI request: its system prompt is the leading messages that
    start with ``system_head``; its tools are the user's override in ``extra`` when given."""
    system = 0
    while system < len(messages) and messages[system].startswith(system_head):
        system += 1
    if "tools" in extra:
        tools = dumpb(extra["tools"])
    # bytes objects cache their hash: pieces reused from the previous request cost nothing
    return Fingerprint(
        tools=hash(tools), system=0, messages=tuple(map(hash, messages)), system_messages=system
    )


def changed_part(before: Fingerprint, after: Fingerprint) -> str | None:
    """The first part of the prefix that differs, or None when ``before`` is still a prefix."""
    if before.tools != after.tools:
        return "tools"
    if before.system != after.system:
        return "system"
    for index, (old, new) in enumerate(zip(before.messages, after.messages, strict=False)):
        if old != new:
            return "system" if index < after.system_messages else f"message {index}"
    if len(after.messages) < len(before.messages):
        return f"message {len(after.messages)}"
    return None


@dataclass
class _Seen:
    fingerprint: Fingerprint
    read: int


class CacheWatch:
    """The previous request of each conversation on one provider instance (bounded)."""

    def __init__(self, label: str, *, minimum: int = MIN_CACHED, limit: int = 64) -> None:
        self.label = label
        self.minimum = minimum
        self.limit = limit
        self._seen: OrderedDict[str | None, _Seen] = OrderedDict()

    def observe(
        self, conversation: str | None, fingerprint: Fingerprint, read: int, *, rewritten: bool
    ) -> str | None:
        """Record a finished call; log and return the changed part when the cache broke."""
        previous = self._seen.pop(conversation, None)
        self._seen[conversation] = _Seen(fingerprint, read)
        while len(self._seen) > self.limit:
            self._seen.popitem(last=False)
        if previous is None or rewritten:
            return None
        if previous.read < self.minimum or read * 2 >= previous.read:
            return None
        part = changed_part(previous.fingerprint, fingerprint)
        if part is None:
            logger.info(
                "cache.expired: %s cache read fell from %d to %d tokens with an unchanged "
                "prefix (the cache entry expired or was evicted)",
                self.label,
                previous.read,
                read,
            )
            return None
        logger.warning(
            "cache.break: %s cache read fell from %d to %d tokens; %s changed since the "
            "previous call of this conversation",
            self.label,
            previous.read,
            read,
            part,
        )
        return part

    def clear(self) -> None:
        self._seen.clear()


__all__ = [
    "MIN_CACHED",
    "CacheWatch",
    "Fingerprint",
    "changed_part",
    "leading_system_fingerprint",
]
