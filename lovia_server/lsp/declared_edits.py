"""Edits a client gets only as it declared them: ``CreateFile`` only with
``workspaceEdit.resourceOperations`` naming ``create``, and an edit counted as made only once the
editor's buffer holds it (a client may answer ``applied: true`` and change nothing)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from lovia_server.host.editor_waits import editor_file_timeout

if TYPE_CHECKING:
    from lovia_server.lsp.client_state import LspClient
    from lovia_server.lsp.editor_workspace import EditorOverlay

logger = logging.getLogger("lovia_server.workspace")


def can_create(server: LspClient) -> bool:
    """The client applies ``CreateFile``: it declared ``documentChanges`` and a
    ``resourceOperations`` list with ``create``."""
    if not server.client_supports("workspace.workspace_edit.document_changes"):
        return False
    kinds = server.client_capability("workspace.workspace_edit.resource_operations") or ()
    return any(str(getattr(kind, "value", kind)) == "create" for kind in kinds)


async def tell_created(server: LspClient, path: Path) -> None:
    """Once ``path`` exists on disk (a bounded wait), tell the editor in one line."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + editor_file_timeout()
    while not await asyncio.to_thread(path.exists):
        if loop.time() >= deadline:
            return
        await asyncio.sleep(0.05)
    try:
        server.window_show_message(
            lsp.ShowMessageParams(type=lsp.MessageType.Info, message=f"lovia: created {path}")
        )
    except Exception:
        logger.debug("show_message.failed", exc_info=True)


async def buffer_shows(overlay: EditorOverlay, path: Path, text: str) -> bool:
    """Whether the open buffer came to hold ``text`` (its ``didChange`` follows the editor's
    answer to ``workspace/applyEdit``) within a bounded wait."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + editor_file_timeout()
    while True:
        doc = overlay.document(path)
        if doc is None or doc.source == text:
            return doc is not None
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.02)


__all__ = ["buffer_shows", "can_create", "tell_created"]
