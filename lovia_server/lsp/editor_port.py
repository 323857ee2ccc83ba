"""The editor port and event sink over LSP: ``lovia/event`` notifications,
``window/showMessageRequest`` approvals for clients that cannot render approval events, and
work-done progress.

A plain client (no ``initializationOptions.lovia``: Emacs' eglot, Neovim's own client, Helix)
gets the standard-LSP conversation its declared capabilities allow: progress as ``$/progress``
or short ``window/showMessage`` lines, approvals with the diff readable first and a safe default
(:mod:`~lovia_server.lsp.approval_prompt`), and each run's answer told
(:mod:`~lovia_server.lsp.run_report`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from lovia_server import protocol as p
from lovia_server.host.ports import ProgressStage
from lovia_server.lsp.approval_prompt import SHOW_DIFF, decision_for, prompt, write_preview
from lovia_server.lsp.progress import RunProgress
from lovia_server.lsp.run_report import RunReport, one_line

if TYPE_CHECKING:
    from lovia_server.lsp.client_state import LspClient

logger = logging.getLogger("lovia_server.editor")


class LspEditor:
    """Implements ``EditorPort`` and ``EventSink`` for the language server's client."""

    def __init__(self, server: LspClient, state_dir: Path) -> None:
        self.server = server
        self.state_dir = state_dir
        self.plain = not server.init_options.present
        """No lovia handlers declared: ``lovia/event`` is ignored, the run is told in LSP."""
        self.asks_approvals = server.init_options.approval_mode == "showMessageRequest"
        wants_progress = bool(server.init_options.progress)
        supported = server.client_supports("window.work_done_progress")
        self._progress = RunProgress(server) if wants_progress and supported else None
        self.report = RunReport(server, state_dir / "transcripts") if self.plain else None
        self._message_progress = self.plain and self._progress is None

    def send_event(self, event: p.LoviaEvent, data: bytes, *, essential: bool) -> bool:
        """Send one event as the JSON it was stored as (``data``, framed as it is): essential
        ones overtake queued notifications, the rest may be refused (False) while the client
        is too far behind."""
        if self.report is not None:
            try:
                self.report.event(event)
            except Exception:  # telling the run is a courtesy: the events go on regardless
                logger.warning("run_report.failed", exc_info=True)
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
        """Ask with ``window/showMessageRequest`` (rejection first; *Show diff* first where the
        client opens documents); ``None`` when the user dismissed the prompt."""
        can_show = self.server.client_supports("window.show_document.support")
        diff_shown = False
        while True:
            shown = prompt(payload, can_show_document=can_show, diff_shown=diff_shown)
            try:
                response = await self.server.window_show_message_request_async(
                    lsp.ShowMessageRequestParams(
                        type=lsp.MessageType.Warning,
                        message=shown.message,
                        actions=[lsp.MessageActionItem(title=t) for t in shown.titles],
                    )
                )
            except Exception:
                if not self.plain:
                    raise
                # an editor with no prompt of its own (Helix): the approval waits, answered
                # from the code-action menu (lovia: Reject — ..., lovia: Allow once — ...)
                logger.info("approval.prompt_unsupported", exc_info=True)
                self.show(
                    f"lovia: {payload.title} waits for your answer: "
                    "pick 'lovia: Reject' or 'lovia: Allow' in the code actions",
                    lsp.MessageType.Warning,
                )
                return None
            if response is None:
                if self.plain:
                    self.show(
                        "lovia: the approval is still waiting: "
                        "choose 'lovia: Show pending approvals' to answer it"
                    )
                return None
            title = response.title if hasattr(response, "title") else str(response)
            if title != SHOW_DIFF:
                return decision_for(payload, title)
            diff_shown = await self._show_diff(payload)

    async def _show_diff(self, payload: p.ApprovalRequested) -> bool:
        try:
            path = await asyncio.to_thread(write_preview, payload, self.state_dir / "previews")
            result = await asyncio.wait_for(
                self.server.window_show_document_async(
                    lsp.ShowDocumentParams(uri=path.as_uri(), take_focus=True)
                ),
                10,
            )
        except Exception:
            logger.debug("approval.show_diff_failed", exc_info=True)
            return False
        return bool(getattr(result, "success", False))

    def show(self, message: str, kind: lsp.MessageType = lsp.MessageType.Info) -> None:
        """A one-line ``window/showMessage`` (never fails)."""
        try:
            self.server.window_show_message(lsp.ShowMessageParams(type=kind, message=message))
        except Exception:
            logger.debug("show_message.failed", exc_info=True)

    def progress(self, stage: ProgressStage, run_id: str, message: str) -> None:
        if self._progress is not None:
            getattr(self._progress, stage)(run_id, message)
        elif self._message_progress and stage == "begin":
            self.show(f"lovia: working on {one_line(message, 80)}")
        elif self._message_progress and message.startswith("Waiting"):
            self.show(f"lovia: {one_line(message, 120)}")


__all__ = ["LspEditor"]
