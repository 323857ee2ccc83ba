"""Chat-shaped message types: a lossy view of the transcript for providers and users."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from lovia.parts import ContentPart, normalize_content, text_of

Role: TypeAlias = Literal["system", "user", "assistant", "tool"]


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str


@dataclass
class Message:
    role: Role
    content: str | list[ContentPart] | None = None
    reasoning: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None

    @property
    def text(self) -> str:
        return text_of(self.content)


@dataclass
class Usage:
    """Token counts; ``input_tokens`` is the full prompt size, cache fields break it down."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens

    def clone(self) -> Usage:
        return Usage(
            self.input_tokens, self.output_tokens, self.cache_read_tokens, self.cache_write_tokens
        )


@dataclass
class AssistantTurn:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None

    def to_message(self) -> Message:
        return Message(role="assistant", content=self.content, tool_calls=list(self.tool_calls))


def system(text: str) -> Message:
    return Message(role="system", content=text)


def user(content: str | ContentPart | list[ContentPart]) -> Message:
    return Message(role="user", content=normalize_content(content))


def assistant(text: str) -> Message:
    return Message(role="assistant", content=text)


def tool_message(call_id: str, content: str) -> Message:
    return Message(role="tool", content=content, tool_call_id=call_id)


__all__ = [
    "AssistantTurn",
    "Message",
    "Role",
    "ToolCall",
    "Usage",
    "assistant",
    "system",
    "tool_message",
    "user",
]
