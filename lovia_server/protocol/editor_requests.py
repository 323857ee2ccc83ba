"""Requests the server sends the editor for its language intelligence (server -> client).

A client that declares ``initializationOptions.lovia.editorIntel`` answers them from the
language servers it runs (VS Code: ``vscode.languages.getDiagnostics`` and the
``vscode.execute*Provider`` commands; Neovim: ``vim.diagnostic.get`` and
``vim.lsp.buf_request_sync``). The shapes inside are LSP's own (Range, Location, Diagnostic,
DocumentSymbol, SymbolInformation), so a client passes its language servers' answers through.
Each request is bounded in time by the server; a client that never answers costs a timeout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from lovia_server.protocol.methods import Range
from lovia_server.protocol.wire import WireModel, WireParams, omitted


class EditorIntelOptions(WireParams):
    """``initializationOptions.lovia.editorIntel``: which ``lovia/editor/*`` requests the
    client answers (a missing object: none)."""

    diagnostics: bool = True
    locations: bool = True
    symbols: bool = True


class TextDocumentId(WireModel):
    uri: str


class SentPosition(WireModel):
    """An LSP position the server sends: 0-based line, UTF-16 ``character``."""

    line: int
    character: int


# ----------------------------------------------------------------------------- diagnostics


class EditorDiagnosticsParams(WireModel):
    """``uris``: the files to report (``null``: every file the editor has problems for).
    ``after``: versions from an earlier answer, by uri; the client answers once each of those
    files' diagnostics changed since (or after ``waitMs`` milliseconds, whichever comes first).
    """

    uris: list[str] | None
    after: dict[str, int] | None = omitted()
    wait_ms: int = 0


class LspDiagnostic(WireParams):
    """LSP ``Diagnostic`` (the fields lovia reads)."""

    range: Range
    severity: int | None = Field(default=None, ge=1, le=4)
    """1 error, 2 warning, 3 information, 4 hint (LSP's ``DiagnosticSeverity``)."""
    code: int | str | None = None
    source: str | None = None
    message: str


class FileDiagnosticsItem(WireParams):
    uri: str
    version: int | None = None
    """Counts the updates of this file's diagnostics (any number that grows on each update)."""
    diagnostics: list[LspDiagnostic] = Field(default_factory=list)


class EditorDiagnosticsResult(WireParams):
    files: list[FileDiagnosticsItem] = Field(default_factory=list)


# ----------------------------------------------------------------------------- locations


class EditorLocationsParams(WireModel):
    """Definitions, references or implementations of the symbol at ``position``."""

    kind: Literal["definition", "references", "implementation"]
    text_document: TextDocumentId
    position: SentPosition


class LspLocation(WireParams):
    """LSP ``Location`` (a client converts a ``LocationLink`` to ``{uri: targetUri,
    range: targetSelectionRange}``)."""

    uri: str
    range: Range


class EditorLocationsResult(WireParams):
    locations: list[LspLocation] = Field(default_factory=list)
    handled: bool | None = None
    """``false``: no language server in the editor handles the file (or the request), so the
    empty answer says nothing about the code; absent: the client does not say."""


# ----------------------------------------------------------------------------- symbols


class EditorSymbolsParams(WireModel):
    """A file's outline (``textDocument``) or a workspace search (``query``): one of them."""

    text_document: TextDocumentId | None = omitted()
    query: str | None = omitted()


class LspDocumentSymbol(WireParams):
    """LSP ``DocumentSymbol`` (hierarchical)."""

    name: str
    kind: int = Field(ge=1)
    range: Range
    selection_range: Range
    detail: str | None = None
    children: list[LspDocumentSymbol] = Field(default_factory=list)


class LspSymbolInformation(WireParams):
    """LSP ``SymbolInformation`` (flat; a client sends a ``WorkspaceSymbol`` whose location has
    no range with an empty range at the file's start)."""

    name: str
    kind: int = Field(ge=1)
    location: LspLocation
    container_name: str | None = None


class EditorSymbolsResult(WireParams):
    symbols: list[LspDocumentSymbol | LspSymbolInformation] = Field(default_factory=list)
    handled: bool | None = None
    """``false``: no language server in the editor handles the file (or, for a ``query``, any
    workspace symbol search); absent: the client does not say."""


# ----------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class ClientMethod:
    """One request the server sends the client."""

    name: str
    params: type[WireModel]
    result: type[WireParams]
    capability: Literal["diagnostics", "locations", "symbols"]
    note: str = ""


EDITOR_DIAGNOSTICS = ClientMethod(
    "lovia/editor/diagnostics",
    EditorDiagnosticsParams,
    EditorDiagnosticsResult,
    "diagnostics",
    "the Problems list of some files or all; with `after`, answered once they were updated",
)
EDITOR_LOCATIONS = ClientMethod(
    "lovia/editor/locations",
    EditorLocationsParams,
    EditorLocationsResult,
    "locations",
    "definition, references or implementation at a position, from the editor's language servers",
)
EDITOR_SYMBOLS = ClientMethod(
    "lovia/editor/symbols",
    EditorSymbolsParams,
    EditorSymbolsResult,
    "symbols",
    "a document's symbols, or a workspace symbol search",
)

CLIENT_METHOD_TABLE: tuple[ClientMethod, ...] = (
    EDITOR_DIAGNOSTICS,
    EDITOR_LOCATIONS,
    EDITOR_SYMBOLS,
)

SYMBOL_KINDS: dict[int, str] = {
    1: "file",
    2: "module",
    3: "namespace",
    4: "package",
    5: "class",
    6: "method",
    7: "property",
    8: "field",
    9: "constructor",
    10: "enum",
    11: "interface",
    12: "function",
    13: "variable",
    14: "constant",
    15: "string",
    16: "number",
    17: "boolean",
    18: "array",
    19: "object",
    20: "key",
    21: "null",
    22: "enum member",
    23: "struct",
    24: "event",
    25: "operator",
    26: "type parameter",
}
"""LSP ``SymbolKind`` numbers as words the model reads."""

__all__ = [
    "CLIENT_METHOD_TABLE",
    "EDITOR_DIAGNOSTICS",
    "EDITOR_LOCATIONS",
    "EDITOR_SYMBOLS",
    "SYMBOL_KINDS",
    "ClientMethod",
    "EditorDiagnosticsParams",
    "EditorDiagnosticsResult",
    "EditorIntelOptions",
    "EditorLocationsParams",
    "EditorLocationsResult",
    "EditorSymbolsParams",
    "EditorSymbolsResult",
    "FileDiagnosticsItem",
    "LspDiagnostic",
    "LspDocumentSymbol",
    "LspLocation",
    "LspSymbolInformation",
    "TextDocumentId",
]
