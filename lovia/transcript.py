"""The canonical transcript: entry types, provider deltas, serialization and windowing.

``TranscriptEntry`` is what the loop, sessions and checkpoints operate on; ``Message`` (in
``lovia.messages``) is only a lossy chat view derived from it.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from lovia.messages import AssistantTurn, Message, ToolCall, Usage
from lovia.parts import ContentPart, FilePart, ImagePart, TextPart, text_of

# --------------------------------------------------------------------------- entries


@dataclass
class InputEntry:
    role: Literal["system", "user"]
    content: str | list[ContentPart]
    type: Literal["input"] = "input"


@dataclass
class AssistantTextEntry:
    content: str
    id: str | None = None
    type: Literal["assistant_text"] = "assistant_text"


@dataclass
class ReasoningEntry:
    content: str
    id: str | None = None
    provider: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    type: Literal["reasoning"] = "reasoning"


@dataclass
class ToolCallEntry:
    call_id: str
    name: str
    arguments: str
    type: Literal["tool_call"] = "tool_call"


@dataclass
class ToolResultEntry:
    call_id: str
    output: str
    raw: object | None = None
    is_error: bool = False
    parts: list[ContentPart] | None = None
    type: Literal["tool_result"] = "tool_result"


TranscriptEntry: TypeAlias = (
    InputEntry | AssistantTextEntry | ReasoningEntry | ToolCallEntry | ToolResultEntry
)

_ENTRY_CLASSES: dict[str, type[Any]] = {
    "input": InputEntry,
    "assistant_text": AssistantTextEntry,
    "reasoning": ReasoningEntry,
    "tool_call": ToolCallEntry,
    "tool_result": ToolResultEntry,
}

# --------------------------------------------------------------------------- provider deltas


@dataclass
class TextDelta:
    """Named as it is: a provider stream's piece of text, which the run emits as
    ``lovia.events.TextDelta``."""

    text: str
    type: Literal["text_delta"] = "text_delta"


@dataclass
class ReasoningDelta:
    """Named as it is: a provider stream's piece of reasoning, emitted as
    ``lovia.events.ReasoningDelta``."""

    text: str
    type: Literal["reasoning_delta"] = "reasoning_delta"


@dataclass
class ToolCallDelta:
    index: int
    call_id: str | None = None
    name: str | None = None
    arguments: str = ""
    type: Literal["tool_call_delta"] = "tool_call_delta"


@dataclass
class UsageDelta:
    usage: Usage
    type: Literal["usage_delta"] = "usage_delta"


@dataclass
class FinishDelta:
    reason: str | None = None
    type: Literal["finish_delta"] = "finish_delta"


@dataclass
class EntryCompletedDelta:
    entry: TranscriptEntry
    type: Literal["entry_completed_delta"] = "entry_completed_delta"


ModelDelta: TypeAlias = (
    TextDelta | ReasoningDelta | ToolCallDelta | UsageDelta | FinishDelta | EntryCompletedDelta
)

# --------------------------------------------------------------------------- serialization

_PART_CLASSES: dict[str, type[Any]] = {"text": TextPart, "image": ImagePart, "file": FilePart}


def _part_to_dict(part: ContentPart) -> dict[str, Any]:
    return dataclasses.asdict(part)


def _part_from_dict(d: Mapping[str, Any]) -> ContentPart:
    kind = d.get("type") if isinstance(d, Mapping) else None
    cls = _PART_CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"Unknown content part type: {kind!r}")
    part: ContentPart = cls(**{k: v for k, v in d.items() if k != "type"})
    return part


def to_json_safe(value: Any) -> Any:
    """A JSON-safe copy of ``value``; anything not representable becomes ``None``."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "model_dump") and not isinstance(value, type):
        try:
            return to_json_safe(value.model_dump(mode="json"))
        except Exception:
            return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        try:
            return to_json_safe(dataclasses.asdict(value))
        except Exception:
            return None
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            safe = to_json_safe(v)
            if safe is None and v is not None:
                return None
            out[str(k)] = safe
        return out
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        items: list[Any] = []
        for v in value:
            safe = to_json_safe(v)
            if safe is None and v is not None:
                return None
            items.append(safe)
        return items
    return None


def entry_to_dict(entry: TranscriptEntry) -> dict[str, Any]:
    """A JSON-ready dict for one entry (inverse of :func:`entry_from_dict`)."""
    if isinstance(entry, InputEntry):
        content: Any = entry.content
        if not isinstance(content, str):
            content = [_part_to_dict(p) for p in content]
        return {"type": entry.type, "role": entry.role, "content": content}
    if isinstance(entry, ToolResultEntry):
        d: dict[str, Any] = {
            "type": entry.type,
            "call_id": entry.call_id,
            "output": entry.output,
            "is_error": entry.is_error,
            "raw": to_json_safe(entry.raw),
        }
        if entry.parts is not None:
            d["parts"] = [_part_to_dict(p) for p in entry.parts]
        return d
    if isinstance(entry, AssistantTextEntry):
        return {"content": entry.content, "id": entry.id, "type": entry.type}
    if isinstance(entry, ToolCallEntry):
        return {
            "call_id": entry.call_id,
            "name": entry.name,
            "arguments": entry.arguments,
            "type": entry.type,
        }
    return dataclasses.asdict(entry)


def entry_from_dict(d: Mapping[str, Any]) -> TranscriptEntry:
    """Rebuild an entry; unknown types or fields raise instead of being dropped."""
    kind = d.get("type") if isinstance(d, Mapping) else None
    cls = _ENTRY_CLASSES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"Unknown entry type: {kind!r}")
    if cls is InputEntry:
        content = d.get("content")
        if isinstance(content, list):
            content = [_part_from_dict(p) for p in content]
        extra = {k: v for k, v in d.items() if k not in ("type", "content")}
        return InputEntry(content=content, **extra)  # type: ignore[arg-type]
    if cls is ToolResultEntry:
        parts = d.get("parts")
        if parts is not None:
            if not isinstance(parts, list):
                raise ValueError("ToolResultEntry parts must be a list")
            parts = [_part_from_dict(p) for p in parts]
        return ToolResultEntry(
            call_id=d["call_id"],
            output=d["output"],
            raw=d.get("raw"),
            is_error=bool(d.get("is_error", False)),
            parts=parts,
        )
    entry: TranscriptEntry = cls(**{k: v for k, v in d.items() if k != "type"})
    return entry


# --------------------------------------------------------------------------- conversions


def assistant_to_entries(turn: AssistantTurn) -> list[TranscriptEntry]:
    out: list[TranscriptEntry] = []
    if turn.content:
        out.append(AssistantTextEntry(turn.content))
    out.extend(ToolCallEntry(c.id, c.name, c.arguments) for c in turn.tool_calls)
    return out


def input_to_entries(messages: Iterable[Message]) -> list[TranscriptEntry]:
    out: list[TranscriptEntry] = []
    for m in messages:
        if m.role not in ("system", "user"):
            raise ValueError(f"input messages must be system or user, got {m.role!r}")
        out.append(InputEntry(role=m.role, content=m.content if m.content is not None else ""))
    return out


def messages_to_entries(messages: Iterable[Message]) -> list[TranscriptEntry]:
    out: list[TranscriptEntry] = []
    for m in messages:
        if m.role in ("system", "user"):
            content = m.content if m.content is not None else ""
            out.append(InputEntry(role=m.role, content=content))
        elif m.role == "assistant":
            if m.reasoning:
                out.append(ReasoningEntry(m.reasoning))
            if m.content:
                out.append(AssistantTextEntry(text_of(m.content)))
            out.extend(ToolCallEntry(c.id, c.name, c.arguments) for c in m.tool_calls)
        else:
            out.append(ToolResultEntry(call_id=m.tool_call_id or "", output=text_of(m.content)))
    return out


def entries_to_messages(entries: Iterable[TranscriptEntry]) -> list[Message]:
    """The lossy chat view: consecutive assistant-side entries merge into one message."""
    out: list[Message] = []
    reasoning: list[str] = []
    texts: list[str] = []
    calls: list[ToolCall] = []
    pending = False

    def flush() -> None:
        nonlocal pending
        if pending:
            out.append(
                Message(
                    role="assistant",
                    content="".join(texts) if texts else None,
                    reasoning="".join(reasoning) if reasoning else None,
                    tool_calls=list(calls),
                )
            )
            reasoning.clear()
            texts.clear()
            calls.clear()
            pending = False

    for e in entries:
        if isinstance(e, InputEntry):
            flush()
            out.append(Message(role=e.role, content=e.content))
        elif isinstance(e, ReasoningEntry):
            pending = True
            reasoning.append(e.content)
        elif isinstance(e, AssistantTextEntry):
            pending = True
            texts.append(e.content)
        elif isinstance(e, ToolCallEntry):
            pending = True
            calls.append(ToolCall(e.call_id, e.name, e.arguments))
        elif isinstance(e, ToolResultEntry):
            flush()
            out.append(Message(role="tool", content=e.output, tool_call_id=e.call_id))
    flush()
    return out


# --------------------------------------------------------------------------- windowing


def leading_system_count(entries: Sequence[TranscriptEntry]) -> int:
    n = 0
    for e in entries:
        if isinstance(e, InputEntry) and e.role == "system":
            n += 1
        else:
            break
    return n


def split_system(
    entries: Sequence[TranscriptEntry],
) -> tuple[list[TranscriptEntry], list[TranscriptEntry]]:
    n = leading_system_count(entries)
    return list(entries[:n]), list(entries[n:])


def safe_window(
    entries: Sequence[TranscriptEntry], *, head: int = 0, tail: int
) -> list[TranscriptEntry]:
    """``entries[:head] + entries[-tail:]`` with the cut moved so no tool result is orphaned."""
    head = max(0, head)
    n = len(entries)
    if tail <= 0:
        return list(entries[:head])
    if head + tail >= n:
        return list(entries)
    head_part = list(entries[:head])
    head_calls = {e.call_id for e in head_part if isinstance(e, ToolCallEntry)}
    unfindable: set[str] = set()
    cut = n - tail
    while True:
        tail_part = [
            e
            for e in entries[cut:]
            if not (isinstance(e, ToolResultEntry) and e.call_id in unfindable)
        ]
        called = head_calls | {e.call_id for e in tail_part if isinstance(e, ToolCallEntry)}
        orphans = {
            e.call_id
            for e in tail_part
            if isinstance(e, ToolResultEntry) and e.call_id not in called
        }
        if not orphans:
            return head_part + tail_part
        new_cut = cut
        for i in range(cut - 1, head - 1, -1):
            e = entries[i]
            if isinstance(e, ToolCallEntry) and e.call_id in orphans:
                new_cut = i
        found = {
            e.call_id
            for e in entries[new_cut:cut]
            if isinstance(e, ToolCallEntry) and e.call_id in orphans
        }
        unfindable |= orphans - found
        if new_cut <= head:
            return list(entries)
        cut = new_cut


def drop_dangling_tool_calls(entries: Sequence[TranscriptEntry]) -> list[TranscriptEntry]:
    """Remove tool calls that have no result anywhere in ``entries``."""
    answered = {e.call_id for e in entries if isinstance(e, ToolResultEntry)}
    return [e for e in entries if not (isinstance(e, ToolCallEntry) and e.call_id not in answered)]


__all__ = [
    "AssistantTextEntry",
    "EntryCompletedDelta",
    "FinishDelta",
    "InputEntry",
    "ModelDelta",
    "ReasoningDelta",
    "ReasoningEntry",
    "TextDelta",
    "ToolCallDelta",
    "ToolCallEntry",
    "ToolResultEntry",
    "TranscriptEntry",
    "UsageDelta",
    "assistant_to_entries",
    "drop_dangling_tool_calls",
    "entries_to_messages",
    "entry_from_dict",
    "entry_to_dict",
    "input_to_entries",
    "leading_system_count",
    "messages_to_entries",
    "safe_window",
    "split_system",
    "to_json_safe",
]
