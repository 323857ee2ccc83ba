"""The smallest line edits that turn a document's text into an agent's new text.

An editor that receives a whole-document replacement loses the cursor, the scroll position,
folding and any decoration on untouched lines. Line-granular edits keep them, and they are
what the user sees in undo history. Positions follow LSP: lines end at ``\\n``, ``\\r\\n`` or
``\\r`` (nothing else), characters count UTF-16 code units.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")

# Past this many differing lines on a side, a pairwise diff costs more than it saves.
_DIFF_LIMIT = 5_000


@dataclass(frozen=True)
class TextPosition:
    line: int
    character: int


@dataclass(frozen=True)
class LineEdit:
    """Replace the text from ``start`` to ``end`` by ``new_text``."""

    start: TextPosition
    end: TextPosition
    new_text: str


def split_lines(text: str) -> list[str]:
    """Lines with their endings, as LSP counts them; the last may lack an ending."""
    return _LINE.findall(text)


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _position(lines: list[str], index: int) -> TextPosition:
    """Where line ``index`` starts; ``len(lines)`` is the end of the document."""
    if index < len(lines):
        return TextPosition(index, 0)
    if not lines:
        return TextPosition(0, 0)
    last = lines[-1]
    if last.endswith(("\n", "\r")):
        return TextPosition(len(lines), 0)
    return TextPosition(len(lines) - 1, _utf16_len(last))


def minimal_edits(old: str, new: str) -> list[LineEdit]:
    """Non-overlapping edits in document order; applying them to ``old`` gives ``new``."""
    if old == new:
        return []
    a, b = split_lines(old), split_lines(new)
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    a_mid, b_mid = a[head : len(a) - tail], b[head : len(b) - tail]
    if len(a_mid) > _DIFF_LIMIT or len(b_mid) > _DIFF_LIMIT:
        hunks = [(0, len(a_mid), 0, len(b_mid))]
    else:
        matcher = difflib.SequenceMatcher(None, a_mid, b_mid, autojunk=False)
        hunks = [
            (i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
        ]
    return [
        LineEdit(
            start=_position(a, head + i1),
            end=_position(a, head + i2),
            new_text="".join(b_mid[j1:j2]),
        )
        for i1, i2, j1, j2 in hunks
    ]


def apply_edits(text: str, edits: list[LineEdit]) -> str:
    """Apply edits made by ``minimal_edits`` (as an editor would; for tests and checks)."""
    lines = split_lines(text)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(pos: TextPosition) -> int:
        if pos.line >= len(lines):
            return len(text)
        line = lines[pos.line]
        units = 0
        for i, ch in enumerate(line):
            if units >= pos.character:
                return offsets[pos.line] + i
            units += _utf16_len(ch)
        return offsets[pos.line] + len(line)

    out = text
    for edit in sorted(edits, key=lambda e: (e.start.line, e.start.character), reverse=True):
        out = out[: offset(edit.start)] + edit.new_text + out[offset(edit.end) :]
    return out


__all__ = ["LineEdit", "TextPosition", "apply_edits", "minimal_edits", "split_lines"]
