"""A run told to a plain LSP client (one that declared no lovia handlers and so ignores
``lovia/event``): the answer in a one-line ``window/showMessage``, and the run's transcript as
markdown opened with ``window/showDocument`` where the client supports it."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from lovia_server import protocol as p

if TYPE_CHECKING:
    from lovia_server.lsp.client_state import LspClient

logger = logging.getLogger("lovia_server.lsp.run_report")

MAX_TRANSCRIPT_CHARS = 200_000
"""What a run's transcript keeps in memory before it is written (the rest is cut)."""


def one_line(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class _Transcript:
    parts: list[str] = field(default_factory=list)
    size: int = 0
    last_answer: str = ""
    seq: int = 0
    """The last event taken in (an event the transport refused is offered again later)."""

    def add(self, text: str) -> None:
        if self.size >= MAX_TRANSCRIPT_CHARS:
            return
        text = text[: MAX_TRANSCRIPT_CHARS - self.size]
        self.parts.append(text)
        self.size += len(text)


class RunReport:
    """Watches the events of top-level runs and tells a plain client about each one."""

    def __init__(self, server: LspClient, folder: Path) -> None:
        self.server = server
        self.folder = folder
        self._runs: dict[str, _Transcript] = {}

    def show(self, message: str, kind: lsp.MessageType = lsp.MessageType.Info) -> None:
        try:
            self.server.window_show_message(lsp.ShowMessageParams(type=kind, message=message))
        except Exception:
            logger.debug("show_message.failed", exc_info=True)

    def event(self, event: p.LoviaEvent) -> None:
        if event.parent_run_id is not None:
            return  # a subagent's run is its parent's business
        run_id = event.run_id
        if isinstance(event, p.RunStartedEvent):
            started = self._runs[run_id] = _Transcript(seq=event.seq)
            started.add(f"# lovia\n\n**You:** {event.prompt}\n\n")
            return
        transcript = self._runs.get(run_id)
        if transcript is None or event.seq <= transcript.seq:
            return
        transcript.seq = event.seq
        if isinstance(event, p.MessageCompletedEvent) and event.text.strip():
            transcript.last_answer = event.text
            transcript.add(f"{event.text}\n\n")
        elif isinstance(event, p.ToolCallEvent):
            transcript.add(f"- *{event.title}*\n\n")
        elif isinstance(event, p.RunFinishedEvent):
            del self._runs[run_id]
            self._finish(run_id, event, transcript)

    def _finish(self, run_id: str, event: p.RunFinishedEvent, transcript: _Transcript) -> None:
        if event.status == "completed":
            line = one_line(transcript.last_answer) or "done"
            kind = lsp.MessageType.Info
        else:
            reason = event.error.message if event.error is not None else event.status
            line, kind = f"{event.status}: {one_line(reason)}", lsp.MessageType.Warning
            transcript.add(f"**Run {event.status}:** {reason}\n")
        self.show(f"lovia: {line}", kind)
        if self.server.client_supports("window.show_document.support"):
            asyncio.get_running_loop().create_task(self._open(run_id, transcript))

    async def _open(self, run_id: str, transcript: _Transcript) -> None:
        try:
            path = await asyncio.to_thread(self._write, run_id, "".join(transcript.parts))
            await asyncio.wait_for(
                self.server.window_show_document_async(
                    lsp.ShowDocumentParams(uri=path.as_uri(), take_focus=False)
                ),
                10,
            )
        except Exception:
            logger.debug("transcript.open_failed", exc_info=True)

    def _write(self, run_id: str, text: str) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{run_id}.md"
        path.write_text(text, encoding="utf-8")
        return path


__all__ = ["RunReport", "one_line"]
