"""HTML → Markdown (best effort; never raises on malformed markup).

:mod:`lovia.tools._html_tree` parses the page into a small element tree; the renderer here walks
it. Collected alongside: the page's images, with URLs resolved against its ``<base href>``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from lovia.tools._html_tree import (
    BLOCKS,
    DROPPED,
    HEADINGS,
    TABLE_PARTS,
    Element,
    ParsedHtml,
    collapse,
    parse_html,
)

MAX_IMAGES = 1000
MAX_ALT = 200

_SPACES = re.compile(r" {2,}")
_BACKTICKS = re.compile(r"`+")
_NEEDS_BRACKETS = re.compile(r"[()\s]")


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
                elif child.tag in TABLE_PARTS:
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
