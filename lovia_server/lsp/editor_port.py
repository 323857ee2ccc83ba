"""The editor port and event sink over LSP: ``lovia/event`` notifications,
``window/showMessageRequest`` approvals for clients that cannot render approval events, and
work-done progress."""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from lovia_server import protocol as p
from lovia_server.host.ports import ProgressStage
from lovia_server.lsp.progress import RunProgress

if TYPE_CHECKING:
    from lovia_server.lsp.client_state import LspClient

logger = logging.getLogger("lovia_server.editor")


class LspEditor:
    """Implements ``EditorPort`` and ``EventSink`` for the language server's client."""

    def __init__(self, server: LspClient) -> None:
        self.server = server
        self.asks_approvals = server.init_options.approval_mode == "showMessageRequest"
        wants_progress = bool(server.init_options.progress)
        supported = server.client_supports("window.work_done_progress")
        self._progress = RunProgress(server) if wants_progress and supported else None

    def send_event(self, event: p.LoviaEvent, data: bytes, *, essential: bool) -> bool:
        """Send one event as the JSON it was stored as (``data``, framed as it is): essential
        ones overtake queued notifications, the rest may be refused (False) while the client
        is too far behind."""
        return self.server.jsonrpc.notify_json(
            p.EVENT,
            data,
            lane="essential" if essential else "normal",
            droppable=not essential,
            key=event.run_id,
        )

    def pending(self) -> bool:
        """A write to the client is pending (only the stdio transport knows; TCP: never)."""
        writer = self.server.jsonrpc.outgoing
        return writer is not None and writer.pending

    def drained(self) -> Awaitable[None] | None:
        """Completes once the client has taken everything (``None``: nothing pending)."""
        writer = self.server.jsonrpc.outgoing
        return writer.drained() if writer is not None else None

    def backlog(self) -> int:
        writer = self.server.jsonrpc.outgoing
        return writer.backlog() if writer is not None else 0

    def writer_stats(self) -> dict[str, int] | None:
        """The stdio writer's counters (``None`` over TCP, where pygls writes)."""
        writer = self.server.jsonrpc.outgoing
        return writer.stats() if writer is not None else None

    async def ask_approval(self, payload: p.ApprovalRequested) -> p.ApprovalChoice | None:
        actions = [lsp.MessageActionItem(title=o.label) for o in payload.options]
        child = payload.subagent
        who = f"lovia [{child.task_id} {child.name}]" if child is not None else "lovia"
        message = f"{who}: {payload.title}\n{payload.detail}".strip()
        if payload.warning:
            message = f"{message}\nWarning: {payload.warning}"
        response = await self.server.window_show_message_request_async(
            lsp.ShowMessageRequestParams(
                type=lsp.MessageType.Warning, message=message, actions=actions
            )
        )
        if response is None:
            return None
        title = response.title if hasattr(response, "title") else str(response)
        for option in payload.options:
            if option.label == title:
                return option.decision
        return None

    def progress(self, stage: ProgressStage, run_id: str, message: str) -> None:
        if self._progress is not None:
            getattr(self._progress, stage)(run_id, message)


__all__ = ["LspEditor"]
