"""The editor's language intelligence as a port: diagnostics, definitions, references,
implementations and symbols, supplied by whichever host runs inside an editor.

The editor already runs the language servers; a host that can ask it (the lovia language server
asks its client) implements :class:`EditorIntel`, and the workspace then gives the agent tools
over it (``lovia.workspace.editor_tools``). The data types are host-neutral and count the way
models read code: 1-based lines and 1-based columns in characters. Only the one place that
asks a language server needs LSP's 0-based lines and UTF-16 offsets, and the helpers here
convert between the two from the file's text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from lovia.exceptions import ToolError

Severity = Literal["error", "warning", "information", "hint"]
LocationKind = Literal["definition", "references", "implementation"]


@dataclass(frozen=True)
class LspPosition:
    """A position as LSP counts: 0-based line, ``character`` in UTF-16 code units."""

    line: int
    character: int


@dataclass(frozen=True)
class CodeLocation:
    """A place in a file: 1-based line and column (characters)."""

    path: Path
    line: int
    col: int


@dataclass(frozen=True)
class Diagnostic:
    """One problem the editor's language servers report for a file."""

    path: Path
    line: int
    col: int
    severity: Severity
    message: str
    source: str | None = None
    code: str | None = None

    def key(self) -> tuple[str, str, str | None, str | None]:
        """What makes two problems the same one, wherever the lines moved."""
        return (self.severity, self.message, self.code, self.source)


@dataclass(frozen=True)
class FileDiagnostics:
    """A file's current problems; ``version`` counts the host's updates of them (``None``
    when the host does not count), so a later request can wait for the next update."""

    path: Path
    diagnostics: tuple[Diagnostic, ...] = ()
    version: int | None = None


@dataclass(frozen=True)
class DiagnosticsReport:
    """Problems per file; ``settled`` is False when a wait for new ones ran out first."""

    files: tuple[FileDiagnostics, ...] = ()
    settled: bool = True

    def versions(self) -> dict[Path, int]:
        return {f.path: f.version for f in self.files if f.version is not None}

    def all(self) -> list[Diagnostic]:
        return [d for f in self.files for d in f.diagnostics]


@dataclass(frozen=True)
class SymbolInfo:
    """A named thing in code: a document outline entry (``depth`` its nesting) or a workspace
    search hit (``container`` the enclosing name when the server says)."""

    name: str
    kind: str
    path: Path
    line: int
    col: int
    container: str | None = None
    depth: int = 0


class NoLanguageServer(ToolError):
    """The editor runs no language server that answers this request for ``path`` (``None``: a
    workspace symbol search). Unlike an empty answer, this says nothing about the code, so the
    agent is told to search the text instead."""

    path: Path | None = None


class EditorIntel(Protocol):
    """What an editor's language servers answer. Every method may raise (the editor did not
    answer, or answered nonsense; :class:`NoLanguageServer` when nothing in the editor handles
    the file); callers bound each call in time."""

    async def diagnostics(
        self,
        paths: Sequence[Path] | None,
        *,
        after: Mapping[Path, int] | None = None,
        wait: float = 0.0,
    ) -> DiagnosticsReport:
        """Current problems of ``paths`` (``None``: every file the editor knows problems of).
        With ``after`` (versions from an earlier report), wait up to ``wait`` seconds until
        each of those files' problems were updated again, then answer."""
        ...

    async def locations(
        self, kind: LocationKind, path: Path, position: LspPosition
    ) -> list[CodeLocation]:
        """Definitions, references or implementations of the symbol at ``position``."""
        ...

    async def document_symbols(self, path: Path) -> list[SymbolInfo]:
        """The file's outline, in document order."""
        ...

    async def workspace_symbols(self, query: str) -> list[SymbolInfo]:
        """Symbols of the whole workspace matching ``query``."""
        ...


# --------------------------------------------------------------------------- positions


def utf16_offset(line_text: str, col: int) -> int:
    """The UTF-16 offset of 1-based character column ``col`` in ``line_text``."""
    head = line_text[: max(col - 1, 0)]
    return len(head.encode("utf-16-le")) // 2


def column_of(line_text: str, character: int) -> int:
    """The 1-based character column of UTF-16 offset ``character`` in ``line_text`` (an offset
    inside a surrogate pair or past the end lands on the nearest column)."""
    units = 0
    for index, char in enumerate(line_text):
        if units >= character:
            return index + 1
        units += 2 if ord(char) > 0xFFFF else 1
    return len(line_text) + 1


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """``text``'s lines as LSP counts them: only ``\n``, ``\r\n`` and ``\r`` end a line
    (``str.splitlines`` also splits at form feeds and U+2028, which would shift every line
    number after them)."""
    lines = _LINE_BREAK.split(text)
    return lines[:-1] if lines and lines[-1] == "" else lines


def line_of(text: str, line: int) -> str:
    """Line ``line`` (1-based) of ``text`` without its ending; ``""`` past the end."""
    lines = split_lines(text)
    return lines[line - 1] if 1 <= line <= len(lines) else ""


def _pattern(symbol: str) -> re.Pattern[str]:
    body = re.escape(symbol)
    head = r"(?<![\w$])" if re.match(r"[\w$]", symbol) else ""
    tail = r"(?![\w$])" if re.search(r"[\w$]$", symbol) else ""
    return re.compile(head + body + tail)


def find_symbol(text: str, symbol: str, line: int | None = None) -> tuple[int, int]:
    """Where ``symbol`` stands in ``text`` as a whole word: the 1-based (line, column) of the
    occurrence nearest ``line`` (the earlier one on a tie; the first one without ``line``).

    Raises ``ToolError`` with a hint when the file has no such word.
    """
    name = symbol.strip()
    if not name:
        raise ToolError("symbol is empty.", hint="Pass the name of a function, class or variable.")
    pattern = _pattern(name)
    best: tuple[int, int] | None = None
    for number, text_line in enumerate(split_lines(text), start=1):
        match = pattern.search(text_line)
        if match is None:
            continue
        spot = (number, match.start() + 1)
        if line is None:
            return spot
        if best is None or abs(number - line) < abs(best[0] - line):
            best = spot
    if best is None:
        raise ToolError(
            f"{name!r} does not occur as a whole word in this file.",
            hint="Check the spelling and the file (symbols are matched exactly, case included); "
            "symbols(path=...) lists a file's symbols, symbols(query=...) searches the workspace.",
        )
    return best


def lsp_position(text: str, symbol: str, line: int | None = None) -> LspPosition:
    """The LSP position of ``symbol`` in ``text`` (see :func:`find_symbol`)."""
    number, col = find_symbol(text, symbol, line)
    return LspPosition(line=number - 1, character=utf16_offset(line_of(text, number), col))


# --------------------------------------------------------------------------- new problems

_REPORTED: frozenset[str] = frozenset({"error", "warning"})


def new_problems(before: Sequence[Diagnostic], after: Sequence[Diagnostic]) -> list[Diagnostic]:
    """Errors and warnings in ``after`` that ``before`` did not have.

    Problems are the same when severity, message, code and source match, wherever their lines
    moved (an edit above a problem shifts it). When a problem occurs more often than before,
    the extra occurrences are new: those farthest from the old lines are reported.
    """
    old: dict[tuple[str, str, str | None, str | None], list[int]] = {}
    for d in before:
        old.setdefault(d.key(), []).append(d.line)
    groups: dict[tuple[str, str, str | None, str | None], list[Diagnostic]] = {}
    for d in after:
        if d.severity in _REPORTED:
            groups.setdefault(d.key(), []).append(d)
    out: list[Diagnostic] = []
    for key, items in groups.items():
        lines = old.get(key, [])
        extra = len(items) - len(lines)
        if extra <= 0:
            continue
        far = sorted(items, key=lambda d: -min((abs(d.line - n) for n in lines), default=0))
        out += far[:extra]
    order = {"error": 0, "warning": 1}
    return sorted(out, key=lambda d: (order.get(d.severity, 2), str(d.path), d.line, d.col))


__all__ = [
    "CodeLocation",
    "Diagnostic",
    "DiagnosticsReport",
    "EditorIntel",
    "FileDiagnostics",
    "LocationKind",
    "LspPosition",
    "NoLanguageServer",
    "Severity",
    "SymbolInfo",
    "column_of",
    "find_symbol",
    "line_of",
    "lsp_position",
    "new_problems",
    "split_lines",
    "utf16_offset",
]
