"""Transcript entries as Anthropic Messages API content: blocks, messages, tools.

Messages are assembled from per-entry encoded blocks, and each block remembers the entry it
came from, so the provider can put a prompt-cache breakpoint on the last block of the entries
the next call repeats (:mod:`lovia.providers.anthropic_cache`) without re-encoding anything.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from lovia.exceptions import UserError
from lovia.parts import ContentPart, FilePart, ImagePart, TextPart, project_parts, text_of
from lovia.providers._encoding import Raw, Unit, dumpb
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)

REASONING_PROVIDER = "anthropic"
_SEPARATOR = b'{"type":"text","text":"\\n\\n"}'
_THINKING = ("thinking", "redacted_thinking")


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


def system_text(entries: Sequence[TranscriptEntry]) -> str | None:
    texts = [
        text_of(e.content)
        for e in entries
        if isinstance(e, InputEntry) and e.role == "system" and text_of(e.content)
    ]
    return "\n\n".join(texts) if texts else None


@dataclass
class EncodedBlocks:
    """One entry's blocks as encoded JSON, with what message assembly needs to know."""

    json: list[bytes]
    first_text: bool = False
    last_text: bool = False
    thinking_only: bool = False
    markable: list[bool] = field(default_factory=list)
    """Per block: whether it may carry ``cache_control`` (thinking blocks may not)."""

    @classmethod
    def of(cls, blocks: list[dict[str, Any]]) -> EncodedBlocks:
        markable = [b["type"] not in _THINKING for b in blocks]
        return cls(
            [dumpb(b) for b in blocks],
            first_text=bool(blocks) and blocks[0]["type"] == "text",
            last_text=bool(blocks) and blocks[-1]["type"] == "text",
            thinking_only=not any(markable),
            markable=markable,
        )


def encoded_blocks(
    entry: TranscriptEntry, *, reasoning_provider: str, replay_thinking: bool, include_images: bool
) -> EncodedBlocks:
    return EncodedBlocks.of(
        _entry_blocks(
            entry,
            reasoning_provider=reasoning_provider,
            replay_thinking=replay_thinking,
            include_images=include_images,
        )
    )


@dataclass
class MessageUnit(Unit):
    """One encoded message of a request (``pieces`` is its JSON, one piece), and what a cache
    breakpoint needs: the message's ``head`` and ``blocks`` to re-join with one block marked
    (in the request only, never in the cached unit).

    ``sources``: per block, the index of the entry it came from, or -1 when it may not carry
    ``cache_control``. ``digest``: a hash of the message's bytes, for cache-break reports.
    """

    role: str = "user"
    head: bytes = b""
    blocks: list[bytes] = field(default_factory=list)
    sources: list[int] = field(default_factory=list)
    digest: int = 0

    def with_block(self, index: int, block: bytes) -> bytes:
        """The message's JSON with ``blocks[index]`` replaced by ``block``."""
        blocks = list(self.blocks)
        blocks[index] = block
        return b"".join([self.head, *Raw.array(blocks).parts, b"}"])


@dataclass
class _Message:
    role: str
    start: int
    end: int = 0
    blocks: list[bytes] = field(default_factory=list)
    sources: list[int] = field(default_factory=list)
    last_text: bool = False
    thinking_only: bool = True

    def add(self, item: EncodedBlocks, index: int) -> None:
        self.end = index + 1
        if not item.json:
            return
        if self.role == "user" and self.blocks and self.last_text and item.first_text:
            self.blocks.append(_SEPARATOR)  # merged user inputs stay visibly apart
            self.sources.append(index)  # part of what the later entry adds
        self.blocks.extend(item.json)
        self.sources.extend(index if ok else -1 for ok in item.markable)
        self.last_text = item.last_text
        self.thinking_only = self.thinking_only and item.thinking_only

    def encode(self) -> bytes:
        return b"".join([self._head(), *Raw.array(self.blocks).parts, b"}"])

    def _head(self) -> bytes:
        return b'{"role":"%s","content":' % self.role.encode()

    def unit(self) -> MessageUnit:
        encoded = self.encode()
        return MessageUnit(
            self.start,
            self.end,
            [encoded],
            # an assistant message is a safe restart point: nothing merges into it later
            resumable=self.role == "assistant",
            role=self.role,
            head=self._head(),
            blocks=self.blocks,
            sources=self.sources,
            digest=hash(encoded),
        )


def assemble(
    entries: Sequence[TranscriptEntry],
    start: int,
    blocks_of: Callable[[TranscriptEntry], EncodedBlocks],
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


def to_anthropic_messages(
    entries: Sequence[TranscriptEntry],
    *,
    reasoning_provider: str = REASONING_PROVIDER,
    replay_thinking: bool = True,
    include_images: bool = False,
) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """``(system_blocks | None, messages)`` for the Messages API (no cache breakpoints)."""

    blocks_of = functools.partial(
        encoded_blocks,
        reasoning_provider=reasoning_provider,
        replay_thinking=replay_thinking,
        include_images=include_images,
    )
    system = system_text(entries)
    messages = [json.loads(m.encode()) for m in assemble(entries, 0, blocks_of)]
    return ([{"type": "text", "text": system}] if system else None), messages


def convert_tools(
    tools: list[dict[str, Any]], cache_control: dict[str, str] | None
) -> list[dict[str, Any]]:
    """Function schemas as Anthropic tools; ``cache_control`` goes on the last one."""
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
    if cache_control is not None and out:
        out[-1]["cache_control"] = cache_control
    return out


__all__ = [
    "REASONING_PROVIDER",
    "EncodedBlocks",
    "MessageUnit",
    "assemble",
    "convert_tools",
    "encoded_blocks",
    "system_text",
    "to_anthropic_messages",
]
