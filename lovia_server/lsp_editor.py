"""The editor port over LSP: ``lovia/event`` notifications, ``window/showMessageRequest``
approvals for clients that cannot render approval events, and work-done progress."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from lovia_server import protocol as p
from lovia_server.jsonrpc import GuardedProtocol
from lovia_server.ports import ProgressStage
from lovia_server.progress import RunProgress

if TYPE_CHECKING:
    from lovia_server.server import LoviaServer

logger = logging.getLogger("lovia_server.editor")


class LspEditor:
    """Implements ``EditorPort`` for the language server's client."""

    def __init__(self, server: LoviaServer) -> None:
        self.server = server
        self.asks_approvals = server.init_options.approval_mode == "showMessageRequest"
        wants_progress = bool(server.init_options.progress)
        supported = server.client_supports("window.work_done_progress")
        self._progress = RunProgress(server) if wants_progress and supported else None

    def notify(self, event: Mapping[str, Any]) -> None:
        self.server.protocol.notify(p.EVENT, event)

    def notify_json(self, event: bytes, droppable: bool = False) -> bool:
        """Send one event already encoded as JSON (the bytes the store's row was made from);
        False when the writer refused a droppable one (the client is too far behind)."""
        protocol = self.server.protocol
        if isinstance(protocol, GuardedProtocol):
            return protocol.notify_json(p.EVENT, event, droppable=droppable)
        protocol.notify(p.EVENT, json.loads(event))  # pragma: no cover - another protocol
        return True  # pragma: no cover

    def backlog(self) -> int:
        writer = getattr(self.server.protocol, "writer", None)
        backlog = getattr(writer, "backlog", None)
        return int(backlog()) if callable(backlog) else 0

    def writer_stats(self) -> dict[str, int] | None:
        """The queued writer's counters (``None`` for another transport)."""
        writer = getattr(self.server.protocol, "writer", None)
        stats = getattr(writer, "stats", None)
        limit = getattr(writer, "limit", None)
        if not callable(stats) or not callable(limit):
            return None
        return {**stats(), "limit": int(limit())}

    def drained(self) -> Awaitable[None] | None:
        """Completes once the client has taken every queued byte (``None``: nothing queued)."""
        writer = getattr(self.server.protocol, "writer", None)
        drained = getattr(writer, "drained", None)
        return drained() if callable(drained) else None

    async def ask_approval(self, payload: p.ApprovalRequested) -> p.Decision | None:
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
