"""Runs shown as LSP work-done progress (token ``lovia/<runId>``), in order per run."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

if TYPE_CHECKING:
    from lovia_server.lsp.client_state import LspClient

logger = logging.getLogger("lovia_server.lsp.progress")


def _excerpt(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class RunProgress:
    """begin/report/end are called synchronously by the supervisor; sends happen in order."""

    def __init__(self, server: LspClient) -> None:
        self.server = server
        self._tails: dict[str, asyncio.Task[None]] = {}
        self._created: set[str] = set()

    def _chain(self, run_id: str, step: Callable[[], Awaitable[None]]) -> None:
        previous = self._tails.get(run_id)

        async def run() -> None:
            if previous is not None:
                try:
                    await previous
                except BaseException:
                    pass
            try:
                await step()
            except Exception:
                logger.debug("progress.step_failed", exc_info=True)

        task = asyncio.get_running_loop().create_task(run())
        self._tails[run_id] = task
        task.add_done_callback(lambda t: self._tails.get(run_id) is t and self._tails.pop(run_id))

    def begin(self, run_id: str, message: str) -> None:
        token = f"lovia/{run_id}"
        progress = self.server.work_done_progress

        async def step() -> None:
            if token not in progress.tokens:
                await asyncio.wait_for(progress.create_async(token), timeout=5)
            self._created.add(token)
            progress.begin(
                token,
                lsp.WorkDoneProgressBegin(
                    title="lovia", message=_excerpt(message), cancellable=True, percentage=None
                ),
            )

        self._chain(run_id, step)

    def report(self, run_id: str, message: str) -> None:
        token = f"lovia/{run_id}"

        async def step() -> None:
            if token in self._created:
                self.server.work_done_progress.report(
                    token, lsp.WorkDoneProgressReport(message=_excerpt(message))
                )

        self._chain(run_id, step)

    def end(self, run_id: str, message: str) -> None:
        token = f"lovia/{run_id}"
        progress = self.server.work_done_progress

        async def step() -> None:
            if token in self._created:
                self._created.discard(token)
                progress.end(token, lsp.WorkDoneProgressEnd(message=message))
                progress.tokens.pop(token, None)

        self._chain(run_id, step)


__all__ = ["RunProgress"]
