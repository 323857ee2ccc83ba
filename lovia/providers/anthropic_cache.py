"""Where an Anthropic request puts its prompt-cache breakpoints.

Anthropic caches a request's prefix only up to blocks marked ``cache_control``, at most four
per request, and looks for an earlier write only 20 blocks back from each mark. So every
request marks, within that limit:

- the last tool and the last system block (they survive a compaction that rewrites history);
- the tail: the last block of the entries the next call repeats (:func:`~lovia.model_view.
  stable_count`), never a per-turn reminder after it, so the next call reads what this one
  wrote;
- the previous call's tail (the last block of the user message before the latest assistant
  message), so this call reads what the previous one wrote however many blocks came since.

A mark is spliced into this request's copy of a message's encoded blocks; the cached
encoding of a message never carries one, so the mark can move on the next call for free.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lovia.exceptions import UserError
from lovia.providers._encoding import dumpb
from lovia.providers.anthropic_wire import MessageUnit

MAX_BREAKPOINTS = 4
"""Anthropic rejects a request with more ``cache_control`` marks than this."""

TTLS = ("5m", "1h")


@dataclass(frozen=True)
class CachePlan:
    """What this request marks: ``control`` is the ``cache_control`` value (None: caching
    off); ``tools``, ``system`` whether those get a mark; ``messages`` how many message
    marks fit (0, 1 or 2)."""

    control: dict[str, str] | None
    tools: bool = False
    system: bool = False
    messages: int = 0


def cache_control(extra: dict[str, Any]) -> dict[str, str] | None:
    """Pop lovia's cache options from the provider options; the mark to use, None when off.

    ``cache`` (default True) turns caching on or off; ``cache_ttl`` picks ``"5m"`` (default)
    or ``"1h"``; ``cache_system`` is accepted for compatibility (caching is the default now,
    and ``cache_system: False`` alone does not turn it off).
    """
    enabled = extra.pop("cache", True)
    extra.pop("cache_system", None)
    ttl = extra.pop("cache_ttl", None)
    if ttl is not None and ttl not in TTLS:
        raise UserError(
            f"Anthropic cache_ttl must be '5m' or '1h', not {ttl!r}",
            hint='Use provider_options={"anthropic": {"cache_ttl": "1h"}}, or leave it out '
            "for the 5-minute default.",
        )
    if enabled is False:
        return None
    return {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}


def count_marks(value: Any) -> int:
    """How many ``cache_control`` marks a value (the user's provider options) carries."""
    if isinstance(value, Mapping):
        own = 1 if value.get("cache_control") is not None else 0
        return own + sum(count_marks(v) for k, v in value.items() if k != "cache_control")
    if isinstance(value, list | tuple):
        return sum(count_marks(v) for v in value)
    return 0


def plan(
    control: dict[str, str] | None,
    extra: Mapping[str, Any],
    *,
    has_tools: bool,
    has_system: bool,
) -> CachePlan:
    """Fit lovia's marks beside the user's within :data:`MAX_BREAKPOINTS`.

    Short of room, the previous tail goes first (needed only when more than 20 blocks came
    since the last call), then the tools, then the system prompt; the tail, which covers
    everything before it, goes last. Parts the user's options replace get no mark of ours.
    """
    if control is None:
        return CachePlan(None)
    room = MAX_BREAKPOINTS - count_marks(extra)
    wanted = ["tail"] if "messages" not in extra else []
    if has_system and "system" not in extra:
        wanted.append("system")
    if has_tools and "tools" not in extra:
        wanted.append("tools")
    if "messages" not in extra:
        wanted.append("previous")
    kept = wanted[: max(0, room)]
    return CachePlan(
        control,
        tools="tools" in kept,
        system="system" in kept,
        messages=("tail" in kept) + ("previous" in kept),
    )


def _last_markable(unit: MessageUnit, stable: int) -> int | None:
    for block in range(len(unit.sources) - 1, -1, -1):
        if 0 <= unit.sources[block] < stable:
            return block
    return None


def message_marks(units: Sequence[MessageUnit], stable: int, room: int) -> list[tuple[int, int]]:
    """``(message, block)`` positions to mark, oldest first, at most ``room`` of them.

    The tail is the last markable block from the first ``stable`` entries; the previous
    tail is the last markable block of the user message before the latest assistant
    message at or before the tail. The oldest is dropped first when room is short.
    """
    if room <= 0:
        return []
    tail: tuple[int, int] | None = None
    for index in range(len(units) - 1, -1, -1):
        block = _last_markable(units[index], stable)
        if block is not None:
            tail = (index, block)
            break
    if tail is None:
        return []
    marks = [tail]
    assistant = next((i for i in range(tail[0], -1, -1) if units[i].role == "assistant"), None)
    if assistant is not None and assistant > 0:
        block = _last_markable(units[assistant - 1], stable)
        if block is not None:
            marks.insert(0, (assistant - 1, block))
    return marks[-room:]


@functools.cache
def _member(ttl: str | None) -> bytes:
    control = {"type": "ephemeral", "ttl": ttl} if ttl else {"type": "ephemeral"}
    return b',"cache_control":' + dumpb(control) + b"}"


def marked(block: bytes, control: dict[str, str]) -> bytes:
    """An encoded block (a JSON object) with ``cache_control`` added as its last member."""
    return block[:-1] + _member(control.get("ttl"))


def message_items(
    units: Sequence[MessageUnit], marks: Sequence[tuple[int, int]], control: dict[str, str]
) -> list[bytes]:
    """Each message's JSON, the marked ones re-joined for this request only."""
    items = [unit.pieces[0] for unit in units]
    for index, block in marks:
        unit = units[index]
        items[index] = unit.with_block(block, marked(unit.blocks[block], control))
    return items


__all__ = [
    "MAX_BREAKPOINTS",
    "CachePlan",
    "cache_control",
    "count_marks",
    "marked",
    "message_items",
    "message_marks",
    "plan",
]
