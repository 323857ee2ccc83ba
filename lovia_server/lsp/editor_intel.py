"""The framework's ``EditorIntel`` port over LSP: ``lovia/editor/*`` requests to a client that
declared ``editorIntel`` in ``initialize``.

The client answers with its language servers' own shapes (0-based lines, UTF-16 characters);
this module turns them into the framework's (1-based lines, character columns) from the files'
text, the editor's unsaved buffers first. Every request is bounded in time here too, so a
client that never answers leaves no request waiting past its timeout.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from lovia.exceptions import ToolError
from lovia.workspace.editor_intel import (
    CodeLocation,
    Diagnostic,
    DiagnosticsReport,
    FileDiagnostics,
    LocationKind,
    LspPosition,
    NoLanguageServer,
    Severity,
    SymbolInfo,
    column_of,
    line_of,
)
from lovia_server.host.uris import path_uri, uri_to_path
from lovia_server.protocol import editor_requests as er
from lovia_server.protocol.methods import Range
from lovia_server.protocol.wire import WireModel, WireParams

if TYPE_CHECKING:
    from lovia_server.lsp.client_state import LspClient
    from lovia_server.lsp.editor_workspace import EditorOverlay

logger = logging.getLogger("lovia_server.editor_intel")

R = TypeVar("R", bound=WireParams)

_SEVERITIES: dict[int, Severity] = {1: "error", 2: "warning", 3: "information", 4: "hint"}
REQUEST_TIMEOUT = 5.0
"""The longest any ``lovia/editor/*`` request may take (the tools bound theirs tighter)."""


class _Texts:
    """File texts for converting columns: the editor's buffer, else the disk (once each)."""

    def __init__(self, overlay: EditorOverlay) -> None:
        self.overlay = overlay
        self._cache: dict[Path, str] = {}

    async def line(self, path: Path, line: int) -> str:
        if path not in self._cache:
            text = self.overlay.text_for(path)
            if text is None:
                try:
                    text = await asyncio.to_thread(path.read_text, encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    text = ""
            self._cache[path] = text
        return line_of(self._cache[path], line)

    async def spot(self, path: Path, rng: Range) -> tuple[int, int]:
        """The 1-based line and character column where ``rng`` starts."""
        line = rng.start.line + 1
        return line, column_of(await self.line(path, line), rng.start.character)


def _path(uri: str) -> Path | None:
    """The file a URI in the editor's answer names, resolved (``..`` and symlinks followed);
    ``None`` for another scheme or a relative path (``file:~/x`` names no file: it would
    resolve against the server's working directory, which may be the workspace)."""
    path = uri_to_path(uri)
    if path is None or not path.is_absolute():
        return None
    try:
        return path.resolve()
    except OSError:
        return path


def _reason(exc: BaseException) -> str:
    """An error answer's short reason: pygls names the JSON-RPC error by its class."""
    text = str(exc).strip()
    name = type(exc).__name__.removeprefix("JsonRpc")
    return f"{name}: {text}" if text and text != name else name


def _not_handled(path: Path | None) -> NoLanguageServer:
    """The client said no language server in the editor handles the request (``handled:
    false``); the tools word it for the model."""
    where = str(path) if path is not None else "a workspace symbol search"
    return NoLanguageServer(
        f"No language server in the editor handles {where}.",
        hint="Use grep_files or read_file instead.",
        path=path,
    )


class LspEditorIntel:
    """Implements ``lovia.workspace.editor_intel.EditorIntel`` for the language server's
    client."""

    def __init__(self, server: LspClient, overlay: EditorOverlay) -> None:
        self.server = server
        self.overlay = overlay

    async def _ask(self, method: er.ClientMethod, params: WireModel, result: type[R]) -> R:
        future = self.server.jsonrpc.send_request_async(method.name, params.to_wire())
        try:
            raw = await asyncio.wait_for(future, REQUEST_TIMEOUT)
        except TimeoutError:
            raise ToolError(
                f"The editor did not answer {method.name}.",
                hint="The editor's language server may still be starting; try again later or "
                "use grep_files.",
            ) from None
        except Exception as exc:  # an error answer is the same as none, said plainly
            logger.info("editor_intel.error_answer: %s %r", method.name, exc)
            raise ToolError(
                f"The editor could not answer {method.name} (it answered with an error: "
                f"{_reason(exc)}).",
                hint="No language server in the editor may handle this file; use grep_files "
                "or read_file instead.",
            ) from None
        try:
            return result.model_validate(plain_payload(raw) if raw is not None else {})
        except ValidationError as exc:
            logger.info("editor_intel.bad_answer: %s %s", method.name, exc)
            raise ToolError(
                f"The editor's answer to {method.name} was malformed.",
                hint="This is a bug in the editor extension; use grep_files instead.",
            ) from None

    async def diagnostics(
        self,
        paths: Sequence[Path] | None,
        *,
        after: Mapping[Path, int] | None = None,
        wait: float = 0.0,
    ) -> DiagnosticsReport:
        params = er.EditorDiagnosticsParams(
            uris=[path_uri(p) for p in paths] if paths is not None else None,
            after={path_uri(p): v for p, v in after.items()} if after else None,
            wait_ms=int(wait * 1000) if after else 0,
        )
        answer = await self._ask(er.EDITOR_DIAGNOSTICS, params, er.EditorDiagnosticsResult)
        texts = _Texts(self.overlay)
        files = []
        for item in answer.files:
            path = _path(item.uri)
            if path is None:
                continue
            found = []
            for d in item.diagnostics:
                line, col = await texts.spot(path, d.range)
                found.append(
                    Diagnostic(
                        path=path,
                        line=line,
                        col=col,
                        severity=_SEVERITIES.get(d.severity or 1, "error"),
                        message=d.message,
                        source=d.source,
                        code=str(d.code) if d.code is not None else None,
                    )
                )
            files.append(FileDiagnostics(path, tuple(found), item.version))
        return DiagnosticsReport(tuple(files))

    async def locations(
        self, kind: LocationKind, path: Path, position: LspPosition
    ) -> list[CodeLocation]:
        params = er.EditorLocationsParams(
            kind=kind,
            text_document=er.TextDocumentId(uri=path_uri(path)),
            position=er.SentPosition(line=position.line, character=position.character),
        )
        answer = await self._ask(er.EDITOR_LOCATIONS, params, er.EditorLocationsResult)
        if answer.handled is False:
            raise _not_handled(path)
        texts = _Texts(self.overlay)
        out = []
        for loc in answer.locations:
            target = _path(loc.uri)
            if target is not None:
                line, col = await texts.spot(target, loc.range)
                out.append(CodeLocation(target, line, col))
        return out

    async def document_symbols(self, path: Path) -> list[SymbolInfo]:
        params = er.EditorSymbolsParams(text_document=er.TextDocumentId(uri=path_uri(path)))
        answer = await self._ask(er.EDITOR_SYMBOLS, params, er.EditorSymbolsResult)
        if answer.handled is False:
            raise _not_handled(path)
        return await self._symbols(answer.symbols, path)

    async def workspace_symbols(self, query: str) -> list[SymbolInfo]:
        params = er.EditorSymbolsParams(query=query)
        answer = await self._ask(er.EDITOR_SYMBOLS, params, er.EditorSymbolsResult)
        if answer.handled is False:
            raise _not_handled(None)
        return await self._symbols(answer.symbols, None)

    async def _symbols(
        self, items: list[er.LspDocumentSymbol | er.LspSymbolInformation], document: Path | None
    ) -> list[SymbolInfo]:
        texts = _Texts(self.overlay)
        out: list[SymbolInfo] = []

        async def walk(symbol: Any, depth: int) -> None:
            kind = er.SYMBOL_KINDS.get(symbol.kind, "symbol")
            if isinstance(symbol, er.LspSymbolInformation):
                path = _path(symbol.location.uri)
                if path is None:
                    return
                line, col = await texts.spot(path, symbol.location.range)
                out.append(SymbolInfo(symbol.name, kind, path, line, col, symbol.container_name))
                return
            if document is None:
                return
            line, col = await texts.spot(document, symbol.selection_range)
            out.append(SymbolInfo(symbol.name, kind, document, line, col, depth=depth))
            for child in symbol.children:
                await walk(child, depth + 1)

        for item in items:
            await walk(item, 0)
        return out


def plain_payload(value: Any) -> Any:
    """pygls may hand a custom payload over as namedtuple-like objects: make them JSON."""
    if isinstance(value, dict):
        return {k: plain_payload(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and not hasattr(value, "_asdict"):
        return [plain_payload(v) for v in value]
    if hasattr(value, "_asdict"):
        return {k: plain_payload(v) for k, v in value._asdict().items()}
    return value


def offers(options: er.EditorIntelOptions | None) -> frozenset[str]:
    """What a client's ``editorIntel`` declaration offers (nothing without one)."""
    if options is None:
        return frozenset()
    wanted = {
        "diagnostics": options.diagnostics,
        "locations": options.locations,
        "symbols": options.symbols,
    }
    return frozenset(name for name, on in wanted.items() if on)


__all__ = ["REQUEST_TIMEOUT", "LspEditorIntel", "offers", "plain_payload"]
