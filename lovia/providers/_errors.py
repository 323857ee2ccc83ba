"""Map SDK and transport failures to lovia errors with hints that say what to change."""

from __future__ import annotations

import json
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lovia.exceptions import ContextOverflowError, LoviaError, ProviderError
from lovia.providers._http import is_retryable_status, parse_retry_after
from lovia.providers._windows import window_from_error

_BODY_IN_MESSAGE = 2000


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


def _clip(body: str) -> str:
    body = body.strip()
    return body if len(body) <= _BODY_IN_MESSAGE else body[:_BODY_IN_MESSAGE] + "…"


def _status_hint(ep: Endpoint, status: int) -> str | None:
    if status in (401, 403):
        return (
            f"The server at {ep.base_url} rejected the credentials: check {ep.api_key_env} "
            "(or pass api_key=...)."
        )
    if status == 404:
        return (
            f"Nothing answered for model '{ep.model}' at {ep.base_url}: check {ep.base_url_env} "
            "(OpenAI-compatible servers usually want the URL ending in /v1) and the model name."
        )
    if status == 429:
        return "Rate limited: lovia retries per RetryPolicy and honours Retry-After."
    return None


def status_error(
    ep: Endpoint, status: int, body: str, headers: Mapping[str, str] | None = None
) -> LoviaError:
    """The error for an HTTP error response (or an in-stream error with a status)."""
    if ep.is_context_overflow(status, body.lower()):
        return ContextOverflowError(
            f"{ep.label}: prompt exceeds the model's context window: {_clip(body)}",
            reported_window=window_from_error(body),
            hint="Shorten the conversation or use a context policy such as Compaction.",
        )
    return ProviderError(
        f"{ep.label} stream returned HTTP {status}: {_clip(body)}",
        hint=_status_hint(ep, status),
        vendor=ep.vendor,
        model=ep.model,
        status_code=status,
        retryable=is_retryable_status(status),
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
        return status_error(ep, 400, message)
    words = (kind + " " + message).lower()
    return ProviderError(
        f"{ep.label} stream error: {message}",
        vendor=ep.vendor,
        model=ep.model,
        status_code=status,
        retryable=any(w in words for w in _TRANSIENT_WORDS) or is_retryable_status(status),
        body=json.dumps(error, ensure_ascii=False, default=str),
    )


def transport_error(ep: Endpoint, exc: BaseException, *, streaming: bool) -> ProviderError:
    """A network failure before the response (``streaming=False``) or while reading it."""
    import httpx2

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
            f"{ep.label}: cannot send a request to {ep.base_url}: {exc}",
            hint=f"Check {ep.base_url_env} (or base_url=...): it must be a full http(s) URL.",
            vendor=ep.vendor,
            model=ep.model,
            retryable=False,
        )
    if streaming:
        return ProviderError(
            f"{ep.label} stream broke off: {type(exc).__name__}: {exc}",
            vendor=ep.vendor,
            model=ep.model,
            retryable=True,
        )
    return ProviderError(
        f"{ep.label}: could not connect to {ep.base_url}: {type(exc).__name__}: {exc}",
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
        return transport_error(ep, httpx2.TimeoutException(str(exc)), streaming=False)
    if isinstance(exc, connection_cls):
        cause = exc.__cause__ if exc.__cause__ is not None else exc
        return transport_error(ep, cause, streaming=False)
    if isinstance(exc, (httpx2.HTTPError, ssl.SSLError)):
        return transport_error(ep, exc, streaming=False)
    return exc


__all__ = ["Endpoint", "sdk_error", "status_error", "stream_error", "transport_error"]
