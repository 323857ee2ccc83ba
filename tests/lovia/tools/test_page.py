"""Page reading: ``page_from_response``, ``HttpReader`` (cache) and the ``read_page`` tool."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

import lovia.tools.page as page_mod
from lovia.exceptions import InvalidToolArguments, ToolError
from lovia.run_context import RunContext
from lovia.tools import (
    HttpReader,
    Page,
    PageImage,
    PageReader,
    page_reader,
    read_page,
    render_tool_result,
    run_tool,
)
from lovia.tools.http import RawResponse, default_user_agent
from lovia.tools.page import ACCEPT_HTML, page_from_response
from tests.support.web_server import WebResponse, WebServer, closed_port, html, text

FIXTURES = Path(__file__).parent / "fixtures"


def raw(
    body: bytes | str,
    media_type: str = "text/html",
    *,
    charset: str | None = None,
    url: str = "https://example.org/guide/start.html",
    status: int = 200,
    capped: bool = False,
) -> RawResponse:
    data = body.encode() if isinstance(body, str) else body
    return RawResponse(url, status, media_type, {}, data, charset, capped)


class FakeReader:
    """A PageReader returning a fixed page and recording calls."""

    def __init__(self, page: Page, *, fail: int = 0) -> None:
        self.page = page
        self.calls: list[tuple[str, bool]] = []
        self.fail = fail

    async def read(self, url: str, *, images: bool = False) -> Page:
        self.calls.append((url, images))
        if self.fail:
            self.fail -= 1
            raise ConnectionError("transient")
        return self.page


def numbered_lines(n: int, width: int = 9) -> str:
    return "\n".join(f"{i:0{width}d}" for i in range(n))


# --------------------------------------------------------------------------- page_from_response


def test_article_fixture_converts_to_markdown() -> None:
    body = (FIXTURES / "article.html").read_bytes()
    page = page_from_response(raw(body, charset="utf-8"), collect_images=True)
    assert page.url == "https://example.org/guide/start.html"
    assert page.status_code == 200 and page.media_type == "text/html"
    assert page.title == "Getting started with Widgets"
    assert page.text == (FIXTURES / "article.md").read_text().rstrip("\n")
    assert page.images == [
        PageImage("https://example.org/images/cover.png"),
        PageImage("https://cdn.example.org/card.jpg"),
        PageImage("https://example.org/images/diagram.png", "How widgets fit together"),
        PageImage("https://example.org/images/photo-1600.webp"),
        PageImage("https://example.org/images/photo.jpg", "A widget in the wild"),
    ]
    assert page.size_capped is False and page.next_offset is None


def test_images_are_collected_only_on_request_but_always_inlined() -> None:
    page = page_from_response(raw('<p><img src="/a.png" alt="A"></p>'))
    assert page.images == [] and page.text == "![A](https://example.org/a.png)"


def test_image_collection_dedupes_keeps_first_alt_and_skips_data_uris() -> None:
    body = """
    <img src="/x.png" alt="first"><img src="/x.png" alt="second">
    <img src="/y.png"><img src="/y.png" alt="late alt">
    <img src="data:image/png;base64,AAAA" alt="inline">
    <img src="javascript:alert(1)">
    <meta property="og:image:url" content="/og.png">
    """
    page = page_from_response(raw(body), collect_images=True)
    assert page.images == [
        PageImage("https://example.org/x.png", "first"),
        PageImage("https://example.org/y.png", "late alt"),
        PageImage("https://example.org/og.png"),
    ]


def test_image_collection_is_capped_at_1000() -> None:
    body = "".join(f'<img src="/i{i}.png">' for i in range(1100))
    page = page_from_response(raw(body), collect_images=True)
    assert len(page.images) == 1000 and page.images[-1].url.endswith("/i999.png")


def test_image_urls_follow_base_href() -> None:
    body = '<base href="https://cdn.example.net/assets/"><img src="p.png" alt="p">'
    page = page_from_response(raw(body), collect_images=True)
    assert page.images == [PageImage("https://cdn.example.net/assets/p.png", "p")]


@pytest.mark.parametrize(
    "body",
    [
        b"<!DOCTYPE html><p>sniffed</p>",
        b"   \n<HTML><body><p>sniffed</p></body></HTML>",
        b"<!-- comment --><html><p>sniffed</p></html>",
    ],
)
def test_html_is_sniffed_when_the_media_type_is_missing(body: bytes) -> None:
    page = page_from_response(raw(body, ""))
    assert page.text == "sniffed"


def test_html_is_not_sniffed_for_declared_text() -> None:
    page = page_from_response(raw("<html><p>raw</p></html>", "text/plain"))
    assert page.text == "<html><p>raw</p></html>" and page.title is None


def test_xhtml_media_type_is_html() -> None:
    page = page_from_response(raw("<html><p>x</p></html>", "application/xhtml+xml"))
    assert page.text == "x"


def test_title_is_collapsed_and_none_when_empty() -> None:
    assert page_from_response(raw("<title>  a\n  b </title>x")).title == "a b"
    assert page_from_response(raw("<title>   </title>x")).title is None
    assert page_from_response(raw("<p>no title</p>")).title is None


def test_empty_extraction_falls_back_to_the_raw_html() -> None:
    body = "<html><script>app()</script><div id='root'></div></html>"
    assert page_from_response(raw(body)).text == body


def test_meta_charset_is_sniffed_for_html() -> None:
    body = b'<html><head><meta charset="windows-1252"></head><p>caf\xe9 \x93quoted\x94</p></html>'
    assert page_from_response(raw(body)).text == "café “quoted”"
    # a declared charset wins
    body2 = '<meta charset="latin-1"><p>ü</p>'.encode()
    assert page_from_response(raw(body2, charset="utf-8")).text == "ü"


def test_json_and_other_types() -> None:
    page = page_from_response(raw('{ "a": [1, 2] }', "application/json"))
    assert page.text == '{"a":[1,2]}' and page.title is None
    assert page_from_response(raw("a,b\n1,2", "text/csv")).text == "a,b\n1,2"
    binary = page_from_response(raw(b"\x89PNG\x00", "image/png"))
    assert binary.text == "(binary content not shown: image/png, 5 bytes)"


def test_size_capped_is_carried_over() -> None:
    assert page_from_response(raw("<p>x</p>", capped=True)).size_capped is True


# --------------------------------------------------------------------------- HttpReader


async def test_http_reader_sends_accept_and_default_user_agent(web: WebServer) -> None:
    url = web.route("/p", html("<title>T</title><p>hello</p>"))
    page = await HttpReader(cache_ttl=0).read(url)
    assert page.title == "T" and page.text == "hello" and page.url == url
    hit = web.hits("/p")[0]
    assert hit.header("accept") == ACCEPT_HTML
    assert hit.header_values("user-agent") == [default_user_agent()]
    await HttpReader(cache_ttl=0, user_agent="reader/2").read(url)
    assert web.hits("/p")[1].header_values("user-agent") == ["reader/2"]


async def test_http_reader_is_a_page_reader() -> None:
    assert isinstance(HttpReader(), PageReader)


async def test_http_reader_caches_by_exact_url(web: WebServer) -> None:
    url = web.route("/c", html("<p>cached</p>"))
    reader = HttpReader()
    first = await reader.read(url)
    second = await reader.read(url, images=True)
    assert first.text == second.text == "cached"
    assert len(web.hits("/c")) == 1
    await reader.read(url + "?v=2")  # another URL string, another entry
    assert len(web.hits("/c")) == 2


async def test_http_reader_cache_expires(web: WebServer, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = {"now": 1000.0}
    monkeypatch.setattr(page_mod.time, "monotonic", lambda: clock["now"])
    url = web.route("/e", html("<p>x</p>"))
    reader = HttpReader(cache_ttl=10)
    await reader.read(url)
    clock["now"] += 9.9
    await reader.read(url)
    assert len(web.hits("/e")) == 1
    clock["now"] += 0.2
    await reader.read(url)
    assert len(web.hits("/e")) == 2


@pytest.mark.parametrize("ttl", [0, -1])
async def test_http_reader_ttl_zero_disables_caching(web: WebServer, ttl: float) -> None:
    url = web.route("/n", html("<p>x</p>"))
    reader = HttpReader(cache_ttl=ttl)
    await reader.read(url)
    await reader.read(url)
    assert len(web.hits("/n")) == 2 and len(reader._cache) == 0


async def test_http_reader_cache_is_lru_bounded(web: WebServer) -> None:
    for name in "abc":
        web.route(f"/{name}", html(f"<p>{name}</p>"))
    reader = HttpReader(cache_size=2)
    await reader.read(web.url("/a"))
    await reader.read(web.url("/b"))
    await reader.read(web.url("/a"))  # a is now the most recent
    await reader.read(web.url("/c"))  # evicts b
    await reader.read(web.url("/a"))
    await reader.read(web.url("/b"))
    assert [len(web.hits(f"/{n}")) for n in "abc"] == [1, 2, 1]
    assert HttpReader(cache_size=0).cache_size == 1


async def test_http_reader_does_not_cache_transient_failures(web: WebServer) -> None:
    url = web.route("/busy", text("try later", status=503))
    reader = HttpReader()
    assert (await reader.read(url)).status_code == 503
    await reader.read(url)
    assert len(web.hits("/busy")) == 2


async def test_http_reader_concurrent_reads(web: WebServer) -> None:
    urls = [web.route(f"/p{i}", html(f"<h1>page {i}</h1>")) for i in range(8)]
    reader = HttpReader()
    pages = await asyncio.gather(*(reader.read(u) for u in urls))
    assert [p.text for p in pages] == [f"# page {i}" for i in range(8)]


async def test_http_reader_caps_downloads(web: WebServer) -> None:
    chunk = b"<p>" + b"x" * 4093 + b"</p>"
    url = web.route(
        "/big", lambda r: WebResponse(200, [("Content-Type", "text/html")], chunks=[chunk] * 300)
    )
    page = await HttpReader(cache_ttl=0).read(url)
    assert page.size_capped is True
    assert 990_000 < len(page.text) <= 1_000_000


# --------------------------------------------------------------------------- the tool


def test_read_page_schema_and_flags() -> None:
    assert read_page.name == "read_page"
    assert set(read_page.parameters["properties"]) == {"url", "images", "offset"}
    assert read_page.parameters["required"] == ["url"]
    props = read_page.parameters["properties"]
    assert props["images"]["default"] is False
    assert props["offset"]["default"] == 0 and props["offset"]["minimum"] == 0
    assert read_page.retries == 2 and read_page.parallel is True
    assert read_page.needs_approval is False and read_page.returns_images is False
    custom = page_reader(FakeReader(Page("u", 200, "text/html")), name="fetch_doc", max_chars=10)
    assert custom.name == "fetch_doc"


def test_module_level_read_page_shares_one_reader() -> None:
    assert isinstance(page_mod._DEFAULT_READER, HttpReader)
    assert page_reader() is not read_page


async def test_url_is_validated_before_the_backend(ctx: RunContext[Any]) -> None:
    reader = FakeReader(Page("x", 200, "text/plain"))
    tool = page_reader(reader)
    with pytest.raises(ToolError, match=r"^Unsupported URL scheme: 'file'\."):
        await tool.invoke({"url": "file:///etc/passwd"}, ctx)
    assert reader.calls == []


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"url": "http://x", "offset": -1},
        {"url": "http://x", "images": "many"},
        {"url": "http://x", "x": 1},
    ],
)
async def test_invalid_arguments(args: dict[str, Any], ctx: RunContext[Any]) -> None:
    with pytest.raises(InvalidToolArguments, match="Invalid arguments for tool 'read_page'"):
        await page_reader(FakeReader(Page("x", 200, "")), name="read_page").invoke(args, ctx)


async def test_images_flag_reaches_the_backend(ctx: RunContext[Any]) -> None:
    reader = FakeReader(Page("http://x/", 200, "text/html", text="t"))
    tool = page_reader(reader)
    await tool.invoke({"url": "http://x/"}, ctx)
    await tool.invoke({"url": "http://x/", "images": True}, ctx)
    assert reader.calls == [("http://x/", False), ("http://x/", True)]


async def test_short_pages_come_whole(ctx: RunContext[Any]) -> None:
    original = Page("http://x/", 200, "text/html", title="T", text="short text")
    result = await page_reader(FakeReader(original)).invoke({"url": "http://x/"}, ctx)
    assert result == dataclasses.replace(original, next_offset=None)
    assert result is not original


async def test_long_pages_are_cut_at_a_newline_and_continue(ctx: RunContext[Any]) -> None:
    body = numbered_lines(100)  # 100 lines of 10 chars (9 digits + newline)
    original = Page("http://x/", 200, "text/plain", text=body)
    tool = page_reader(FakeReader(original), max_chars=205)
    first = await tool.invoke({"url": "http://x/"}, ctx)
    # last newline before 205 is at index 199 -> cut there
    assert first.text == body[:199] and first.next_offset == 199
    second = await tool.invoke({"url": "http://x/", "offset": first.next_offset}, ctx)
    assert second.text.startswith("\n000000020") and second.next_offset == 199 + 200
    assert original.text == body and original.next_offset is None  # never mutated
    # reading on reassembles the whole text
    pieces, offset = [first.text], first.next_offset
    while offset is not None:
        page = await tool.invoke({"url": "http://x/", "offset": offset}, ctx)
        pieces.append(page.text)
        offset = page.next_offset
    assert "".join(pieces) == body


async def test_cut_without_a_newline_in_the_window(ctx: RunContext[Any]) -> None:
    body = "a" * 1000 + "\n" + "b" * 1000
    tool = page_reader(FakeReader(Page("http://x/", 200, "text/plain", text=body)), max_chars=500)
    page = await tool.invoke({"url": "http://x/"}, ctx)
    assert page.text == "a" * 500 and page.next_offset == 500
    # a newline at position 0 of the remainder does not count
    body2 = "\n" + "c" * 999
    tool2 = page_reader(FakeReader(Page("http://x/", 200, "text/plain", text=body2)), max_chars=150)
    page2 = await tool2.invoke({"url": "http://x/"}, ctx)
    assert page2.text == body2[:150] and page2.next_offset == 150


async def test_offset_past_the_end(ctx: RunContext[Any]) -> None:
    tool = page_reader(FakeReader(Page("http://x/", 200, "text/plain", text="abc")))
    page = await tool.invoke({"url": "http://x/", "offset": 10}, ctx)
    assert page.text == "" and page.next_offset is None
    assert await render_tool_result(tool, page, ctx) == "URL: http://x/\nHTTP 200 · text/plain"


async def test_non_2xx_pages_are_limited_to_500_chars(ctx: RunContext[Any]) -> None:
    body = "x" * 2000
    tool = page_reader(FakeReader(Page("http://x/", 404, "text/html", text=body)))
    page = await tool.invoke({"url": "http://x/"}, ctx)
    assert page.text == "x" * 500 and page.next_offset == 500
    small = page_reader(FakeReader(Page("http://x/", 500, "text/html", text=body)), max_chars=200)
    assert (await small.invoke({"url": "http://x/"}, ctx)).text == "x" * 200


async def test_renderer_full_format(ctx: RunContext[Any]) -> None:
    page = Page(
        "https://e.com/a",
        200,
        "text/html",
        title="A page",
        text="# Hello\n\nbody",
        images=[PageImage("https://e.com/1.png", "one"), PageImage("https://e.com/2.png")],
        size_capped=True,
        next_offset=42,
    )
    out = await render_tool_result(read_page, page, ctx)
    assert out == (
        "Title: A page\n"
        "URL: https://e.com/a\n"
        "HTTP 200 · text/html · download capped at 1.0MB (the rest of the page was never fetched)\n"
        "\n# Hello\n\nbody\n"
        "\n[... truncated. Continue with offset=42.]\n"
        "\nImages (2):\n1. https://e.com/1.png — one\n2. https://e.com/2.png"
    )


async def test_renderer_minimal_and_many_images(ctx: RunContext[Any]) -> None:
    bare = Page("https://e.com/b", 204, "")
    assert (
        await render_tool_result(read_page, bare, ctx) == "URL: https://e.com/b\nHTTP 204 · unknown"
    )
    many = Page(
        "u", 200, "text/html", images=[PageImage(f"https://e.com/{i}.png") for i in range(60)]
    )
    out = await render_tool_result(read_page, many, ctx)
    lines = out.split("\n")
    assert "Images (50 of 60):" in lines
    assert lines[-1] == "50. https://e.com/49.png"


async def test_renderer_passes_other_values_through(ctx: RunContext[Any]) -> None:
    assert await render_tool_result(read_page, "plain string", ctx) == "plain string"
    assert json.loads(await render_tool_result(read_page, {"a": 1}, ctx)) == {"a": 1}


async def test_retries_transient_backend_failures(ctx: RunContext[Any]) -> None:
    reader = FakeReader(Page("http://x/", 200, "text/plain", text="ok"), fail=2)
    page = await run_tool(page_reader(reader), {"url": "http://x/"}, ctx)
    assert page.text == "ok" and len(reader.calls) == 3
    always = FakeReader(Page("http://x/", 200, "text/plain"), fail=5)
    with pytest.raises(ConnectionError):
        await run_tool(page_reader(always), {"url": "http://x/"}, ctx)
    assert len(always.calls) == 3


async def test_read_page_end_to_end_against_a_local_site(
    web: WebServer, ctx: RunContext[Any]
) -> None:
    body = (FIXTURES / "article.html").read_text()
    web.route("/old-guide", lambda r: WebResponse(301, [("Location", "/guide/start.html")]))
    url = web.route("/guide/start.html", html(body))
    tool = page_reader(HttpReader(cache_ttl=0))
    page = await tool.invoke({"url": web.url("/old-guide"), "images": True}, ctx)
    assert page.url == url and page.title == "Getting started with Widgets"
    out = await render_tool_result(tool, page, ctx)
    assert out.startswith(
        f"Title: Getting started with Widgets\nURL: {url}\nHTTP 200 · text/html\n\n"
    )
    assert f"[installation guide]({web.origin}/docs/install.html)" in out
    assert "| Size | Pixels | Notes |\n| --- | --- | --- |" in out
    assert "data:" not in out and "analytics" not in out
    assert f"\nImages (5):\n1. {web.origin}/images/cover.png\n" in out
    assert f"3. {web.origin}/images/diagram.png — How widgets fit together" in out


async def test_read_page_not_found_is_a_page_not_an_error(
    web: WebServer, ctx: RunContext[Any]
) -> None:
    url = web.route("/gone", html("<h1>Not found</h1>" + "<p>filler</p>" * 200, status=404))
    page = await page_reader(HttpReader(cache_ttl=0)).invoke({"url": url}, ctx)
    assert page.status_code == 404 and page.text.startswith("# Not found")
    assert len(page.text) <= 500 and page.next_offset is not None


async def test_read_page_transport_errors_become_tool_errors(ctx: RunContext[Any]) -> None:
    tool = page_reader(HttpReader(cache_ttl=0))
    with pytest.raises(ToolError, match="failed"):
        await tool.invoke({"url": f"http://127.0.0.1:{closed_port()}/"}, ctx)


async def test_read_page_timeout(web: WebServer, ctx: RunContext[Any]) -> None:
    url = web.route("/slow", WebResponse(200, [], b"<p>late</p>", delay=3))
    tool = page_reader(HttpReader(cache_ttl=0, timeout=0.3))
    with pytest.raises(ToolError, match="timed out"):
        await tool.invoke({"url": url}, ctx)


async def test_read_page_json_endpoint(web: WebServer, ctx: RunContext[Any]) -> None:
    url = web.route(
        "/api", lambda r: WebResponse(200, [("Content-Type", "application/json")], b'{ "k" : "v" }')
    )
    page = await page_reader(HttpReader(cache_ttl=0)).invoke({"url": url}, ctx)
    assert page.text == '{"k":"v"}'
