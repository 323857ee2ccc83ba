"""CheckpointWriter: appends a run's new entries and head at the loop's save points."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from lovia.checkpointer import Checkpointer, RunHead, RunStatus
from lovia.exceptions import (
    BudgetExceeded,
    MaxTurnsExceeded,
    ProviderError,
    RunCancelled,
)
from lovia.runtime.run_state import RunState
from lovia.transcript import to_json_safe

logger = logging.getLogger("lovia.runtime.checkpoint")


def error_payload(exc: BaseException) -> dict[str, str]:
    return {"type": type(exc).__name__, "message": str(exc)}


class CheckpointWriter:
    """Appends only what is new since the last save (``_persisted`` entries already stored)."""

    def __init__(
        self,
        checkpointer: Checkpointer | None,
        run_id: str | None,
        delete_on_success: bool = False,
    ) -> None:
        self.checkpointer = checkpointer
        self.run_id = run_id
        self.delete_on_success = delete_on_success
        self._persisted = 0
        self._finished = False

    @property
    def enabled(self) -> bool:
        return self.checkpointer is not None and self.run_id is not None

    def resume_at(self, n: int) -> None:
        self._persisted = n

    async def delete(self, *, final: bool = False) -> None:
        if self.checkpointer is None or self.run_id is None:
            return

        def landed() -> None:
            self._persisted = 0
            self._finished = self._finished or final

        await _land(self.checkpointer.delete(self.run_id), landed)

    async def _save(
        self,
        state: RunState,
        *,
        status: RunStatus,
        output: Any = None,
        error: Any = None,
        final: bool = False,
    ) -> None:
        if self.checkpointer is None or self.run_id is None:
            return
        run_entries = state.run_entries
        delta = run_entries[self._persisted :]
        head = RunHead(
            agent_name=state.agent.name,
            usage=state.run_ctx.usage.clone(),
            turns=state.turns,
            status=status,
            output=output,
            error=error,
            last_input_tokens=state.last_input_tokens,
            context_state=state.context_state,
        )

        def landed() -> None:
            self._persisted = len(run_entries)
            self._finished = self._finished or final

        await _land(self.checkpointer.append(self.run_id, delta, head), landed)

    async def save_running(self, state: RunState) -> None:
        if self.checkpointer is None or self.run_id is None:
            return
        await self._save(state, status="running")

    async def save_terminal(self, state: RunState, exc: BaseException) -> None:
        if self.checkpointer is None or self.run_id is None or self._finished:
            return
        try:
            await self._save(state, status=self.classify(exc), error=error_payload(exc))
        except Exception:
            logger.warning("checkpoint.save_failed: run_id=%s", self.run_id, exc_info=True)

    async def complete(self, state: RunState, output: Any) -> None:
        if self.checkpointer is None or self.run_id is None:
            return
        if self.delete_on_success:
            await self.delete(final=True)
            return
        safe = to_json_safe(output)
        error = None
        if safe is None and output is not None:
            error = {
                "type": "OutputNotSerializable",
                "message": f"output of type {type(output).__name__} is not JSON-safe",
            }
        await self._save(state, status="completed", output=safe, error=error, final=True)

    @staticmethod
    def classify(exc: BaseException) -> RunStatus:
        if isinstance(
            exc,
            (
                RunCancelled,
                asyncio.CancelledError,
                MaxTurnsExceeded,
                BudgetExceeded,
                TimeoutError,
                ConnectionError,
            ),
        ):
            return "interrupted"
        if isinstance(exc, ProviderError):
            return "failed" if exc.retryable is False else "interrupted"
        return "failed"


async def _land(write: Awaitable[None], landed: Callable[[], None]) -> None:
    """Await a store write and call ``landed`` once it succeeded.

    A cancellation that arrives mid-write waits for the write to finish before it propagates,
    and still records a write that landed, so the terminal save that follows never stores the
    same entries twice.
    """
    task = asyncio.ensure_future(write)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        if not task.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([task])
        if task.done() and not task.cancelled() and task.exception() is None:
            landed()
        raise
    landed()


__all__ = ["CheckpointWriter", "error_payload"]
