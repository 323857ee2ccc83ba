"""Markdown rendered as an ACP client would, and what in it would load from the network.

CommonMark with raw HTML passed through as HTML, plus GFM tables: the most a client renders.
"""

from __future__ import annotations

from html.parser import HTMLParser

from markdown_it import MarkdownIt

from lovia_server.acp.inert_markdown import LOADING_TAGS

MD = MarkdownIt("commonmark").enable("table")
_URL_ATTRS = {"src", "srcset", "poster", "background", "data", "lowsrc", "dynsrc"}


class _Loads(HTMLParser):
    """Elements of rendered HTML that would fetch something when shown."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {name for name, _ in attrs}
        style = " ".join(v or "" for name, v in attrs if name == "style")
        table_like = tag in ("table", "td", "th", "body")  # load only through an attribute
        if (tag in LOADING_TAGS and not table_like) or names & _URL_ATTRS or "url(" in style:
            self.found.append(tag)


def loads(markdown: str) -> list[str]:
    """The elements of ``markdown``, rendered, that would load something (empty: none)."""
    parser = _Loads()
    parser.feed(MD.render(markdown))
    return parser.found
