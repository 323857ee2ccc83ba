"""The optional ``mcp`` SDK: imported on first use, and how its errors read."""

from __future__ import annotations

import asyncio
from typing import Any

from lovia.exceptions import UserError

_INSTALL_HINT = (
    "Install the MCP SDK into lovia's environment: pip install 'mcp>=2.3,<3' (or, in a lovia "
    "clone, pip install -e '.[mcp]')"
)

# --------------------------------------------------------------------------- SDK access


def _import_error(exc: ImportError) -> UserError:
    return UserError(
        f"MCP support needs the optional 'mcp' package ({exc}).",
        hint=_INSTALL_HINT,
    )


def _sdk_session() -> tuple[Any, Any]:
    """``(ClientSession, Implementation)`` from the SDK, imported on first use."""
    try:
        from mcp.client.session import ClientSession
        from mcp.types import Implementation
    except ImportError as exc:
        raise _import_error(exc) from exc
    return ClientSession, Implementation


# --------------------------------------------------------------------------- errors


def _is_transport_error(exc: BaseException) -> bool:
    """A dead or closed transport: worth one reconnect. Never cancellation or timeouts."""
    if isinstance(exc, (asyncio.CancelledError, TimeoutError)):
        return False
    if isinstance(exc, (ConnectionError, BrokenPipeError, EOFError)):
        return True
    try:
        import anyio
    except ImportError:  # pragma: no cover - anyio ships with the SDK
        return False
    if isinstance(exc, (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream)):
        return True
    # The SDK answers requests on a transport that went away with JSON-RPC -32000.
    code = getattr(exc, "code", None)
    return type(exc).__module__.startswith("mcp.") and code == -32000


def _is_sdk_error(exc: BaseException) -> bool:
    return type(exc).__module__.startswith(("mcp.", "httpx", "anyio")) or _is_transport_error(exc)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        if len(inner) == 1:
            return _describe(inner[0])
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
