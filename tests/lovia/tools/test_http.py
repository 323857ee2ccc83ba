"""The shared HTTP transport (fetch_raw and helpers), TLS settings, and ``http_request``."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from typing import Any

import httpx
import pytest

import lovia.tools.http as http_mod
from lovia import __version__
from lovia.exceptions import InvalidToolArguments, ToolError
from lovia.run_context import RunContext
from lovia.tools import http_request, writes_need_approval
from lovia.tools.http import (
    MAX_RESPONSE_BYTES,
    RawResponse,
    compact_json,
    decode_body,
    default_user_agent,
    fetch_raw,
    looks_textual,
    render_payload,
    validate_url,
)
from tests.support.web_server import (
    WebResponse,
    WebServer,
    closed_port,
    html,
    json_response,
    redirect,
    text,
)


def raw(body: bytes = b"", media_type: str = "", charset: str | None = None) -> RawResponse:
    return RawResponse("http://x/", 200, media_type, {}, body, charset, False)


# --------------------------------------------------------------------------- validate_url


@pytest.mark.parametrize(
    ("url", "scheme"),
    [
        ("ftp://example.com/x", "'ftp'"),
        ("file:///etc/passwd", "'file'"),
        ("FILE:///etc/passwd", "'file'"),
        ("javascript:alert(1)", "'javascript'"),
        ("example.com/page", "'(none)'"),
        ("", "'(none)'"),
    ],
)
def test_validate_url_refuses_non_http_schemes(url: str, scheme: str) -> None:
    with pytest.raises(ToolError) as info:
        validate_url(url)
    assert info.value.message == f"Unsupported URL scheme: {scheme}."
    assert "http" in (info.value.hint or "")


def test_validate_url_accepts_http_and_https_in_any_case() -> None:
    for url in ("http://a.example/", "https://a.example/x?y=1", "HTTPS://A.EXAMPLE"):
        assert validate_url(url) == url


def test_validate_url_requires_a_host() -> None:
    with pytest.raises(ToolError, match="no host"):
        validate_url("http:///path")


# --------------------------------------------------------------------------- helpers


def test_default_user_agent_names_lovia_and_is_cached() -> None:
    ua = default_user_agent()
    assert re.fullmatch(
        rf"Mozilla/5\.0 \(compatible; lovia/{re.escape(__version__)}; \+https?://\S+\)", ua
    )
    assert default_user_agent() is ua


def test_decode_body_order_declared_meta_utf8() -> None:
    latin = "café".encode("latin-1")
    assert decode_body(latin, "latin-1") == "café"
    assert decode_body("café".encode(), None) == "café"
    # unknown and non-text codecs are skipped, never raised
    assert decode_body("café".encode(), "no-such-codec") == "café"
    assert decode_body(b"abc", "base64") == "abc"
    assert decode_body(b"\xff", None) == "\ufffd"
    page = b'<html><head><meta charset="windows-1252"></head><body>caf\xe9</body></html>'
    assert "café" in decode_body(page, None, sniff_meta=True)
    assert "caf\ufffd" in decode_body(page, None)  # no sniffing unless asked
    equiv = b'<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">\xe9'
    assert decode_body(equiv, None, sniff_meta=True).endswith("é")
    # the declared charset wins over the meta tag
    assert decode_body(page, "utf-8", sniff_meta=True).count("\ufffd") == 1
    late = b" " * 5000 + b'<meta charset="latin-1">\xe9'
    assert decode_body(late, None, sniff_meta=True).endswith("\ufffd")  # past 4096 bytes
    bogus_meta = b'<meta charset="nonsense">\xc3\xa9'
    assert decode_body(bogus_meta, None, sniff_meta=True).endswith("é")


def test_looks_textual_and_compact_json() -> None:
    assert looks_textual(b"plain text")
    assert not looks_textual(b"ab\x00cd")
    assert looks_textual(b"x" * 1024 + b"\x00")  # only the first 1024 bytes count
    assert compact_json('{ "a": [1, 2],\n "b": "é" }') == '{"a":[1,2],"b":"é"}'
    assert compact_json("not json {") == "not json {"
    assert compact_json("") == ""


@pytest.mark.parametrize(
    ("media_type", "body", "expected"),
    [
        ("application/json", b'{ "a" : 1 }', '{"a":1}'),
        ("application/problem+json", b'{ "a" : 1 }', '{"a":1}'),
        ("text/html", b"<p>x</p>", "<p>x</p>"),
        ("text/csv", b"a,b\n1,2", "a,b\n1,2"),
        ("application/atom+xml", b"<feed/>", "<feed/>"),
        ("application/javascript", b"let x = 1", "let x = 1"),
        ("", b"plain", "plain"),
        ("image/png", b"\x89PNGabc", "(binary content not shown: image/png, 7 bytes)"),
        ("image/svg+xml", b"<svg/>", "<svg/>"),
        ("audio/ogg", b"OggS", "(binary content not shown: audio/ogg, 4 bytes)"),
        ("video/mp4", b"....", "(binary content not shown: video/mp4, 4 bytes)"),
        ("font/woff2", b"wOF2", "(binary content not shown: font/woff2, 4 bytes)"),
        (
            "application/octet-stream",
            b"textual",
            "(binary content not shown: application/octet-stream, 7 bytes)",
        ),
        (
            "application/x-thing",
            b"a\x00b",
            "(binary content not shown: application/x-thing, 3 bytes)",
        ),
        ("", b"a\x00b", "(binary content not shown: unknown type, 3 bytes)"),
    ],
)
def test_render_payload(media_type: str, body: bytes, expected: str) -> None:
    assert render_payload(raw(body, media_type)) == expected


def test_render_payload_uses_the_declared_charset() -> None:
    assert render_payload(raw("ü".encode("latin-1"), "text/plain", "latin-1")) == "ü"
    assert render_payload(raw("ü".encode(), "text/plain", "bogus")) == "ü"


# --------------------------------------------------------------------------- fetch_raw


async def test_fetch_raw_basic_fields(web: WebServer) -> None:
    url = web.route(
        "/data",
        WebResponse(
            201,
            [("Content-Type", 'Application/JSON; Charset="UTF-8"'), ("X-Thing", "1")],
            b'{"ok": true}',
        ),
    )
    got = await fetch_raw(url)
    assert got.url == url and got.status_code == 201
    assert got.media_type == "application/json" and got.charset == "UTF-8"
    assert got.headers["x-thing"] == "1" and got.body == b'{"ok": true}'
    assert got.size_capped is False
    request = web.hits("/data")[0]
    assert request.method == "GET"
    assert request.header_values("user-agent") == [default_user_agent()]


async def test_fetch_raw_no_content_type(web: WebServer) -> None:
    url = web.route("/bare", WebResponse(200, [], b"hello"))
    got = await fetch_raw(url)
    assert got.media_type == "" and got.charset is None


async def test_fetch_raw_user_agent_override_any_case(web: WebServer) -> None:
    url = web.route("/ua", text("ok"))
    await fetch_raw(url, headers={"user-agent": "probe/1"})
    await fetch_raw(url, headers={"USER-AGENT": "probe/2"})
    await fetch_raw(url, user_agent="custom/3")
    seen = [r.header_values("User-Agent") for r in web.hits("/ua")]
    assert seen == [["probe/1"], ["probe/2"], ["custom/3"]]


async def test_fetch_raw_method_is_upper_cased_and_json_sent_for_any_method(web: WebServer) -> None:
    url = web.route("/echo", lambda r: json_response({"method": r.method}))
    await fetch_raw(url, method="post", json_body={"a": 1})
    await fetch_raw(url, method="get", json_body=[1, 2])
    await fetch_raw(url, method="delete", json_body=False)
    await fetch_raw(url, method="put")
    hits = web.hits("/echo")
    assert [h.method for h in hits] == ["POST", "GET", "DELETE", "PUT"]
    assert [h.json for h in hits] == [{"a": 1}, [1, 2], False, None]
    assert hits[0].header("content-type") == "application/json"
    assert hits[3].body == b""


async def test_fetch_raw_follows_redirects_and_reports_the_final_url(web: WebServer) -> None:
    web.route("/start", redirect("/middle", status=301))
    web.route("/middle", redirect(web.url("/end"), status=307))
    end = web.route("/end", text("arrived"))
    got = await fetch_raw(web.url("/start"))
    assert got.url == end and got.body == b"arrived" and got.status_code == 200


async def test_fetch_raw_refuses_redirects_to_other_schemes(web: WebServer) -> None:
    web.route("/sneaky", redirect("file:///etc/passwd"))
    web.route("/ftp", redirect("ftp://127.0.0.1/x", status=308))
    with pytest.raises(ToolError, match=r"^Unsupported URL scheme: 'file'\."):
        await fetch_raw(web.url("/sneaky"))
    with pytest.raises(ToolError, match=r"^Unsupported URL scheme: 'ftp'\."):
        await fetch_raw(web.url("/ftp"))


async def test_fetch_raw_redirect_loop_is_bounded(web: WebServer) -> None:
    web.route("/loop", redirect("/loop"))
    with pytest.raises(httpx.TooManyRedirects):
        await fetch_raw(web.url("/loop"))
    assert len(web.hits("/loop")) <= 21


async def test_fetch_raw_caps_large_bodies(web: WebServer) -> None:
    block = b"x" * 65536
    url = web.route(
        "/huge",
        lambda r: WebResponse(200, [("Content-Type", "text/plain")], chunks=[block] * 64),
    )
    got = await fetch_raw(url)
    assert got.size_capped is True and len(got.body) == MAX_RESPONSE_BYTES
    small = await fetch_raw(url, max_bytes=1000)
    assert small.size_capped and small.body == b"x" * 1000


async def test_fetch_raw_small_bodies_are_not_capped(web: WebServer) -> None:
    url = web.route("/small", text("y" * 999))
    got = await fetch_raw(url, max_bytes=1000)
    assert got.size_capped is False and len(got.body) == 999


async def test_fetch_raw_times_out_waiting_for_headers(web: WebServer) -> None:
    url = web.route("/slow", WebResponse(200, [], b"late", delay=5))
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(httpx.TimeoutException):
        await fetch_raw(url, timeout=0.3)
    assert loop.time() - start < 3


async def test_fetch_raw_deadline_covers_a_dripping_body(web: WebServer) -> None:
    # each chunk arrives well within the per-read timeout, but the whole body does not
    url = web.route(
        "/drip",
        WebResponse(200, [], chunks=[b"."] * 100, chunk_delay=0.1),
    )
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(httpx.TimeoutException):
        await fetch_raw(url, timeout=0.5)
    assert loop.time() - start < 3


async def test_fetch_raw_transport_errors_propagate() -> None:
    with pytest.raises(httpx.ConnectError):
        await fetch_raw(f"http://127.0.0.1:{closed_port()}/")


async def test_fetch_raw_validates_before_connecting() -> None:
    with pytest.raises(ToolError, match="Unsupported URL scheme"):
        await fetch_raw("gopher://127.0.0.1/")


# --------------------------------------------------------------------------- TLS config


async def test_tls_default_verification_rejects_an_unknown_ca(tls_web: WebServer) -> None:
    url = tls_web.route("/secure", text("secret"))
    with pytest.raises(httpx.ConnectError):
        await fetch_raw(url)


async def test_tls_ca_bundle_env(
    tls_web: WebServer, test_ca: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = tls_web.route("/secure", text("secret"))
    monkeypatch.setenv("LOVIA_HTTP_CA_BUNDLE", str(test_ca.ca_pem))
    got = await fetch_raw(url)
    assert got.body == b"secret" and got.url.startswith("https://")


@pytest.mark.parametrize("value", ["1", "true", "YES", "on"])
async def test_tls_insecure_env(
    tls_web: WebServer, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    url = tls_web.route("/secure", text("secret"))
    monkeypatch.setenv("LOVIA_HTTP_INSECURE", value)
    assert (await fetch_raw(url)).body == b"secret"


async def test_tls_insecure_env_falsy_still_verifies(
    tls_web: WebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = tls_web.route("/secure", text("secret"))
    monkeypatch.setenv("LOVIA_HTTP_INSECURE", "0")
    with pytest.raises(httpx.ConnectError):
        await fetch_raw(url)


async def test_tls_missing_ca_bundle_is_reported(
    tls_web: WebServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("LOVIA_HTTP_CA_BUNDLE", str(tmp_path / "missing.pem"))
    with pytest.raises(FileNotFoundError, match="LOVIA_HTTP_CA_BUNDLE"):
        await fetch_raw(tls_web.url("/"))


async def test_http_request_over_tls_with_ca_bundle(
    tls_web: WebServer, test_ca: Any, monkeypatch: pytest.MonkeyPatch, ctx: RunContext[Any]
) -> None:
    url = tls_web.route("/api", json_response({"tls": True}))
    with pytest.raises(ToolError, match="failed"):
        await http_request.invoke({"url": url}, ctx)
    monkeypatch.setenv("LOVIA_HTTP_CA_BUNDLE", str(test_ca.ca_pem))
    out = await http_request.invoke({"url": url}, ctx)
    assert out.startswith("HTTP 200 · application/json") and out.endswith('{"tls":true}')


# --------------------------------------------------------------------------- http_request


def test_http_request_tool_shape() -> None:
    assert http_request.name == "http_request"
    assert http_request.parallel is True and http_request.needs_approval is False
    props = http_request.parameters["properties"]
    assert set(props) == {"url", "method", "headers", "body", "timeout", "max_chars"}
    assert http_request.parameters["required"] == ["url"]
    assert props["method"]["default"] == "GET"
    assert (
        props["timeout"]["default"],
        props["timeout"]["minimum"],
        props["timeout"]["maximum"],
    ) == (30.0, 1, 120)
    assert (
        props["max_chars"]["default"],
        props["max_chars"]["minimum"],
        props["max_chars"]["maximum"],
    ) == (20000, 100, 200000)
    assert http_request.requires_approval({"url": "x", "method": "DELETE"}, None) is False  # type: ignore[arg-type]


async def test_http_request_json_output_exact(web: WebServer, ctx: RunContext[Any]) -> None:
    url = web.route(
        "/api",
        WebResponse(
            200,
            [
                ("Content-Type", "application/json; charset=utf-8"),
                ("Set-Cookie", "a=1"),
                ("Set-Cookie", "b=2"),
            ],
            json.dumps({"name": "lovia", "tags": ["a", "b"]}, indent=2).encode(),
        ),
    )
    out = await http_request.invoke({"url": url}, ctx)
    body = '{"name":"lovia","tags":["a","b"]}'
    first, *rest = out.split("\n")
    assert first == f"HTTP 200 · application/json · {len(body)} chars"
    assert out.endswith("\n\n" + body)
    assert "URL:" not in out
    assert "set-cookie" not in out.lower() and "a=1" not in out
    header_block = out.split("\n\n")[1]
    assert "content-type: application/json; charset=utf-8" in header_block.lower()
    assert all(": " in line for line in header_block.split("\n"))


async def test_http_request_html_is_verbatim(web: WebServer, ctx: RunContext[Any]) -> None:
    page = "<html><body><h1>Hi</h1>\n<p>there</p></body></html>"
    url = web.route("/page", html(page))
    out = await http_request.invoke({"url": url}, ctx)
    assert out.startswith(f"HTTP 200 · text/html · {len(page)} chars\n")
    assert out.endswith("\n\n" + page)


async def test_http_request_url_line_only_after_redirect(
    web: WebServer, ctx: RunContext[Any]
) -> None:
    web.route("/old", redirect("/new"))
    new = web.route("/new", text("moved"))
    out = await http_request.invoke({"url": web.url("/old")}, ctx)
    assert out.split("\n")[1] == f"URL: {new}"
    plain = await http_request.invoke({"url": new}, ctx)
    assert "URL:" not in plain
    web.route("/", text("root"))
    bare = await http_request.invoke({"url": web.origin}, ctx)  # no path: not a redirect
    assert "URL:" not in bare


async def test_http_request_user_agent_override_sends_one_header(
    web: WebServer, ctx: RunContext[Any]
) -> None:
    url = web.route("/ua", text("ok"))
    await http_request.invoke({"url": url, "headers": {"user-agent": "agent/1.0"}}, ctx)
    await http_request.invoke({"url": url}, ctx)
    first, second = web.hits("/ua")
    assert first.header_values("user-agent") == ["agent/1.0"]
    assert second.header_values("user-agent") == [default_user_agent()]


async def test_http_request_posts_json_and_passes_headers(
    web: WebServer, ctx: RunContext[Any]
) -> None:
    url = web.route("/items", lambda r: json_response({"got": r.json}, status=201))
    out = await http_request.invoke(
        {"url": url, "method": "post", "headers": {"X-Token": "t"}, "body": {"n": 1}}, ctx
    )
    assert out.startswith("HTTP 201 · application/json")
    assert out.endswith('{"got":{"n":1}}')
    hit = web.hits("/items")[0]
    assert hit.method == "POST" and hit.header("x-token") == "t" and hit.json == {"n": 1}


async def test_http_request_null_body_sends_nothing(web: WebServer, ctx: RunContext[Any]) -> None:
    url = web.route("/x", text("ok"))
    await http_request.invoke({"url": url, "method": "POST", "body": None}, ctx)
    hit = web.hits("/x")[0]
    assert hit.body == b"" and hit.header("content-type") is None


async def test_http_request_error_statuses_render_normally(
    web: WebServer, ctx: RunContext[Any]
) -> None:
    url = web.route("/missing", json_response({"error": "nope"}, status=404))
    out = await http_request.invoke({"url": url}, ctx)
    assert out.startswith("HTTP 404 · application/json · ") and out.endswith('{"error":"nope"}')
    url = web.route("/boom", text("server exploded", status=503))
    assert (await http_request.invoke({"url": url}, ctx)).startswith("HTTP 503 · text/plain")


async def test_http_request_truncates_to_max_chars(web: WebServer, ctx: RunContext[Any]) -> None:
    url = web.route("/long", text("a" * 5000))
    out = await http_request.invoke({"url": url, "max_chars": 100}, ctx)
    body = out.split("\n\n", 2)[2]
    assert body.startswith("a" * 100 + "\n[... truncated: showing 100 of 5000 chars.]")
    assert out.split("\n")[0] == f"HTTP 200 · text/plain · {len(body)} chars (truncated)"


async def test_http_request_download_cap_note_wins_over_truncation(
    web: WebServer, ctx: RunContext[Any]
) -> None:
    block = b"z" * 65536
    url = web.route(
        "/huge",
        WebResponse(200, [("Content-Type", "text/plain")], chunks=[block] * 40),
    )
    out = await http_request.invoke({"url": url, "max_chars": 1000}, ctx)
    first = out.split("\n")[0]
    assert first.endswith(" chars (download capped at 1.0MB)")
    assert "(truncated)" not in first


async def test_http_request_head_omits_the_body_section(
    web: WebServer, ctx: RunContext[Any]
) -> None:
    url = web.route("/h", text("body text"))
    out = await http_request.invoke({"url": url, "method": "HEAD"}, ctx)
    assert out.startswith("HTTP 200 · text/plain · 0 chars\n\n")
    assert not out.endswith("body text")


async def test_http_request_headers_block_is_clipped(web: WebServer, ctx: RunContext[Any]) -> None:
    headers = [("Content-Type", "text/plain")] + [(f"X-H{i}", "v" * 50) for i in range(40)]
    url = web.route("/many", WebResponse(200, headers, b"B"))
    out = await http_request.invoke({"url": url}, ctx)
    block = out.split("\n\n")[1]
    assert "[... truncated: showing 600 of" in block
    assert len(block) < 700 and out.endswith("\n\nB")


async def test_http_request_empty_body_and_no_headers(web: WebServer, ctx: RunContext[Any]) -> None:
    url = web.route("/empty", WebResponse(204, [("Content-Length", "0")]))
    out = await http_request.invoke({"url": url}, ctx)
    assert out.startswith("HTTP 204 · unknown · 0 chars")
    assert out.count("\n\n") == 1  # headers only


async def test_http_request_unknown_charset_falls_back_to_utf8(
    web: WebServer, ctx: RunContext[Any]
) -> None:
    url = web.route("/t", text("naïve ☃".encode(), content_type="text/plain; charset=x-unknown-42"))
    assert (await http_request.invoke({"url": url}, ctx)).endswith("naïve ☃")


async def test_http_request_binary_body_is_summarised(web: WebServer, ctx: RunContext[Any]) -> None:
    url = web.route("/img", text(b"\x89PNG\r\n\x1a\n\x00\x00", content_type="image/png"))
    out = await http_request.invoke({"url": url}, ctx)
    assert out.endswith("(binary content not shown: image/png, 10 bytes)")


@pytest.mark.parametrize(
    "args",
    [
        {"url": "http://x", "timeout": 0.5},
        {"url": "http://x", "timeout": 121},
        {"url": "http://x", "max_chars": 99},
        {"url": "http://x", "max_chars": 200_001},
        {"url": "http://x", "method": "GET /evil"},
        {"url": "http://x", "method": "GET\r\nX: y"},
        {"url": "http://x", "headers": {"a": 1}},
        {"url": "http://x", "extra": 1},
        {},
    ],
)
async def test_http_request_invalid_arguments(args: dict[str, Any], ctx: RunContext[Any]) -> None:
    with pytest.raises(InvalidToolArguments, match="Invalid arguments for tool 'http_request'"):
        await http_request.invoke(args, ctx)


async def test_http_request_refuses_other_schemes(ctx: RunContext[Any]) -> None:
    with pytest.raises(ToolError, match=r"^Unsupported URL scheme: 'file'\.") as info:
        await http_request.invoke({"url": "file:///etc/passwd"}, ctx)
    assert not isinstance(info.value, InvalidToolArguments)


async def test_http_request_transport_failure_is_a_tool_error(ctx: RunContext[Any]) -> None:
    url = f"http://127.0.0.1:{closed_port()}/"
    with pytest.raises(ToolError, match=re.escape(f"Request to {url} failed")):
        await http_request.invoke({"url": url}, ctx)


async def test_http_request_timeout_is_a_tool_error(web: WebServer, ctx: RunContext[Any]) -> None:
    url = web.route("/slow", WebResponse(200, [], b"late", delay=4))
    with pytest.raises(ToolError, match="timed out"):
        await http_request.invoke({"url": url, "timeout": 1}, ctx)


async def test_http_request_custom_methods(web: WebServer, ctx: RunContext[Any]) -> None:
    url = web.route("/dav", text("ok"))
    out = await http_request.invoke({"url": url, "method": "propfind"}, ctx)
    assert out.startswith("HTTP 200") and web.hits("/dav")[0].method == "PROPFIND"


async def test_http_request_cap_follows_the_module_constant(
    web: WebServer, ctx: RunContext[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_mod, "MAX_RESPONSE_BYTES", 2_000_000)
    block = b"q" * 65536
    url = web.route(
        "/big",
        WebResponse(200, [("Content-Type", "text/plain")], chunks=[block] * 20),
    )
    out = await http_request.invoke({"url": url, "max_chars": 100}, ctx)
    assert "(truncated)" in out.split("\n")[0]  # 1.3MB fits under a 2MB cap


# --------------------------------------------------------------------------- approval


@pytest.mark.parametrize(
    ("method", "needed"),
    [
        (None, False),
        ("GET", False),
        ("get", False),
        ("HEAD", False),
        ("options", False),
        ("POST", True),
        ("put", True),
        ("PATCH", True),
        ("DELETE", True),
        ("PROPFIND", True),
    ],
)
def test_writes_need_approval(method: str | None, needed: bool, ctx: RunContext[Any]) -> None:
    args: dict[str, Any] = {"url": "http://x"}
    if method is not None:
        args["method"] = method
    assert writes_need_approval(args, ctx) is needed
    gated = dataclasses.replace(http_request, needs_approval=writes_need_approval)
    assert gated.requires_approval(args, ctx) is needed
    assert http_request.requires_approval(args, ctx) is False
