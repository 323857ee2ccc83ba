"""Environment-driven HTTP settings shared by providers and HTTP tools."""

from __future__ import annotations

import logging
import os
import ssl
from typing import Any

logger = logging.getLogger("lovia.http")

DEFAULT_TIMEOUT = 300.0
_TRUTHY = {"1", "true", "yes", "on"}


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUTHY


def resolve_verify() -> ssl.SSLContext | bool:
    """TLS verification: off by LOVIA_HTTP_INSECURE, a CA bundle, the OS store, or certifi."""
    if _truthy("LOVIA_HTTP_INSECURE"):
        return False
    bundle = os.environ.get("LOVIA_HTTP_CA_BUNDLE", "").strip()
    if bundle:
        if not os.path.exists(bundle):
            raise FileNotFoundError(f"LOVIA_HTTP_CA_BUNDLE points to a missing file: {bundle}")
        return ssl.create_default_context(cafile=bundle)
    try:
        import truststore

        ctx: Any = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        return ctx  # type: ignore[no-any-return]
    except ImportError:
        pass
    try:
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    except ImportError:  # pragma: no cover - certifi ships with httpx
        return ssl.create_default_context()


def resolve_timeout(timeout: float | None) -> float:
    if timeout is not None:
        return timeout
    raw = os.environ.get("LOVIA_PROVIDER_TIMEOUT", "").strip()
    if raw:
        try:
            value = float(raw)
            if value > 0:
                return value
        except ValueError:
            pass
        logger.warning("http.bad_timeout: LOVIA_PROVIDER_TIMEOUT=%r ignored", raw)
    return DEFAULT_TIMEOUT


def resolve_trust_env(trust_env: bool | None) -> bool:
    if trust_env is not None:
        return trust_env
    return _truthy("LOVIA_PROVIDER_TRUST_ENV")


__all__ = ["DEFAULT_TIMEOUT", "resolve_timeout", "resolve_trust_env", "resolve_verify"]
