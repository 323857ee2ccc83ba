"""``RunResult`` and ``RunHandle`` (an async iterator of events that is also awaitable)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Generator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lovia.approvals import ApprovalChannel
from lovia.events import Event, RunCompleted, RunFailed
from lovia.messages import Message, Usage
from lovia.reliability import CancelToken
from lovia.transcript import TranscriptEntry, entries_to_messages

if TYPE_CHECKING:
    from lovia.agent import Agent


@dataclass(repr=False)
class RunResult:
    output: Any
    entries: list[TranscriptEntry]
    final_agent: Agent[Any]
    usage: Usage
    turns: int
    finish_reason: str | None = None
    last_input_tokens: int | None = None

    @property
    def messages(self) -> list[Message]:
        return entries_to_messages(self.entries)

    def __repr__(self) -> str:
        out = repr(self.output)
        if len(out) > 80:
            out = out[:77] + "..."
        return (
            f"RunResult(output={out}, agent={self.final_agent.name!r}, turns={self.turns}, "
            f"tokens={self.usage.total_tokens})"
        )


_ABANDONED = (
    "Run was abandoned before completion "
    "(the event stream was closed before RunCompleted was emitted)"
)


class RunHandle:
    """One run: iterate it for events (once), or await it for the :class:`RunResult`.

    Iteration never raises run failures: they arrive as ``RunFailed`` and are re-raised by
    :meth:`result`.
    """

    def __init__(
        self,
        _stream: AsyncGenerator[Event, None],
        approvals: ApprovalChannel,
        cancel_token: CancelToken,
    ) -> None:
        self._stream = _stream
        self.approvals = approvals
        self.cancel_token = cancel_token
        self._iterated = False
        self._finished = False
        self._done: asyncio.Event | None = None
        self._result: RunResult | None = None
        self._error: BaseException | None = None

    def cancel(self, reason: str | None = None) -> None:
        self.cancel_token.cancel(reason)

    @property
    def done(self) -> bool:
        return self._finished

    def __aiter__(self) -> AsyncIterator[Event]:
        if self._iterated:
            raise RuntimeError("RunHandle can only be iterated once")
        self._iterated = True
        if self._done is None:
            self._done = asyncio.Event()
        return self._iterate()

    async def _iterate(self) -> AsyncGenerator[Event, None]:
        stream = self._stream
        try:
            async for ev in stream:
                if isinstance(ev, RunCompleted):
                    self._result = ev.result
                elif isinstance(ev, RunFailed):
                    self._error = ev.error
                yield ev
        except GeneratorExit:
            raise
        except Exception as exc:
            if self._error is None:
                self._error = exc
        except BaseException as exc:
            self._error = exc
            raise
        finally:
            self._finished = True
            try:
                await stream.aclose()
            finally:
                if self._done is not None:
                    self._done.set()

    async def result(self) -> RunResult:
        if not self._iterated:
            async for _ in self:
                pass
        elif not self._finished:
            assert self._done is not None
            await self._done.wait()
        if self._error is not None:
            raise self._error
        if self._result is None:
            raise RuntimeError(_ABANDONED)
        return self._result

    def __await__(self) -> Generator[Any, None, RunResult]:
        return self.result().__await__()


__all__ = ["RunHandle", "RunResult"]
