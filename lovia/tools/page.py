"""Page reading: ``read_page`` / ``page_reader`` over a :class:`PageReader` backend.

The default backend, :class:`HttpReader`, fetches with the shared transport of
:mod:`lovia.tools.http` and converts HTML to Markdown with :func:`html_to_markdown` (stdlib
only). The tool pages long texts with ``offset`` so the model can read on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lovia._httpx import httpx
from lovia.run_context import RunContext
from lovia.tools._html import collect_images as _collect_images
from lovia.tools._html import effective_base, parse_html, render_markdown
from lovia.tools._html import html_to_markdown as html_to_markdown
from lovia.tools.base import Tool, default_result_renderer, invalid_arguments
from lovia.tools.http import (
    MAX_RESPONSE_BYTES,
    RawResponse,
    compact_json,
    decode_body,
    fetch_raw,
    format_megabytes,
    render_payload,
    transport_error,
    validate_url,
)
from lovia.tools.presentation import short

ACCEPT_HTML = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
MAX_LISTED_IMAGES = 50
NON_2XX_CHARS = 500
_CUT_WINDOW = 200
_UNCACHED_STATUSES = frozenset({408, 425, 429})


@dataclass
class PageImage:
    url: str
    alt: str = ""


@dataclass
class Page:
    """A fetched page as text: Markdown for HTML, compact JSON, or the decoded body."""

    url: str
    status_code: int
    media_type: str
    title: str | None = None
    text: str = ""
    images: list[PageImage] = field(default_factory=list)
    size_capped: bool = False
    next_offset: int | None = None


@runtime_checkable
class PageReader(Protocol):
    """A page-reading backend. ``read`` returns the whole body; it must be concurrency-safe."""

    async def read(self, url: str, *, images: bool = False) -> Page: ...


# --------------------------------------------------------------------------- conversion


def _is_html(raw: RawResponse) -> bool:
    if "html" in raw.media_type:
        return True
    if raw.media_type:
        return False
    head = raw.body[:512].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<html" in head


def page_from_response(raw: RawResponse, *, collect_images: bool = False) -> Page:
    """Turn a fetched response into a :class:`Page` (HTML → Markdown, JSON compacted)."""
    page = Page(
        url=raw.url,
        status_code=raw.status_code,
        media_type=raw.media_type,
        size_capped=raw.size_capped,
    )
    if _is_html(raw):
        html = decode_body(raw.body, raw.charset, sniff_meta=True)
        parsed = parse_html(html)
        page.title = parsed.title
        page.text = render_markdown(parsed, raw.url) or html
        if collect_images:
            base = effective_base(parsed, raw.url)
            page.images = [PageImage(u, a) for u, a in _collect_images(parsed.root, base)]
    elif "json" in raw.media_type:
        page.text = compact_json(decode_body(raw.body, raw.charset))
    else:
        page.text = render_payload(raw)
    return page


# --------------------------------------------------------------------------- HttpReader


class HttpReader:
    """Reads pages over HTTP(S) with a small per-URL response cache.

    The cache is keyed by the exact URL, entries expire after ``cache_ttl`` seconds
    (``<= 0`` disables caching) and at most ``cache_size`` responses are kept (least
    recently used evicted). Responses with 5xx, 408, 425 or 429 are never cached.
    """

    def __init__(
        self,
        *,
        timeout: float = 30.0,
        max_bytes: int = MAX_RESPONSE_BYTES,
        user_agent: str | None = None,
        cache_ttl: float = 300.0,
        cache_size: int = 32,
    ) -> None:
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.user_agent = user_agent
        self.cache_ttl = cache_ttl
        self.cache_size = max(1, cache_size)
        self._cache: OrderedDict[str, tuple[float, RawResponse]] = OrderedDict()

    def clear_cache(self) -> None:
        self._cache.clear()

    def _cached(self, url: str) -> RawResponse | None:
        entry = self._cache.get(url)
        if entry is None:
            return None
        expires, raw = entry
        if time.monotonic() >= expires:
            self._cache.pop(url, None)
            return None
        self._cache.move_to_end(url)
        return raw

    def _store(self, url: str, raw: RawResponse) -> None:
        if self.cache_ttl <= 0:
            return
        if raw.status_code >= 500 or raw.status_code in _UNCACHED_STATUSES:
            return
        self._cache[url] = (time.monotonic() + self.cache_ttl, raw)
        self._cache.move_to_end(url)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    async def fetch(self, url: str) -> RawResponse:
        """The raw response for ``url`` (from the cache when fresh)."""
        raw = self._cached(url) if self.cache_ttl > 0 else None
        if raw is None:
            raw = await fetch_raw(
                url,
                headers={"Accept": ACCEPT_HTML},
                timeout=self.timeout,
                max_bytes=self.max_bytes,
                user_agent=self.user_agent,
            )
            self._store(url, raw)
        return raw

    async def read(self, url: str, *, images: bool = False) -> Page:
        raw = await self.fetch(url)
        # HTML conversion is CPU work: keep the event loop responsive on large pages.
        if len(raw.body) > 200_000:
            return await asyncio.to_thread(page_from_response, raw, collect_images=images)
        return page_from_response(raw, collect_images=images)


_DEFAULT_READER = HttpReader()


# --------------------------------------------------------------------------- tool


class _ReadArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str
    images: bool = False
    offset: int = Field(default=0, ge=0)


_READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "description": "Absolute http:// or https:// URL of the page."},
        "images": {
            "type": "boolean",
            "default": False,
            "description": "Also list the page's images (URL and alt text).",
        },
        "offset": {
            "type": "integer",
            "minimum": 0,
            "default": 0,
            "description": "Character offset to continue a long page from (see the "
            "'Continue with offset=' note of the previous call).",
        },
    },
    "required": ["url"],
    "additionalProperties": False,
}


def clip_page(page: Page, *, offset: int, limit: int) -> Page:
    """A copy of ``page`` holding at most ``limit`` chars from ``offset`` (cut at a newline)."""
    rest = page.text[offset:]
    if len(rest) <= limit:
        return dataclasses.replace(page, text=rest, next_offset=None)
    cut = rest.rfind("\n", max(0, limit - _CUT_WINDOW), limit)
    if cut <= 0:
        cut = limit
    return dataclasses.replace(page, text=rest[:cut], next_offset=offset + cut)


def render_page(page: Any, *, cap_bytes: int = MAX_RESPONSE_BYTES) -> str:
    """The model-visible text of a :class:`Page`; strings pass through."""
    if not isinstance(page, Page):
        return default_result_renderer(page)
    lines: list[str] = []
    if page.title:
        lines.append(f"Title: {page.title}")
    lines.append(f"URL: {page.url}")
    status = f"HTTP {page.status_code} · {page.media_type or 'unknown'}"
    if page.size_capped:
        status += (
            f" · download capped at {format_megabytes(cap_bytes)} "
            "(the rest of the page was never fetched)"
        )
    lines.append(status)
    if page.text:
        lines += ["", page.text]
    if page.next_offset is not None:
        lines += ["", f"[... truncated. Continue with offset={page.next_offset}.]"]
    if page.images:
        total = len(page.images)
        shown = page.images[:MAX_LISTED_IMAGES]
        count = f"{len(shown)} of {total}" if total > MAX_LISTED_IMAGES else str(total)
        header = f"Images ({count}):"
        lines += ["", header]
        for i, image in enumerate(shown, 1):
            lines.append(f"{i}. {image.url}" + (f" — {image.alt}" if image.alt else ""))
    return "\n".join(lines)


def page_reader(
    impl: PageReader | None = None, *, name: str = "read_page", max_chars: int = 20_000
) -> Tool:
    """A tool reading web pages through ``impl`` (default: the shared :class:`HttpReader`)."""
    reader: PageReader = impl if impl is not None else _DEFAULT_READER

    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> Page:
        try:
            parsed = _ReadArgs.model_validate(args)
        except ValidationError as exc:
            raise invalid_arguments(name, exc) from None
        validate_url(parsed.url)
        try:
            page = await reader.read(parsed.url, images=parsed.images)
        except httpx.HTTPError as exc:
            raise transport_error(exc, parsed.url) from exc
        limit = max_chars if 200 <= page.status_code < 300 else min(max_chars, NON_2XX_CHARS)
        return clip_page(page, offset=parsed.offset, limit=limit)

    def renderer(result: Any, ctx: RunContext[Any]) -> str:
        cap = getattr(reader, "max_bytes", MAX_RESPONSE_BYTES)
        return render_page(result, cap_bytes=cap if isinstance(cap, int) else MAX_RESPONSE_BYTES)

    return Tool(
        name=name,
        description=(
            "Read a web page and return its text as Markdown (headings, lists, links, tables, "
            "code and images kept). JSON is returned compacted, other text as is. Long pages "
            f"come in parts of about {max_chars} characters: call again with the offset given "
            "at the end to continue. Set images=true to also list the page's image URLs. "
            "Only http(s) URLs."
        ),
        parameters=_READ_SCHEMA,
        invoke=invoke,
        retries=2,
        result_renderer=renderer,
        parallel=True,
        kind="fetch",
        title=lambda args: short(f"Read {args.get('url', 'page')}"),
    )


read_page = page_reader()
"""``page_reader()`` over the module-level :class:`HttpReader` (one shared cache)."""


__all__ = [
    "ACCEPT_HTML",
    "HttpReader",
    "Page",
    "PageImage",
    "PageReader",
    "clip_page",
    "html_to_markdown",
    "page_from_response",
    "page_reader",
    "read_page",
    "render_page",
]
