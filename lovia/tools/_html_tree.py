"""HTML parsed into a small element tree, on the stdlib parser (never raises on malformed markup).

Implied end tags for ``p``, ``li``, table parts and headings, and a depth cap against
pathological nesting; collected alongside: the ``<title>`` and the ``<base href>``. The tree is
what :mod:`lovia.tools._html` renders as Markdown.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from html.parser import HTMLParser

DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "canvas", "iframe", "title"})
"""Elements dropped with their contents (``title`` is reported separately)."""

VOID = frozenset(
    {
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
        "keygen",
    }
)

HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})

BLOCKS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "caption",
        "center",
        "dd",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "header",
        "hgroup",
        "hr",
        "html",
        "legend",
        "li",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
        "head",
        "listing",
        "xmp",
        "plaintext",
        "search",
    }
    | HEADINGS
)

# Start tags that close an open <p> (HTML "button scope", simplified).
_CLOSES_P = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "center",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "header",
        "hgroup",
        "hr",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "table",
        "ul",
        "listing",
        "xmp",
        "search",
    }
    | HEADINGS
)
_P_SCOPE = frozenset({"table", "td", "th", "caption", "button", "object", "template", "html"})
_LIST_SCOPE = frozenset({"ul", "ol", "menu", "dir", "table", "td", "th"})
TABLE_PARTS = frozenset({"thead", "tbody", "tfoot"})
_TABLE_TAGS = frozenset({"table", "caption", "tr", "td", "th"} | TABLE_PARTS)
_END_SCOPE = frozenset({"table", "td", "th", "caption", "template"})

MAX_DEPTH = 100
"""Deeper elements are flattened into their ancestor at this depth (text is kept)."""

_WS = re.compile(r"[ \t\n\r\f\v\xa0]+")


def collapse(text: str) -> str:
    """Every whitespace run (``&nbsp;`` included) becomes one space."""
    return _WS.sub(" ", text)


@dataclass
class Element:
    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[Element | str] = field(default_factory=list)


@dataclass
class ParsedHtml:
    root: Element
    title: str | None
    base_href: str | None


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#root")
        self.stack: list[Element] = [self.root]
        self.flattened: dict[str, int] = {}
        self.title_parts: list[str] | None = None
        self.title: str | None = None
        self.base_href: str | None = None

    # -- tree helpers

    def _open_index(self, tag: str, scope: Collection[str] = ()) -> int:
        for i in range(len(self.stack) - 1, 0, -1):
            current = self.stack[i].tag
            if current == tag:
                return i
            if current in scope:
                return -1
        return -1

    def _close_to(self, index: int) -> None:
        if index > 0:
            del self.stack[index:]

    def _implied_closes(self, tag: str) -> None:
        if tag in _CLOSES_P:
            self._close_to(self._open_index("p", _P_SCOPE))
        if tag == "li":
            self._close_to(self._open_index("li", _LIST_SCOPE))
        elif tag in ("dt", "dd"):
            self._close_to(max(self._open_index("dt", {"dl"}), self._open_index("dd", {"dl"})))
        elif tag in ("td", "th"):
            self._close_to(max(self._open_index(t, ("tr", "table")) for t in ("td", "th")))
        elif tag == "tr":
            self._close_to(self._open_index("tr", {"table"}))
        elif tag in TABLE_PARTS:
            self._close_to(
                max(self._open_index(t, {"table"}) for t in ("thead", "tbody", "tfoot", "tr"))
            )
        elif tag in HEADINGS:
            top = self.stack[-1].tag
            if top in HEADINGS:
                self.stack.pop()
        elif tag == "a":
            self._close_to(self._open_index("a", {"td", "th", "table"}))
        elif tag == "option":
            self._close_to(self._open_index("option", {"select"}))

    # -- parser callbacks

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        if tag == "base" and self.base_href is None and attributes.get("href", "").strip():
            self.base_href = attributes["href"].strip()
        if (
            tag == "title"
            and self.title is None
            and self.title_parts is None
            and not any(e.tag == "svg" for e in self.stack)
        ):
            self.title_parts = []
        self._implied_closes(tag)
        element = Element(tag, attributes)
        if tag == "br" or tag in VOID:
            self.stack[-1].children.append(element)
            return
        if len(self.stack) > MAX_DEPTH and tag not in DROPPED:
            self.flattened[tag] = self.flattened.get(tag, 0) + 1
            return
        self.stack[-1].children.append(element)
        self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in VOID and tag != "br":
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self.title_parts is not None:
            self.title = collapse("".join(self.title_parts)).strip() or None
            self.title_parts = None
        if self.flattened.get(tag):
            self.flattened[tag] -= 1
            return
        if tag == "br":  # </br> acts like <br>
            self.stack[-1].children.append(Element("br"))
            return
        if tag in _TABLE_TAGS:
            scope: Collection[str] = () if tag == "table" else ("table",)
        else:
            scope = _P_SCOPE if tag == "p" else _END_SCOPE
        self._close_to(self._open_index(tag, scope))

    def handle_data(self, data: str) -> None:
        if self.title_parts is not None:
            self.title_parts.append(data)
        self.stack[-1].children.append(data)


def parse_html(html: str) -> ParsedHtml:
    """Parse ``html`` into an element tree; whatever parsed before an internal error is kept."""
    builder = _TreeBuilder()
    try:
        builder.feed(html)
        builder.close()
    except Exception:  # the stdlib parser is lenient, but never let markup raise
        pass
    title = builder.title
    if title is None and builder.title_parts is not None:  # unterminated <title>
        title = collapse("".join(builder.title_parts)).strip() or None
    return ParsedHtml(builder.root, title, builder.base_href)


__all__ = [
    "BLOCKS",
    "DROPPED",
    "HEADINGS",
    "MAX_DEPTH",
    "TABLE_PARTS",
    "VOID",
    "Element",
    "ParsedHtml",
    "collapse",
    "parse_html",
]
