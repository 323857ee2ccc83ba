"""Shared builders for the context-policy tests."""

from __future__ import annotations

from typing import Any

from lovia.context import CompactionRequest
from lovia.testing import ScriptedProvider
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)


def system(text: str = "You are helpful.") -> InputEntry:
    return InputEntry(role="system", content=text)


def user(text: str) -> InputEntry:
    return InputEntry(role="user", content=text)


def asst(text: str) -> AssistantTextEntry:
    return AssistantTextEntry(text)


def call(call_id: str, name: str = "fetch", arguments: str = "{}") -> ToolCallEntry:
    return ToolCallEntry(call_id, name, arguments)


def out(call_id: str, output: str, **kw: Any) -> ToolResultEntry:
    return ToolResultEntry(call_id=call_id, output=output, **kw)


def tool_turns(n: int, size: int, *, prefix: str = "c") -> list[TranscriptEntry]:
    """``n`` call/result pairs whose outputs are ``size`` chars each."""
    entries: list[TranscriptEntry] = []
    for i in range(n):
        entries += [call(f"{prefix}{i}"), out(f"{prefix}{i}", f"{i}:" + "r" * (size - 2))]
    return entries


class WindowProvider(ScriptedProvider):
    """A scripted provider that advertises a context window."""

    def __init__(self, script: Any = (), *, window: int | None = None, **kw: Any) -> None:
        super().__init__(list(script), **kw)
        self.window = window

    def context_window(self) -> int | None:
        return self.window


class FakeSummarizer:
    """Records every call; fails on the call numbers listed in ``fail_on`` (or always)."""

    def __init__(self, *, fail: bool = False, fail_on: tuple[int, ...] = (), text: str = "S"):
        self.calls: list[tuple[list[TranscriptEntry], str | None]] = []
        self.fail = fail
        self.fail_on = fail_on
        self.text = text

    async def summarize(
        self,
        entries: Any,
        *,
        req: CompactionRequest,
        prior_summary: str | None = None,
    ) -> str:
        self.calls.append((list(entries), prior_summary))
        n = len(self.calls)
        if self.fail or n in self.fail_on:
            raise RuntimeError(f"summarizer down ({n})")
        return f"{self.text}{n}"


def request(
    entries: list[TranscriptEntry],
    scratch: dict[str, Any] | None = None,
    **kw: Any,
) -> CompactionRequest:
    return CompactionRequest(
        entries=list(entries), scratch=scratch if scratch is not None else {}, **kw
    )
