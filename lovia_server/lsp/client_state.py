"""What the language server's modules know of it: the client's state and the ways to reach it.

The editor port, the editor workspace, restore points, progress, the editor's language
intelligence, the runtime and the request handlers are built over this, not over the server
class: they depend on these few members only (``LoviaServer`` has them all; mypy checks that
where the runtime is built), and none of them imports the server back.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types as lsp

if TYPE_CHECKING:
    from pygls.progress import Progress
    from pygls.workspace import Workspace

    from lovia_server.lsp.jsonrpc import GuardedProtocol
    from lovia_server.protocol.settings import InitOptions, LoviaSettings


class LspClient(Protocol):
    """The client as the language server's modules see it."""

    # ------------------------------------------------------------------ its state

    @property
    def init_options(self) -> InitOptions:
        """``initializationOptions.lovia``, parsed."""
        ...

    @property
    def settings(self) -> LoviaSettings:
        """The ``lovia`` settings section, as last pushed or asked for."""
        ...

    @property
    def settings_problems(self) -> list[str]: ...

    @property
    def folders(self) -> list[Path]:
        """The workspace folders, as the client changes them."""
        ...

    @property
    def edited_uris(self) -> set[str]:
        """Open documents the user changed since they were opened or saved."""
        ...

    @property
    def workspace(self) -> Workspace:
        """The documents the client has open (pygls' in-memory copies)."""
        ...

    def client_capability(self, path: str) -> Any:
        """The capability the client declared at ``path`` (``None`` when it did not)."""
        ...

    def client_supports(self, path: str) -> bool:
        """Whether the client declared the capability at ``path``
        (``window.work_done_progress``)."""
        ...

    # ------------------------------------------------------------------ reaching it

    @property
    def jsonrpc(self) -> GuardedProtocol:
        """The connection: requests to the client (``send_request_async``), encoded notifications
        (``notify_json``) and the stdio writer (``outgoing``)."""
        ...

    @property
    def work_done_progress(self) -> Progress: ...

    async def window_show_message_request_async(
        self, params: lsp.ShowMessageRequestParams
    ) -> lsp.MessageActionItem | None: ...

    def window_show_message(self, params: lsp.ShowMessageParams) -> None: ...

    async def window_show_document_async(
        self, params: lsp.ShowDocumentParams
    ) -> lsp.ShowDocumentResult: ...

    def log_to_client(self, message: str, kind: lsp.MessageType = lsp.MessageType.Info) -> None:
        """A line in the client's log (``window/logMessage``); never fails."""
        ...


__all__ = ["LspClient"]
