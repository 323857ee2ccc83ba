"""The test client playing VS Code's documents: it opens files with ``didOpen``, the user types
with ``didChange``, and ``workspace/applyEdit`` is applied to its own buffers the way VS Code
does it — refused when the edit names a version older than the buffer's, else applied, the
buffer's version bumped and a ``didChange`` sent before the answer. Nothing is saved to disk:
the buffers are the user's unsaved text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from tests.server.harness import Harness


def _offset(text: str, position: lsp.Position) -> int:
    lines = text.splitlines(keepends=True)
    return sum(len(line) for line in lines[: position.line]) + position.character


class VsCodeBuffers:
    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.docs: dict[str, tuple[int, str]] = {}
        harness.apply_edit_handler = self.apply

    def open(self, path: Path, text: str | None = None, version: int = 1) -> None:
        text = path.read_text() if text is None else text
        self.docs[path.as_uri()] = (version, text)
        assert self.harness.client is not None
        self.harness.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                text_document=lsp.TextDocumentItem(
                    uri=path.as_uri(), language_id="python", version=version, text=text
                )
            )
        )

    def text(self, path: Path) -> str:
        return self.docs[path.as_uri()][1]

    def type(self, path: Path, text: str) -> None:
        """The user changes the buffer (unsaved)."""
        self._change(path.as_uri(), text)

    def _change(self, uri: str, text: str) -> None:
        version = self.docs[uri][0] + 1
        self.docs[uri] = (version, text)
        assert self.harness.client is not None
        self.harness.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def apply(self, params: lsp.ApplyWorkspaceEditParams) -> lsp.ApplyWorkspaceEditResult:
        changes: list[Any] = list(params.edit.document_changes or [])
        for change in changes:
            if not isinstance(change, lsp.TextDocumentEdit):
                return lsp.ApplyWorkspaceEditResult(applied=False, failure_reason="unsupported")
            uri, version = change.text_document.uri, change.text_document.version
            if uri not in self.docs:
                return lsp.ApplyWorkspaceEditResult(applied=False, failure_reason="not open")
            if version is not None and version != self.docs[uri][0]:
                return lsp.ApplyWorkspaceEditResult(
                    applied=False, failure_reason=f"stale version {version}"
                )
        for change in changes:
            uri = change.text_document.uri
            text = self.docs[uri][1]
            spans = [
                (_offset(text, e.range.start), _offset(text, e.range.end), e.new_text)
                for e in change.edits
            ]
            for start, end, new in sorted(spans, reverse=True):
                text = text[:start] + new + text[end:]
            self._change(uri, text)
        return lsp.ApplyWorkspaceEditResult(applied=True)
