"""HTTP helpers shared by the provider adapters: hosts, base URLs, statuses, ``Retry-After``."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from lovia.exceptions import UserError


def is_retryable_status(code: int | None) -> bool:
    """408, 429 and every 5xx are worth retrying."""
    return code is not None and (code in (408, 429) or 500 <= code <= 599)


def host_matches(host: str | None, domains: Iterable[str]) -> bool:
    """``host`` equals one of ``domains`` or is a true subdomain of one."""
    if not host:
        return False
    host = host.lower().rstrip(".")
    return any(host == d or host.endswith("." + d) for d in domains)


def host_of(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def normalize_base_url(url: str, *, label: str, env_var: str, example: str) -> str:
    """``url`` without a trailing ``/``; a ``UserError`` naming ``env_var`` when it is unusable."""
    cleaned = url.strip().rstrip("/")
    try:
        parts = urlsplit(cleaned)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        parts, port_ok = None, False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise UserError(
            f"{label}: invalid base URL {url!r}",
            hint=f"Set {env_var} (or pass base_url=...) to a full http(s) URL, e.g. {example}",
        )
    return cleaned


def parse_retry_after(
    headers: Mapping[str, str] | None, *, now: float | None = None
) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            value = float(raw_ms) / 1000.0
        except ValueError:
            value = -1.0
        if value >= 0:
            return value
    raw = headers.get("retry-after")
    if not raw:
        return None
    raw = raw.strip()
    try:
        seconds = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if seconds == seconds else None  # NaN guard


def lower_keys(headers: Mapping[str, str] | None) -> dict[str, str]:
    return {k.lower(): v for k, v in (headers or {}).items()}


__all__ = [
    "host_matches",
    "host_of",
    "is_retryable_status",
    "lower_keys",
    "normalize_base_url",
    "parse_retry_after",
]
