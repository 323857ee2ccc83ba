"""HTML → Markdown on the stdlib parser (best effort; never raises on malformed markup).

The parser builds a small element tree (implied end tags for ``p``, ``li``, table parts and
headings, a depth cap against pathological nesting), then a renderer walks it. Collected
alongside: the ``<title>``, the ``<base href>`` and the page's images.

Long because the parser and its renderer are one best-effort pipeline over one small element tree;
the element rules and the rendering rules are read together.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

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
_TABLE_PARTS = frozenset({"thead", "tbody", "tfoot"})
_TABLE_TAGS = frozenset({"table", "caption", "tr", "td", "th"} | _TABLE_PARTS)
_END_SCOPE = frozenset({"table", "td", "th", "caption", "template"})

MAX_DEPTH = 100
"""Deeper elements are flattened into their ancestor at this depth (text is kept)."""
MAX_IMAGES = 1000
MAX_ALT = 200

_WS = re.compile(r"[ \t\n\r\f\v\xa0]+")
_SPACES = re.compile(r" {2,}")
_BACKTICKS = re.compile(r"`+")
_NEEDS_BRACKETS = re.compile(r"[()\s]")


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
        elif tag in _TABLE_PARTS:
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


# --------------------------------------------------------------------------- URLs


_CONTROL = re.compile(r"[\t\n\r]")


@functools.lru_cache(maxsize=32)
def _origin(base: str) -> str | None:
    """``scheme://netloc`` of an http(s) ``base``, or None."""
    try:
        parts = urlsplit(base)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def resolve_url(href: str | None, base: str) -> str | None:
    """An absolute http(s) URL for ``href`` against ``base``, or None when unusable."""
    if href is None:
        return None
    href = _CONTROL.sub("", href).strip()
    if not href or href.startswith("#"):
        return None
    lowered = href[:11].lower()
    if lowered.startswith(("data:", "javascript:")):
        return None
    # fast path: the common root-relative link needs no full RFC 3986 join
    if base and href[0] == "/" and href[1:2] != "/" and "/." not in href and "\\" not in href:
        origin = _origin(base)
        if origin is not None:
            return origin + href
    try:
        resolved = (
            href if not base or lowered.startswith(("http://", "https://")) else urljoin(base, href)
        )
        parts = urlsplit(resolved)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return resolved


def _descriptor_value(descriptor: str) -> float:
    for token in descriptor.split():
        unit = token[-1:].lower()
        if unit in ("w", "x"):
            try:
                return float(token[:-1])
            except ValueError:
                return 0.0
    return 1.0  # no descriptor means 1x


def parse_srcset(srcset: str) -> list[tuple[str, float]]:
    """``srcset`` candidates as ``(url, size)`` where size is the w or x descriptor."""
    out: list[tuple[str, float]] = []
    i, n = 0, len(srcset)
    while i < n:
        while i < n and (srcset[i].isspace() or srcset[i] == ","):
            i += 1
        j = i
        while j < n and not srcset[j].isspace():
            j += 1
        url = srcset[i:j]
        i = j
        descriptor = ""
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            k = srcset.find(",", i)
            if k < 0:
                k = n
            descriptor = srcset[i:k]
            i = k + 1
        if url:
            out.append((url, _descriptor_value(descriptor)))
    return out


def largest_candidate(srcset: str, base: str) -> str | None:
    best: tuple[float, str] | None = None
    for url, size in parse_srcset(srcset):
        resolved = resolve_url(url, base)
        if resolved is not None and (best is None or size > best[0]):
            best = (size, resolved)
    return best[1] if best else None


def image_url(attrs: dict[str, str], base: str) -> str | None:
    """``src`` if usable, else the largest ``srcset`` candidate (then lazy-load attributes)."""
    for key in ("src",):
        url = resolve_url(attrs.get(key), base)
        if url:
            return url
    for key in ("srcset", "data-srcset"):
        if attrs.get(key):
            url = largest_candidate(attrs[key], base)
            if url:
                return url
    return resolve_url(attrs.get("data-src"), base)


# --------------------------------------------------------------------------- markdown


def escape_link_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def code_span(content: str) -> str:
    """Backtick span whose fence is one longer than the longest backtick run inside."""
    longest = max((len(m) for m in _BACKTICKS.findall(content)), default=0)
    fence = "`" * (longest + 1)
    if content.startswith("`") or content.endswith("`"):
        content = f" {content} "
    return f"{fence}{content}{fence}"


def _format_url(url: str) -> str:
    url = url.replace("<", "%3C").replace(">", "%3E")
    return f"<{url}>" if _NEEDS_BRACKETS.search(url) else url


def _text_content(node: Element | str, *, verbatim: bool = False) -> str:
    """All descendant text (dropped elements skipped); ``br`` as a newline."""
    parts: list[str] = []
    stack: list[Element | str] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, str):
            parts.append(current)
        elif current.tag == "br":
            parts.append("\n")
        elif current.tag not in DROPPED:
            stack.extend(reversed(current.children))
    text = "".join(parts)
    return text if verbatim else collapse(text)


def _contains(node: Element, tags: frozenset[str]) -> bool:
    stack: list[Element | str] = list(node.children)
    while stack:
        current = stack.pop()
        if isinstance(current, Element):
            if current.tag in tags:
                return True
            if current.tag not in DROPPED:
                stack.extend(current.children)
    return False


_LAYOUT_MARKERS = frozenset({"table", "pre", "blockquote", "hr"} | HEADINGS)
_LIST_TAGS = frozenset({"ul", "ol", "menu", "dir"})


@dataclass
class _Block:
    text: str
    is_list: bool = False


class MarkdownRenderer:
    """Walks a parsed tree; ``base`` is the URL relative links resolve against."""

    def __init__(self, base: str) -> None:
        self.base = base

    # -- entry points

    def render(self, root: Element) -> str:
        blocks = self._blocks(root.children, 0)
        return "\n\n".join(b.text for b in blocks).strip()

    # -- flow content

    def _blocks(self, nodes: list[Element | str], level: int) -> list[_Block]:
        out: list[_Block] = []
        inline: list[str] = []
        self._flow(nodes, level, out, inline)
        self._flush(out, inline)
        return out

    def _flow(
        self, nodes: list[Element | str], level: int, out: list[_Block], inline: list[str]
    ) -> None:
        for node in nodes:
            if isinstance(node, str):
                inline.append(collapse(node))
                continue
            tag = node.tag
            if tag in DROPPED:
                continue
            if tag in BLOCKS:
                self._flush(out, inline)
                out.extend(self._block(node, level))
            elif tag == "br":
                inline.append("\n")
            elif tag in ("a", "img", "code") or not _contains(node, BLOCKS):
                inline.append(self._inline(node, escape=False))
            else:  # an inline wrapper around blocks: transparent
                self._flow(node.children, level, out, inline)

    @staticmethod
    def _flush(out: list[_Block], inline: list[str]) -> None:
        if not inline:
            return
        text = "".join(inline)
        inline.clear()
        lines = [_SPACES.sub(" ", line).strip() for line in text.split("\n")]
        while lines and not lines[0]:
            lines.pop(0)
        while lines and not lines[-1]:
            lines.pop()
        cleaned: list[str] = []
        for line in lines:  # at most one blank line in a row
            if line or (cleaned and cleaned[-1]):
                cleaned.append(line)
        if cleaned:
            out.append(_Block("\n".join(cleaned)))

    def _block(self, node: Element, level: int) -> list[_Block]:
        tag = node.tag
        if tag in HEADINGS:
            text = self._line(node)
            return [_Block("#" * int(tag[1]) + " " + text)] if text else []
        if tag == "hr":
            return [_Block("---")]
        if tag in ("pre", "listing", "xmp", "plaintext"):
            return self._pre(node)
        if tag in _LIST_TAGS:
            return self._list(node, level)
        if tag == "li":  # a list item outside any list
            lines = self._item(node, level, "- ")
            return [_Block("\n".join(lines), is_list=True)] if lines else []
        if tag == "table":
            return self._table(node, level)
        return self._blocks(node.children, level)

    # -- inline content

    def _inline(self, node: Element | str, *, escape: bool) -> str:
        if isinstance(node, str):
            text = collapse(node)
            return escape_link_text(text) if escape else text
        tag = node.tag
        if tag in DROPPED:
            return ""
        if tag == "br":
            return " " if escape else "\n"
        if tag == "img":
            return self._image(node)
        if tag == "code":
            return self._code(node)
        if tag == "a":
            return self._link(node, escape=escape)
        parts = [self._inline(child, escape=escape) for child in node.children]
        text = "".join(parts)
        if tag in BLOCKS or tag in ("td", "th"):
            return f" {text} "
        return text

    def _line(self, node: Element) -> str:
        """The node's inline Markdown on one line (headings, table cells)."""
        text = "".join(self._inline(child, escape=False) for child in node.children)
        return _SPACES.sub(" ", collapse(text)).strip()

    def _link(self, node: Element, *, escape: bool) -> str:
        url = resolve_url(node.attrs.get("href"), self.base)
        if url is None:
            return "".join(self._inline(child, escape=escape) for child in node.children)
        text = "".join(self._inline(child, escape=True) for child in node.children)
        text = _SPACES.sub(" ", collapse(text)).strip()
        if not text:
            return ""
        lead = " " if _edge_space(node, 0) else ""
        trail = " " if _edge_space(node, -1) else ""
        return f"{lead}[{text}]({_format_url(url)}){trail}"

    def _image(self, node: Element) -> str:
        alt = collapse(node.attrs.get("alt", "")).strip()[:MAX_ALT].strip()
        url = image_url(node.attrs, self.base)
        if url is None:
            return alt
        return f"![{escape_link_text(alt)}]({_format_url(url)})"

    def _code(self, node: Element) -> str:
        content = _text_content(node)
        stripped = content.strip()
        if not stripped:
            return content and " "
        lead = " " if content[0] == " " else ""
        trail = " " if content[-1] == " " else ""
        return f"{lead}{code_span(stripped)}{trail}"

    # -- blocks

    def _pre(self, node: Element) -> list[_Block]:
        text = _text_content(node, verbatim=True).replace("\r\n", "\n").replace("\xa0", " ")
        if text.startswith("\n"):
            text = text[1:]
        text = text.rstrip()
        if not text.strip():
            return []
        longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
        fence = "`" * max(3, longest + 1)
        return [_Block(f"{fence}\n{text}\n{fence}")]

    def _list(self, node: Element, level: int) -> list[_Block]:
        ordered = node.tag == "ol"
        try:
            number = int(node.attrs.get("start", "1").strip())
        except ValueError:
            number = 1
        lines: list[str] = []
        for item in self._list_items(node):
            if isinstance(item, Element) and item.tag in _LIST_TAGS:  # list directly in list
                lines.extend(b.text for b in self._list(item, level + 1))
                continue
            if isinstance(item, Element) and item.tag == "li" and item.attrs.get("value"):
                try:
                    number = int(item.attrs["value"].strip())
                except ValueError:
                    pass
            marker = f"{number}. " if ordered else "- "
            number += 1
            lines.extend(self._item(item, level, marker))
        return [_Block("\n".join(lines), is_list=True)] if lines else []

    @staticmethod
    def _list_items(node: Element) -> list[Element | str]:
        """``li`` children; wrappers around ``li`` are looked through; stray content wraps."""
        items: list[Element | str] = []
        stray: list[Element | str] = []

        def flush_stray() -> None:
            if any(not isinstance(s, str) or s.strip() for s in stray):
                items.append(Element("li", {}, list(stray)))
            stray.clear()

        pending: list[Element | str] = list(node.children)
        while pending:
            child = pending.pop(0)
            if isinstance(child, Element) and child.tag in DROPPED:
                continue
            if isinstance(child, Element) and (child.tag == "li" or child.tag in _LIST_TAGS):
                flush_stray()
                items.append(child)
            elif isinstance(child, Element) and _contains(child, frozenset({"li"})):
                flush_stray()
                pending[0:0] = child.children
            else:
                stray.append(child)
        flush_stray()
        return items

    def _item(self, item: Element | str, level: int, marker: str) -> list[str]:
        children: list[Element | str] = item.children if isinstance(item, Element) else [item]
        blocks = self._blocks(children, level + 1)
        indent = "  " * level
        continuation = "  " * (level + 1)
        lines: list[str] = []
        has_text = False
        for block in blocks:
            if block.is_list:
                lines.extend(block.text.split("\n"))
                continue
            for line in block.text.split("\n"):
                if not has_text:
                    lines.append(indent + marker + line)
                    has_text = True
                else:
                    lines.append(continuation + line if line else "")
        return lines

    def _table(self, node: Element, level: int) -> list[_Block]:
        rows, caption = self._rows(node)
        if node.attrs.get("role", "").lower() in ("presentation", "none") or any(
            _contains(cell, _LAYOUT_MARKERS)
            or (_contains(cell, _LIST_TAGS) and _contains(cell, frozenset({"p", "div"})))
            for _, row in rows
            for cell in row
        ):
            # A layout table: its cells are ordinary flow content.
            out: list[_Block] = []
            if caption is not None:
                out.extend(self._blocks(caption.children, level))
            for _, row in rows:
                for cell in row:
                    out.extend(self._blocks(cell.children, level))
            return out
        rendered: list[tuple[bool, list[str]]] = []
        for in_head, row in rows:
            cells: list[str] = []
            for cell in row:
                cells.append(self._line(cell).replace("|", "\\|"))
                try:
                    span = int(cell.attrs.get("colspan", "1"))
                except ValueError:
                    span = 1
                cells.extend([""] * (min(max(span, 1), 50) - 1))
            if any(cells):
                header = in_head or any(cell.tag == "th" for cell in row)
                rendered.append((header, cells))
        if not rendered:
            return []
        width = max(len(cells) for _, cells in rendered)
        lines = []
        for i, (header, cells) in enumerate(rendered):
            cells = cells + [""] * (width - len(cells))
            lines.append("| " + " | ".join(cells) + " |")
            if i == 0 and header:
                lines.append("| " + " | ".join(["---"] * width) + " |")
        out = []
        if caption is not None:
            text = self._line(caption)
            if text:
                out.append(_Block(text))
        out.append(_Block("\n".join(lines)))
        return out

    @staticmethod
    def _rows(table: Element) -> tuple[list[tuple[bool, list[Element]]], Element | None]:
        rows: list[tuple[bool, list[Element]]] = []
        caption: Element | None = None
        loose: list[Element] = []

        def visit(nodes: list[Element | str], in_head: bool) -> None:
            nonlocal caption
            for child in nodes:
                if not isinstance(child, Element) or child.tag in DROPPED:
                    continue
                if child.tag == "caption" and caption is None:
                    caption = child
                elif child.tag in _TABLE_PARTS:
                    visit(child.children, in_head or child.tag == "thead")
                elif child.tag == "tr":
                    cells = [c for c in child.children if isinstance(c, Element)]
                    rows.append((in_head, [c for c in cells if c.tag in ("td", "th")]))
                elif child.tag in ("td", "th"):  # cells without a row
                    loose.append(child)
                elif child.tag not in ("table", "colgroup", "col"):
                    visit(child.children, in_head)

        visit(table.children, False)
        if loose:
            rows.append((False, loose))
        return rows, caption


def _edge_space(node: Element, index: int) -> bool:
    edge = node.children[index] if node.children else None
    if not isinstance(edge, str) or not edge:
        return False
    return (edge[0] if index == 0 else edge[-1]).isspace()


# --------------------------------------------------------------------------- images


def collect_images(root: Element, base: str, *, limit: int = MAX_IMAGES) -> list[tuple[str, str]]:
    """``(url, alt)`` of ``img``, ``<source srcset>`` and og/twitter image metas, in order.

    Absolute http(s) URLs only, de-duplicated by URL (the first non-empty alt is kept).
    """
    found: dict[str, str] = {}
    stack: list[Element | str] = list(reversed(root.children))
    while stack and len(found) < limit:
        node = stack.pop()
        if not isinstance(node, Element) or node.tag in DROPPED:
            continue
        url: str | None = None
        alt = ""
        if node.tag == "img":
            url = image_url(node.attrs, base)
            alt = collapse(node.attrs.get("alt", "")).strip()[:MAX_ALT].strip()
        elif node.tag == "source" and node.attrs.get("srcset"):
            url = largest_candidate(node.attrs["srcset"], base)
        elif node.tag == "meta":
            key = (node.attrs.get("property") or node.attrs.get("name") or "").strip().lower()
            if key in ("og:image", "og:image:url", "twitter:image"):
                url = resolve_url(node.attrs.get("content"), base)
        if url is not None and not found.get(url):  # new URL, or the first had no alt
            found[url] = alt
        stack.extend(reversed(node.children))
    return list(found.items())


def effective_base(parsed: ParsedHtml, base_url: str) -> str:
    """The document URL, rebased by ``<base href>`` when present."""
    if parsed.base_href:
        href = parsed.base_href
        try:
            rebased = urljoin(base_url, href) if base_url else href
            if urlsplit(rebased).scheme.lower() in ("http", "https"):
                return rebased
        except ValueError:
            pass
    return base_url


def html_to_markdown(html: str, *, base_url: str = "") -> str:
    """Convert HTML to Markdown (headings, lists, code, links, images, tables).

    Scripts, styles and similar non-content elements are dropped with their contents;
    relative URLs resolve against ``base_url`` (or the page's ``<base href>``); links with
    no usable http(s) target become plain text. Never raises on malformed markup.
    """
    parsed = parse_html(html)
    return render_markdown(parsed, base_url)


def render_markdown(parsed: ParsedHtml, base_url: str) -> str:
    """Markdown for an already parsed document (falls back to plain text if rendering fails)."""
    try:
        return MarkdownRenderer(effective_base(parsed, base_url)).render(parsed.root)
    except RecursionError:  # pragma: no cover - the depth cap should prevent this
        return _SPACES.sub(" ", _text_content(parsed.root)).strip()


__all__ = [
    "Element",
    "MarkdownRenderer",
    "ParsedHtml",
    "collect_images",
    "effective_base",
    "html_to_markdown",
    "parse_html",
    "render_markdown",
    "resolve_url",
]
