"""The Responses API's event stream as lovia's model deltas.

A response streams its output items (messages, reasoning, function calls) as
``response.output_item.added`` … ``.done`` with deltas in between, and ends with
``response.completed`` (or ``.incomplete``/``.failed``) carrying the usage.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lovia.messages import Usage
from lovia.providers._errors import Endpoint, stream_error
from lovia.providers._responses_request import MESSAGE_PHASES, REASONING_PROVIDER
from lovia.transcript import (
    EntryCompletedDelta,
    ModelDelta,
    ReasoningDelta,
    ReasoningEntry,
    TextDelta,
    ToolCallDelta,
)


@dataclass
class _Call:
    index: int
    call_id: str
    name: str
    sent: str = ""  # the arguments streamed so far


@dataclass
class StreamState:
    """Turns Responses stream events into deltas; one per streamed response."""

    endpoint: Endpoint
    model: str
    usage: Usage = field(default_factory=Usage)
    finish: str | None = None
    ended: bool = False
    calls: dict[str, _Call] = field(default_factory=dict)  # by item id (else output index)
    summaries: dict[str, list[str]] = field(default_factory=dict)  # reasoning item id -> parts
    phased: bool = False  # the model labelled a message with its phase

    def on_event(self, event: dict[str, Any]) -> list[ModelDelta]:
        kind = event.get("type")
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            text = event.get("delta")
            return [TextDelta(text)] if isinstance(text, str) and text else []
        if kind == "response.function_call_arguments.delta":
            call = self.calls.get(_item_key(event))
            piece = event.get("delta")
            if call is None or not isinstance(piece, str) or not piece:
                return []
            call.sent += piece
            return [ToolCallDelta(call.index, call.call_id, call.name, piece)]
        if kind == "response.function_call_arguments.done":
            return self._rest_of_call(self.calls.get(_item_key(event)), event.get("arguments"))
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return self._reasoning_delta(event, kind)
        if kind == "response.output_item.added":
            return self._item_added(event)
        if kind == "response.output_item.done":
            return self._item_done(event)
        if kind == "response.completed" or kind == "response.incomplete":
            self._end(event.get("response") or {})
            return []
        if kind == "response.failed":
            response = event.get("response") or {}
            raise stream_error(self.endpoint, _error_object(response.get("error"), event))
        if kind == "error":
            raise stream_error(self.endpoint, _error_object(event.get("error"), event))
        return []

    def _reasoning_delta(self, event: dict[str, Any], kind: str) -> list[ModelDelta]:
        text = event.get("delta")
        if not isinstance(text, str) or not text:
            return []
        if kind == "response.reasoning_text.delta":
            return [ReasoningDelta(text)]
        parts = self.summaries.setdefault(str(event.get("item_id") or ""), [])
        index = event.get("summary_index")
        index = index if isinstance(index, int) and index >= 0 else max(len(parts) - 1, 0)
        out: list[ModelDelta] = []
        while len(parts) <= index:
            if parts:
                out.append(ReasoningDelta("\n\n"))  # a new summary part: a new paragraph
            parts.append("")
        parts[index] += text
        out.append(ReasoningDelta(text))
        return out

    def _item_added(self, event: dict[str, Any]) -> list[ModelDelta]:
        item = event.get("item") or {}
        self._note_phase(item)
        if item.get("type") != "function_call":
            return []
        call = _Call(
            index=len(self.calls),
            call_id=str(item.get("call_id") or ""),
            name=str(item.get("name") or ""),
        )
        self.calls[_item_key(event, item)] = call
        out: list[ModelDelta] = [ToolCallDelta(call.index, call.call_id, call.name, "")]
        arguments = item.get("arguments")
        if isinstance(arguments, str) and arguments:
            call.sent = arguments
            out.append(ToolCallDelta(call.index, call.call_id, call.name, arguments))
        return out

    def _note_phase(self, item: dict[str, Any]) -> None:
        if item.get("type") == "message" and item.get("phase") in MESSAGE_PHASES:
            self.phased = True

    def _item_done(self, event: dict[str, Any]) -> list[ModelDelta]:
        item = event.get("item") or {}
        self._note_phase(item)
        kind = item.get("type")
        if kind == "function_call":
            key = _item_key(event, item)
            if key not in self.calls:  # a server that sends whole items only
                return self._item_added(event)
            return self._rest_of_call(self.calls[key], item.get("arguments"))
        if kind != "reasoning":
            return []
        return [EntryCompletedDelta(self._reasoning_entry(item))]

    def _reasoning_entry(self, item: dict[str, Any]) -> ReasoningEntry:
        item_id = str(item.get("id") or "")
        summary = [
            str(part.get("text") or "")
            for part in item.get("summary") or ()
            if isinstance(part, dict)
        ]
        if not summary:
            summary = [p for p in self.summaries.get(item_id, []) if p]
        metadata: dict[str, Any] = {"summary": summary, "model": self.model}
        encrypted = item.get("encrypted_content")
        if isinstance(encrypted, str) and encrypted:
            metadata["encrypted_content"] = encrypted
        content = "\n\n".join(summary)
        if not content:  # open-weight models stream their raw reasoning text instead
            content = "".join(
                str(part.get("text") or "")
                for part in item.get("content") or ()
                if isinstance(part, dict)
            )
        return ReasoningEntry(
            content, id=item_id or None, provider=REASONING_PROVIDER, metadata=metadata
        )

    def _rest_of_call(self, call: _Call | None, arguments: object) -> list[ModelDelta]:
        """What the final arguments add to the streamed pieces (all of them if none came)."""
        if call is None or not isinstance(arguments, str) or not arguments.startswith(call.sent):
            return []
        rest = arguments[len(call.sent) :]
        if not rest:
            return []
        call.sent = arguments
        return [ToolCallDelta(call.index, call.call_id, call.name, rest)]

    def _end(self, response: dict[str, Any]) -> None:
        self.ended = True
        raw = response.get("usage")
        if isinstance(raw, dict):
            self.usage = _usage(raw)
        if response.get("status") == "incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason")
            self.finish = "length" if reason == "max_output_tokens" else str(reason or "length")
        elif self.calls or any(
            isinstance(item, dict) and item.get("type") == "function_call"
            for item in response.get("output") or ()
        ):
            self.finish = "tool_calls"
        else:
            self.finish = "stop"


def _item_key(event: dict[str, Any], item: dict[str, Any] | None = None) -> str:
    item_id = (item or {}).get("id") or event.get("item_id")
    return str(item_id) if item_id else f"#{event.get('output_index', 0)}"


def _error_object(error: object, event: dict[str, Any]) -> dict[str, Any]:
    """An error of ``response.failed`` or an ``error`` event for :func:`stream_error`.

    The Responses API names the kind of failure in ``code`` (``server_error``,
    ``rate_limit_exceeded``, ``context_length_exceeded``); it is what sorts the error.
    """
    source = error if isinstance(error, dict) else event
    message = source.get("message") or "the response failed"
    keys = ("type", "code") if source is error else ("code",)  # an event's type is "error"
    kind = " ".join(str(source.get(k)) for k in keys if source.get(k))
    return {"message": str(message), "type": kind, "code": source.get("code")}


def _usage(raw: dict[str, Any]) -> Usage:
    details = raw.get("input_tokens_details") or {}
    if not isinstance(details, dict):
        details = {}
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_tokens=int(details.get("cached_tokens") or 0),
        cache_write_tokens=int(details.get("cache_write_tokens") or 0),
    )


__all__ = ["StreamState"]
