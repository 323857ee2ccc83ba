"""A tiny language server that counts columns in UTF-8 bytes, as clangd does when the client
offers it (``offsetEncoding: "utf-8"``, clangd's extension, which nvim-lspconfig's clangd
set-up adopts in ``on_init``), or in the encoding ``LOVIA_LS_ENCODING`` names (``utf-16``,
``utf-32``).

It keeps the open documents' text (full sync) and answers for C-like files:
``textDocument/definition`` (the first ``int NAME(`` of the word at the position, in any open
document), ``textDocument/references`` (every whole-word occurrence in the open documents) and
``textDocument/documentSymbol`` (each ``int NAME(``), every column in that encoding. A position that is
not on a word (a column counted in UTF-16 on a line with accents lands beside it) gets no answer.
Plain stdin/stdout JSON-RPC, no dependencies: the initialize result must carry the
non-standard ``offsetEncoding`` field, which typed LSP libraries drop.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

ENCODING = os.environ.get("LOVIA_LS_ENCODING", "utf-8")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
FUNCTION = re.compile(r"\bint\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(")

docs: dict[str, list[str]] = {}


def units(text: str) -> int:
    """The length of ``text`` in the negotiated encoding's code units."""
    if ENCODING == "utf-8":
        return len(text.encode("utf-8"))
    if ENCODING == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    return len(text)


def index(line: str, offset: int) -> int:
    """The character index of the code-unit ``offset`` on ``line`` (-1: inside a character)."""
    for i in range(len(line) + 1):
        if units(line[:i]) == offset:
            return i
    return -1


def read() -> dict[str, Any] | None:
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    message: dict[str, Any] = json.loads(sys.stdin.buffer.read(length))
    return message


def send(message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def rng(line: int, text: str, start: int, end: int) -> dict[str, Any]:
    """The range of characters ``start:end`` of line ``line`` (``text``) in code units."""
    return {
        "start": {"line": line, "character": units(text[:start])},
        "end": {"line": line, "character": units(text[:end])},
    }


def word_at(uri: str, line: int, offset: int) -> str | None:
    lines = docs.get(uri, [])
    if not 0 <= line < len(lines):
        return None
    col = index(lines[line], offset)
    for m in WORD.finditer(lines[line]):
        if m.start() <= col < m.end():
            return m.group()
    return None


def occurrences(word: str) -> list[dict[str, Any]]:
    pattern = re.compile(r"(?<![A-Za-z0-9_])" + re.escape(word) + r"(?![A-Za-z0-9_])")
    out = []
    for uri, lines in docs.items():
        for number, text in enumerate(lines):
            for m in pattern.finditer(text):
                out.append({"uri": uri, "range": rng(number, text, m.start(), m.end())})
    return out


def definition(word: str) -> dict[str, Any] | None:
    for uri, lines in docs.items():
        for number, text in enumerate(lines):
            for m in FUNCTION.finditer(text):
                if m.group(1) == word:
                    return {"uri": uri, "range": rng(number, text, m.start(1), m.end(1))}
    return None


def symbols(uri: str) -> list[dict[str, Any]]:
    out = []
    for number, text in enumerate(docs.get(uri, [])):
        for m in FUNCTION.finditer(text):
            out.append(
                {
                    "name": m.group(1),
                    "kind": 12,
                    "range": rng(number, text, m.start(), len(text)),
                    "selectionRange": rng(number, text, m.start(1), m.end(1)),
                }
            )
    return out


def answer(method: str, params: dict[str, Any]) -> Any:
    if method == "initialize":
        return {
            "capabilities": {
                "textDocumentSync": {"openClose": True, "change": 1},
                "definitionProvider": True,
                "referencesProvider": True,
                "documentSymbolProvider": True,
            },
            "offsetEncoding": ENCODING,
            "serverInfo": {"name": "utf8-ls"},
        }
    if method in ("textDocument/definition", "textDocument/references"):
        uri, pos = params["textDocument"]["uri"], params["position"]
        word = word_at(uri, pos["line"], pos["character"])
        if word is None:
            return None
        return definition(word) if method.endswith("definition") else occurrences(word)
    if method == "textDocument/documentSymbol":
        return symbols(params["textDocument"]["uri"])
    return None


def main() -> None:
    while (message := read()) is not None:
        method, params = message.get("method", ""), message.get("params") or {}
        if method in ("textDocument/didOpen", "textDocument/didChange"):
            doc = params["textDocument"]
            text = doc["text"] if "text" in doc else params["contentChanges"][-1]["text"]
            docs[doc["uri"]] = text.split("\n")
        elif method == "textDocument/didClose":
            docs.pop(params["textDocument"]["uri"], None)
        elif method == "exit":
            return
        if "id" in message and method:
            send({"id": message["id"], "result": answer(method, params)})


if __name__ == "__main__":
    main()
