"""Map SDK and transport failures to lovia errors with hints that say what to change."""

from __future__ import annotations

import html
import json
import re
import socket
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from lovia.exceptions import ContextOverflowError, LoviaError, ProviderError
from lovia.providers._http import host_of, is_retryable_status, parse_retry_after
from lovia.providers._windows import window_from_error

SUMMARY_LIMIT = 300
"""Most characters of a server's error text that go into an error message."""

CONNECT_TIMEOUT = 10.0
"""Seconds to wait for a connection (the provider timeout, if that is shorter)."""

_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_HEADING = re.compile(r"<h1[^>]*>(.*?)</h1\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")
_MODEL_WORDS = ("model", "deployment", "engine")


@dataclass(frozen=True)
class Endpoint:
    """Who we talk to, for error messages and hints."""

    vendor: str
    label: str
    model: str
    base_url: str
    api_key_env: str
    base_url_env: str
    timeout: float
    is_context_overflow: Callable[[int, str], bool]
    sdk_errors: tuple[type[BaseException], type[BaseException], type[BaseException]]
    """The SDK's ``(APIStatusError, APITimeoutError, APIConnectionError)``."""
    has_api_key: bool = True
    """Whether a key was configured (a 401 then means a wrong key, else a missing one)."""


def one_line(text: str, limit: int = SUMMARY_LIMIT) -> str:
    """``text`` with every run of whitespace (newlines included) collapsed, clipped to ``limit``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _json_message(payload: object) -> str | None:
    """The human part of a JSON error body: ``error.message``, ``message`` or ``detail``."""
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, dict):
        for key in ("message", "type", "code"):
            value = error.get(key)
            if isinstance(value, str) and value.strip():
                return value
    if isinstance(error, str) and error.strip():
        return error
    for key in ("message", "detail", "error_description", "title"):
        value = payload.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def summarize_body(body: str) -> str:
    """One line for an error response body, never the whole page.

    JSON errors give their ``error.message``; an HTML page gives its ``<title>`` (else its
    first ``<h1>``); any other text gives its first non-empty line.
    """
    text = body.strip()
    if not text:
        return ""
    if text[0] in "{[":
        try:
            message = _json_message(json.loads(text))
        except ValueError:
            message = None
        if message is not None:
            return one_line(message)
    head = text[:4096].lower()
    if head.startswith(("<!doctype", "<html", "<?xml", "<head", "<body")) or "<html" in head:
        for pattern in (_TITLE, _HEADING):
            found = pattern.search(text)
            if found:
                title = one_line(html.unescape(_TAG.sub(" ", found.group(1))))
                if title:
                    return title
        return "(an HTML page without a title)"
    first = next(line for line in text.splitlines() if line.strip())
    return one_line(first)


def _status_summary(status: int, body: str) -> str:
    """``summarize_body`` or, for an empty body, the standard reason phrase."""
    summary = summarize_body(body)
    # an HTML title usually repeats the status: "503 Service Unavailable"
    prefix = f"{status} "
    if summary.startswith(prefix) and len(summary) > len(prefix):
        summary = summary[len(prefix) :].lstrip(" -:")
    if summary:
        return summary
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "(empty body)"


def is_transient_status(status: int | None) -> bool:
    """Statuses worth another attempt: :func:`is_retryable_status` plus 409.

    409 (a lock or a request conflicting with one in flight) says nothing about the request
    itself being wrong; the vendors' own SDKs retry it too. ``is_retryable_status`` keeps its
    documented set.
    """
    return status == 409 or is_retryable_status(status)


def _model_hint(ep: Endpoint) -> str:
    return (
        f"set LOVIA_MODEL (or the lovia.model editor setting) to a model this server has, "
        f"e.g. {ep.vendor}:<model name>"
    )


def _status_hint(ep: Endpoint, status: int, summary: str) -> str | None:
    if status in (401, 403):
        if not ep.has_api_key:
            return (
                f"The server at {ep.base_url} wants an API key and none is set: set "
                f"{ep.api_key_env} (or pass api_key=...)."
            )
        verb = "rejected" if status == 401 else "refused access with"
        return (
            f"The server at {ep.base_url} {verb} the credentials: check {ep.api_key_env} "
            "(or pass api_key=...)."
        )
    if status == 404:
        if any(word in summary.lower() for word in _MODEL_WORDS):
            return (
                f"The server at {ep.base_url} does not know model '{ep.model}': {_model_hint(ep)}."
            )
        suffix = (
            " (OpenAI-compatible servers usually want the URL ending in /v1)"
            if ep.vendor == "openai"
            else ""
        )
        return (
            f"Nothing answered for model '{ep.model}' at {ep.base_url}: check "
            f"{ep.base_url_env}{suffix}, or {_model_hint(ep)}."
        )
    if status == 429:
        return "Rate limited: lovia retries per RetryPolicy and honours Retry-After."
    if status == 501:
        return (
            f"The server at {ep.base_url} does not implement this request: check that "
            f"{ep.base_url_env} (or base_url=...) points at an API that speaks the "
            f"{ep.label} protocol."
        )
    if is_transient_status(status):
        return f"The model server at {ep.base_url} is failing or overloaded; try again later."
    return None


def status_error(
    ep: Endpoint, status: int, body: str, headers: Mapping[str, str] | None = None
) -> LoviaError:
    """The error for an HTTP error response (or an in-stream error with a status).

    The message is one line (the status and a summary of the body); the full body stays
    available as ``body``.
    """
    summary = _status_summary(status, body)
    if ep.is_context_overflow(status, body.lower()):
        return ContextOverflowError(
            f"{ep.label}: prompt exceeds the model's context window: {summary}",
            reported_window=window_from_error(body),
            hint="Shorten the conversation or use a context policy such as Compaction.",
        )
    return ProviderError(
        f"{ep.label} stream returned HTTP {status}: {summary}",
        hint=_status_hint(ep, status, summary),
        vendor=ep.vendor,
        model=ep.model,
        status_code=status,
        retryable=is_transient_status(status),
        retry_after=parse_retry_after(headers),
        body=body,
    )


_TRANSIENT_WORDS = ("overloaded", "rate", "timeout", "temporar", "server", "unavailable")


def stream_error(ep: Endpoint, error: object) -> LoviaError:
    """The error for an error object sent inside an event stream (after a 200 status)."""
    if isinstance(error, dict):
        message = str(error.get("message") or error)
        kind = str(error.get("type") or "")
        code = error.get("code")
    else:
        message, kind, code = str(error), "", None
    status = code if isinstance(code, int) and not isinstance(code, bool) else None
    if ep.is_context_overflow(400, (message + " " + kind).lower()):
        # the whole error object as the body: its type or code may be what says "overflow"
        body = json.dumps(error, ensure_ascii=False, default=str) if kind else message
        return status_error(ep, 400, body)
    words = (kind + " " + message).lower()
    return ProviderError(
        f"{ep.label} stream error: {one_line(message)}",
        vendor=ep.vendor,
        model=ep.model,
        status_code=status,
        retryable=any(w in words for w in _TRANSIENT_WORDS) or is_transient_status(status),
        body=json.dumps(error, ensure_ascii=False, default=str),
    )


def _causes(exc: BaseException) -> list[BaseException]:
    """``exc`` and what it was raised from, outermost first (cycle-safe)."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < 16 and all(c is not current for c in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _connect_failure(ep: Endpoint, exc: BaseException) -> ProviderError | None:
    """A configuration error behind a failed connection (no retry can fix it), else None."""
    host = host_of(ep.base_url) or ep.base_url
    for cause in _causes(exc):
        if isinstance(cause, socket.gaierror):
            return ProviderError(
                f"{ep.label}: cannot resolve host '{host}' of {ep.base_url}",
                hint=f"Check the host name in {ep.base_url_env} (or base_url=...) and the "
                "network connection.",
                vendor=ep.vendor,
                model=ep.model,
                retryable=False,
            )
        if isinstance(cause, ConnectionRefusedError):
            return ProviderError(
                f"{ep.label}: connection refused by {ep.base_url} (nothing is listening there)",
                hint=f"Start the model server, or point {ep.base_url_env} (or base_url=...) at "
                "the address where it listens.",
                vendor=ep.vendor,
                model=ep.model,
                retryable=False,
            )
        if isinstance(cause, ssl.SSLCertVerificationError):
            return ProviderError(
                f"{ep.label}: the TLS certificate of {host} could not be verified: "
                f"{one_line(cause.verify_message or str(cause))}",
                hint="Set LOVIA_HTTP_CA_BUNDLE to the CA bundle that signed it (or "
                f"LOVIA_HTTP_INSECURE=1 for a trusted local server), or check {ep.base_url_env}.",
                vendor=ep.vendor,
                model=ep.model,
                retryable=False,
            )
    return None


def transport_error(ep: Endpoint, exc: BaseException, *, streaming: bool) -> ProviderError:
    """A network failure before the response (``streaming=False``) or while reading it.

    Refused connections, unknown hosts and untrusted certificates are final (the settings
    are wrong); timeouts, resets and cut streams are worth another attempt.
    """
    import httpx2

    if isinstance(exc, httpx2.ConnectTimeout) and not streaming:
        return ProviderError(
            f"{ep.label}: could not connect to {ep.base_url} within "
            f"{min(CONNECT_TIMEOUT, ep.timeout):g}s",
            hint=f"Is the server reachable? Check {ep.base_url_env} (or base_url=...).",
            vendor=ep.vendor,
            model=ep.model,
            retryable=True,
        )
    if isinstance(exc, (httpx2.TimeoutException, TimeoutError)):
        what = "stream stalled" if streaming else "request timed out"
        return ProviderError(
            f"{ep.label} {what}: no data within {ep.timeout:g}s",
            hint="Raise the timeout with timeout=... or LOVIA_PROVIDER_TIMEOUT if the model is "
            "just slow.",
            vendor=ep.vendor,
            model=ep.model,
            retryable=True,
        )
    if isinstance(exc, (httpx2.UnsupportedProtocol, httpx2.LocalProtocolError, httpx2.InvalidURL)):
        return ProviderError(
            f"{ep.label}: cannot send a request to {ep.base_url}: {one_line(str(exc))}",
            hint=f"Check {ep.base_url_env} (or base_url=...): it must be a full http(s) URL.",
            vendor=ep.vendor,
            model=ep.model,
            retryable=False,
        )
    if streaming:
        return ProviderError(
            f"{ep.label} stream broke off: {type(exc).__name__}: {one_line(str(exc))}",
            vendor=ep.vendor,
            model=ep.model,
            retryable=True,
        )
    final = _connect_failure(ep, exc)
    if final is not None:
        return final
    return ProviderError(
        f"{ep.label}: could not connect to {ep.base_url}: {type(exc).__name__}: "
        f"{one_line(str(exc))}",
        hint=f"Is the server running? Check {ep.base_url_env} (or base_url=...).",
        vendor=ep.vendor,
        model=ep.model,
        retryable=True,
    )


def _body_text(response: Any) -> str:
    try:
        text = response.text
        return text if isinstance(text, str) else ""
    except Exception:
        return ""


def sdk_error(ep: Endpoint, exc: BaseException) -> BaseException:
    """The lovia error for an exception the SDK raised opening a request (``exc`` if unknown)."""
    import httpx2

    status_cls, timeout_cls, connection_cls = ep.sdk_errors
    if isinstance(exc, status_cls):
        response: Any = getattr(exc, "response", None)
        status = getattr(exc, "status_code", None) or getattr(response, "status_code", 0)
        headers = getattr(response, "headers", None)
        return status_error(ep, int(status or 0), _body_text(response), headers)
    if isinstance(exc, timeout_cls):
        cause = exc.__cause__
        if not isinstance(cause, httpx2.TimeoutException):
            cause = httpx2.TimeoutException(str(exc))
        return transport_error(ep, cause, streaming=False)
    if isinstance(exc, connection_cls):
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        return transport_error(ep, cause, streaming=False)
    if isinstance(exc, (httpx2.HTTPError, ssl.SSLError)):
        return transport_error(ep, exc, streaming=False)
    return exc


__all__ = [
    "SUMMARY_LIMIT",
    "Endpoint",
    "is_transient_status",
    "one_line",
    "sdk_error",
    "status_error",
    "stream_error",
    "summarize_body",
    "transport_error",
]
