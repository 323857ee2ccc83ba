"""The request side of the Responses API: transcript entries as ``input`` items, tools, formats.

Each transcript entry becomes at most one item, in transcript order, so the items of a
conversation's earlier turns encode to the same bytes on every request (OpenAI caches
byte-identical prefixes) and the provider's prefix cache can reuse them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lovia.model_view import conversation_of
from lovia.parts import ContentPart, ImagePart, TextPart
from lovia.providers.cache_keys import prompt_cache_key as conversation_key
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)

REASONING_PROVIDER = "openai-responses"
"""``ReasoningEntry.provider`` of the reasoning this API writes and reads back."""
MESSAGE_PHASES = ("commentary", "final_answer")
"""The ``phase`` labels a model may give its messages."""


def prompt_cache_key(entries: Sequence[TranscriptEntry]) -> str | None:
    """The conversation's ``prompt_cache_key`` (from :mod:`lovia.providers.cache_keys`)."""
    return conversation_key(conversation_of(entries))


def _input_part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, ImagePart):
        url = part.url if part.url is not None else f"data:{part.mime_type};base64,{part.data}"
        return {"type": "input_image", "image_url": url, "detail": part.detail or "auto"}
    file: dict[str, Any] = {"type": "input_file"}
    if part.url is not None:
        file["file_url"] = part.url
    else:
        file["file_data"] = f"data:{part.mime_type};base64,{part.data}"
    if part.filename:
        file["filename"] = part.filename
    return file


def _input_content(content: str | Sequence[ContentPart]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [_input_part(p) for p in content]


def reasoning_item(
    entry: ReasoningEntry, *, stored: bool, model: str | None = None
) -> dict[str, Any] | None:
    """The ``reasoning`` input item that gives a model back its own reasoning, or None.

    Without ``store`` OpenAI knows an item only by its ``encrypted_content``; an entry
    without it (or without an id when stored) cannot be sent back. Neither can reasoning
    another model wrote (after a model switch): only the model that encrypted it can read it.
    """
    encrypted = entry.metadata.get("encrypted_content")
    if not entry.id or not (encrypted or stored):
        return None
    author = entry.metadata.get("model")
    if model is not None and author is not None and author != model:
        return None
    summary = entry.metadata.get("summary")
    if not isinstance(summary, list):
        summary = [entry.content] if entry.content else []
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": entry.id,
        "summary": [{"type": "summary_text", "text": str(text)} for text in summary],
    }
    if encrypted:
        item["encrypted_content"] = encrypted
    return item


def entry_to_item(
    entry: TranscriptEntry,
    *,
    system_role: str = "developer",
    include_images: bool = False,
    stored: bool = False,
    model: str | None = None,
) -> dict[str, Any] | None:
    """One transcript entry as one Responses ``input`` item (None: nothing to send)."""
    if isinstance(entry, InputEntry):
        role = "user" if entry.role == "user" else system_role
        return {"type": "message", "role": role, "content": _input_content(entry.content)}
    if isinstance(entry, AssistantTextEntry):
        if not entry.content:
            return None
        # The input-message form: the output-message form wants the id and status of an item
        # OpenAI stored, and nothing is stored (store: false).
        return {"type": "message", "role": "assistant", "content": entry.content}
    if isinstance(entry, ToolCallEntry):
        return {
            "type": "function_call",
            "call_id": entry.call_id,
            "name": entry.name,
            "arguments": entry.arguments,
        }
    if isinstance(entry, ToolResultEntry):
        images = (
            [p for p in entry.parts or () if isinstance(p, ImagePart)] if include_images else []
        )
        output: str | list[dict[str, Any]] = entry.output
        if images:
            output = [{"type": "input_text", "text": entry.output}, *map(_input_part, images)]
        return {"type": "function_call_output", "call_id": entry.call_id, "output": output}
    if entry.provider != REASONING_PROVIDER:
        return None  # another vendor's reasoning means nothing to this model
    return reasoning_item(entry, stored=stored, model=model)


def _next_output(entries: Sequence[TranscriptEntry], index: int) -> TranscriptEntry | None:
    """The first entry after ``index`` that is not reasoning (None: there is none)."""
    for entry in entries[index + 1 :]:
        if not isinstance(entry, ReasoningEntry):
            return entry
    return None


def _answered(entries: Sequence[TranscriptEntry], index: int) -> bool:
    """Whether the reasoning at ``index`` is followed by the output it led to.

    The API refuses a reasoning item without the message or function call that came after
    it; a context policy that cut the history between the two leaves it alone.
    """
    return isinstance(_next_output(entries, index), (AssistantTextEntry, ToolCallEntry))


def message_phase(entries: Sequence[TranscriptEntry], index: int) -> str:
    """The ``phase`` of the assistant message at ``index``: ``commentary`` when its turn goes
    on with tool calls (a preamble), else ``final_answer`` — the labels the model gives its
    own messages, which the transcript records by where the message stands."""
    if isinstance(_next_output(entries, index), ToolCallEntry):
        return "commentary"
    return "final_answer"


def input_items(
    entries: Sequence[TranscriptEntry],
    start: int = 0,
    *,
    system_role: str = "developer",
    include_images: bool = False,
    stored: bool = False,
    model: str | None = None,
    phases: bool = False,
) -> list[dict[str, Any] | None]:
    """The ``input`` item of each entry from ``start`` on (None: the entry sends nothing).

    With ``phases`` each assistant message carries its ``phase``: models that label their
    messages (gpt-5.3-codex and later) want the labels back and do worse without them.
    """
    out: list[dict[str, Any] | None] = []
    for index in range(start, len(entries)):
        entry = entries[index]
        if isinstance(entry, ReasoningEntry) and not _answered(entries, index):
            out.append(None)
            continue
        item = entry_to_item(
            entry,
            system_role=system_role,
            include_images=include_images,
            stored=stored,
            model=model,
        )
        if phases and item is not None and isinstance(entry, AssistantTextEntry):
            item["phase"] = message_phase(entries, index)
        out.append(item)
    return out


def entries_to_input(
    entries: Sequence[TranscriptEntry],
    *,
    system_role: str = "developer",
    include_images: bool = False,
    stored: bool = False,
    model: str | None = None,
) -> list[dict[str, Any]]:
    """The transcript as the Responses ``input`` list."""
    items = input_items(
        entries,
        system_role=system_role,
        include_images=include_images,
        stored=stored,
        model=model,
    )
    return [item for item in items if item is not None]


def tool_to_responses(tool: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions tool schema in the Responses shape (others pass through).

    The Responses API treats a function without ``strict`` as strict, which rejects most
    hand-written schemas, so an absent ``strict`` is sent as ``false``.
    """
    function = tool.get("function")
    if tool.get("type") != "function" or not isinstance(function, dict):
        return tool
    out: dict[str, Any] = {"type": "function", "name": function.get("name", "")}
    if function.get("description"):
        out["description"] = function["description"]
    out["parameters"] = function.get("parameters") or {"type": "object", "properties": {}}
    out["strict"] = bool(function.get("strict", False))
    return out


def text_format(response_format: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions ``response_format`` as the Responses ``text.format``."""
    if response_format.get("type") != "json_schema":
        return response_format
    spec = response_format.get("json_schema") or {}
    out: dict[str, Any] = {"type": "json_schema", "name": spec.get("name") or "output"}
    if spec.get("description"):
        out["description"] = spec["description"]
    out["schema"] = spec.get("schema") or {}
    if spec.get("strict") is not None:
        out["strict"] = spec["strict"]
    return out


__all__ = [
    "REASONING_PROVIDER",
    "entries_to_input",
    "entry_to_item",
    "input_items",
    "prompt_cache_key",
    "reasoning_item",
    "text_format",
    "tool_to_responses",
]
