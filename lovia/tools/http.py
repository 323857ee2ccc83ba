"""The shared HTTP transport of the fetching tools, and the ``http_request`` tool.

``fetch_raw`` is the one place the built-in tools talk HTTP: it validates the scheme (on
every redirect hop too), follows redirects, applies the TLS settings of
:mod:`lovia.http_config`, streams the body and stops at a size cap, and bounds the whole
exchange by one deadline. What it does *not* do is filter destinations: private, loopback
and link-local addresses are reachable (see ``docs/builtin-tools.md``).
"""

from __future__ import annotations

import asyncio
import codecs
import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lovia._httpx import httpx
from lovia.exceptions import ToolError
from lovia.http_config import resolve_verify
from lovia.run_context import RunContext
from lovia.tools.base import Tool, clip_text, invalid_arguments
from lovia.tools.presentation import short

MAX_RESPONSE_BYTES = 1_000_000
"""Default download cap of the fetching tools (bytes of decoded body)."""

PROJECT_URL = "https://pypi.org/project/lovia/"
"""Where the default User-Agent points when the installed metadata names no project URL."""

_ALLOWED_SCHEMES = frozenset({"http", "https"})
_BINARY_PREFIXES = ("image/", "video/", "audio/", "font/")
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_HEADER_BLOCK_CHARS = 600
_META_CHARSET = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.I)
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


@dataclass
class RawResponse:
    """A fetched response: final URL, status, media type, headers and (capped) body."""

    url: str
    status_code: int
    media_type: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    charset: str | None = None
    size_capped: bool = False


# --------------------------------------------------------------------------- helpers


def validate_url(url: str) -> str:
    """Raise ``ToolError`` unless ``url`` is an http(s) URL with a host; return it."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise ToolError(f"Invalid URL {url!r}: {exc}.") from None
    scheme = parts.scheme.lower()
    if scheme not in _ALLOWED_SCHEMES:
        raise ToolError(
            f"Unsupported URL scheme: {scheme or '(none)'!r}.",
            hint="Only http:// and https:// URLs can be fetched; write the full URL, "
            "e.g. https://example.com/page.",
        )
    if not parts.hostname:
        raise ToolError(f"Invalid URL {url!r}: no host.", hint="e.g. https://example.com/page")
    return url


@functools.cache
def default_user_agent() -> str:
    """``Mozilla/5.0 (compatible; lovia/{version}; +{project URL})`` (computed once)."""
    from lovia._version import __version__

    return f"Mozilla/5.0 (compatible; lovia/{__version__}; +{_project_url()})"


def _project_url() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, metadata

        meta = metadata("lovia")
    except (ImportError, PackageNotFoundError):  # pragma: no cover - running from a tree
        return PROJECT_URL
    entries = [str(e).partition(",")[2] for e in meta.get_all("Project-URL") or []]
    entries += [str(e) for e in meta.get_all("Home-page") or []]
    for url in entries:
        if url.strip().startswith(("http://", "https://")):
            return url.strip()
    return PROJECT_URL


def _split_content_type(value: str) -> tuple[str, str | None]:
    media_type, *params = value.split(";")
    charset: str | None = None
    for param in params:
        key, _, val = param.partition("=")
        if key.strip().lower() == "charset":
            charset = val.strip().strip("\"'").strip() or None
    return media_type.strip().lower(), charset


def _try_decode(body: bytes, encoding: str | None) -> str | None:
    if not encoding:
        return None
    try:
        codecs.lookup(encoding)
        return body.decode(encoding, errors="replace")
    except Exception:  # unknown codec, or a non-text codec such as 'base64'
        return None


def decode_body(body: bytes, charset: str | None, *, sniff_meta: bool = False) -> str:
    """Decode with the declared charset, then a sniffed ``<meta>`` charset, then UTF-8."""
    text = _try_decode(body, charset)
    if text is not None:
        return text
    if sniff_meta:
        match = _META_CHARSET.search(body[:4096])
        if match:
            text = _try_decode(body, match.group(1).decode("ascii", "replace"))
            if text is not None:
                return text
    return body.decode("utf-8", errors="replace")


def looks_textual(body: bytes) -> bool:
    """No NUL byte in the first 1024 bytes."""
    return b"\x00" not in body[:1024]


def compact_json(text: str) -> str:
    """Re-serialise JSON without whitespace; invalid JSON is returned unchanged."""
    try:
        return json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
    except (ValueError, RecursionError):
        return text


def render_payload(raw: RawResponse) -> str:
    """The body as model-readable text: compact JSON, decoded text, or a binary notice."""
    media_type = raw.media_type
    if "json" in media_type:
        return compact_json(decode_body(raw.body, raw.charset))
    if media_type.startswith("text/") or media_type.endswith("+xml"):
        return decode_body(raw.body, raw.charset)
    declared_binary = (
        media_type.startswith(_BINARY_PREFIXES) or media_type == "application/octet-stream"
    )
    if not declared_binary and looks_textual(raw.body):
        return decode_body(raw.body, raw.charset)
    return f"(binary content not shown: {media_type or 'unknown type'}, {len(raw.body)} bytes)"


def format_megabytes(n: int) -> str:
    """``1_000_000`` → ``"1.0MB"``."""
    return f"{n / 1_000_000:.1f}MB"


# --------------------------------------------------------------------------- transport


async def _check_hop(request: httpx.Request) -> None:
    validate_url(str(request.url))


async def fetch_raw(
    url: str,
    *,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    json_body: Any = None,
    timeout: float = 30.0,  # noqa: ASYNC109 - the spec'd signature; bounds each op and the total
    max_bytes: int = MAX_RESPONSE_BYTES,
    user_agent: str | None = None,
) -> RawResponse:
    """One HTTP exchange (redirects followed), the body capped at ``max_bytes``.

    ``timeout`` bounds each network operation *and* the whole exchange. Transport errors
    propagate as httpx exceptions (``httpx.ReadTimeout`` when the overall deadline passes);
    a redirect to a non-http(s) URL raises ``ToolError``.
    """
    validate_url(url)
    send_headers = dict(headers or {})
    if not any(k.lower() == "user-agent" for k in send_headers):
        send_headers["User-Agent"] = user_agent or default_user_agent()
    try:
        async with asyncio.timeout(timeout):
            return await _exchange(url, method.upper(), send_headers, json_body, timeout, max_bytes)
    except TimeoutError:
        raise httpx.ReadTimeout(f"no complete response within {timeout:g}s") from None


async def _exchange(
    url: str,
    method: str,
    headers: dict[str, str],
    json_body: Any,
    op_timeout: float,
    max_bytes: int,
) -> RawResponse:
    async with (
        httpx.AsyncClient(
            verify=resolve_verify(),
            timeout=op_timeout,
            follow_redirects=True,
            event_hooks={"request": [_check_hop]},
        ) as client,
        client.stream(method, url, headers=headers, json=json_body) as response,
    ):
        chunks: list[bytes] = []
        received = 0
        capped = False
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            received += len(chunk)
            if received >= max_bytes:
                capped = True
                break
        body = b"".join(chunks)
        if capped:
            body = body[:max_bytes]
        media_type, charset = _split_content_type(response.headers.get("content-type", ""))
        return RawResponse(
            url=str(response.url),
            status_code=response.status_code,
            media_type=media_type,
            headers=dict(response.headers),
            body=body,
            charset=charset,
            size_capped=capped,
        )


def transport_error(exc: httpx.HTTPError, url: str) -> ToolError:
    """A model-readable ``ToolError`` for an httpx failure while fetching ``url``."""
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, httpx.TimeoutException):
        return ToolError(
            f"Request to {url} timed out: {detail}",
            hint="The server is slow or unreachable; retry later or raise the timeout.",
        )
    if isinstance(exc, httpx.TooManyRedirects):
        return ToolError(f"Request to {url} failed: too many redirects.")
    return ToolError(
        f"Request to {url} failed: {detail}",
        hint="Check the URL, the network or the proxy settings.",
    )


# --------------------------------------------------------------------------- http_request


def writes_need_approval(args: dict[str, Any], ctx: RunContext[Any]) -> bool:
    """Approval predicate: anything but GET/HEAD/OPTIONS needs approval."""
    return str(args.get("method", "GET")).upper() not in _SAFE_METHODS


class _RequestArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str
    method: str = "GET"
    headers: dict[str, str] | None = None
    body: Any = None
    timeout: float = Field(default=30.0, ge=1, le=120)
    max_chars: int = Field(default=20_000, ge=100, le=200_000)

    @field_validator("method")
    @classmethod
    def _token(cls, value: str) -> str:
        if not _TOKEN.match(value):
            raise ValueError("must be an HTTP method name such as GET or POST")
        return value.upper()


_REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "description": "Absolute http:// or https:// URL."},
        "method": {
            "type": "string",
            "default": "GET",
            "description": "HTTP method (GET, POST, PUT, PATCH, DELETE, HEAD, ...).",
        },
        "headers": {
            "type": ["object", "null"],
            "additionalProperties": {"type": "string"},
            "default": None,
            "description": "Request headers. A User-Agent given here replaces the default.",
        },
        "body": {
            "type": ["object", "array", "string", "number", "integer", "boolean", "null"],
            "default": None,
            "description": "JSON request body; sent (as application/json) whenever not null.",
        },
        "timeout": {
            "type": "number",
            "default": 30.0,
            "minimum": 1,
            "maximum": 120,
            "description": "Seconds allowed for the whole request.",
        },
        "max_chars": {
            "type": "integer",
            "default": 20_000,
            "minimum": 100,
            "maximum": 200_000,
            "description": "Longest response body text returned; the rest is cut.",
        },
    },
    "required": ["url"],
    "additionalProperties": False,
}

_REQUEST_DESCRIPTION = (
    "Make an HTTP request and return the status, the response headers and the body as text "
    "(JSON compacted, HTML verbatim, binary bodies summarised). Use it for APIs and raw "
    "resources; to read a web page as Markdown use read_page if available. Redirects are "
    "followed; 4xx/5xx responses are returned, not raised. Downloads stop at "
    f"{format_megabytes(MAX_RESPONSE_BYTES)}."
)


def _parse_request_args(args: dict[str, Any]) -> _RequestArgs:
    try:
        return _RequestArgs.model_validate(args)
    except ValidationError as exc:
        raise invalid_arguments("http_request", exc, strip_value_error=True) from None


def format_response(raw: RawResponse, requested_url: str, *, max_chars: int, cap: int) -> str:
    """The ``http_request`` output text for ``raw``."""
    body, truncated = clip_text(render_payload(raw), max_chars)
    status = f"HTTP {raw.status_code} · {raw.media_type or 'unknown'} · {len(body)} chars"
    if raw.size_capped:
        status += f" (download capped at {format_megabytes(cap)})"
    elif truncated:
        status += " (truncated)"
    lines = [status]
    if raw.url != requested_url and raw.url != _normalised(requested_url):
        lines.append(f"URL: {raw.url}")
    header_block = "\n".join(
        f"{name}: {value}" for name, value in raw.headers.items() if name.lower() != "set-cookie"
    )
    if header_block:
        lines += ["", clip_text(header_block, _HEADER_BLOCK_CHARS)[0]]
    if body:
        lines += ["", body]
    return "\n".join(lines)


def _normalised(url: str) -> str:
    try:
        return str(httpx.URL(url))
    except Exception:
        return url


async def _http_request(args: dict[str, Any], ctx: RunContext[Any]) -> str:
    parsed = _parse_request_args(args)
    validate_url(parsed.url)
    cap = MAX_RESPONSE_BYTES
    try:
        raw = await fetch_raw(
            parsed.url,
            method=parsed.method,
            headers=parsed.headers,
            json_body=parsed.body,
            timeout=parsed.timeout,
            max_bytes=cap,
        )
    except httpx.HTTPError as exc:
        raise transport_error(exc, parsed.url) from exc
    return format_response(raw, parsed.url, max_chars=parsed.max_chars, cap=cap)


http_request = Tool(
    name="http_request",
    description=_REQUEST_DESCRIPTION,
    parameters=_REQUEST_SCHEMA,
    invoke=_http_request,
    parallel=True,
    needs_approval=False,
    kind="fetch",
    title=lambda args: short(f"{str(args.get('method') or 'GET').upper()} {args.get('url', '')}"),
)
"""Make an HTTP request. No approval by default; opt in with
``dataclasses.replace(http_request, needs_approval=writes_need_approval)``."""


__all__ = [
    "MAX_RESPONSE_BYTES",
    "RawResponse",
    "compact_json",
    "decode_body",
    "default_user_agent",
    "fetch_raw",
    "format_megabytes",
    "format_response",
    "http_request",
    "looks_textual",
    "render_payload",
    "transport_error",
    "validate_url",
    "writes_need_approval",
]
