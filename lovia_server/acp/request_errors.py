"""The JSON-RPC errors the ACP agent answers requests with, in ACP's codes.

Each carries ``data`` with the field at fault and a hint, like the language server's
documented errors (which :func:`from_protocol_error` translates, keeping their details).
"""

from __future__ import annotations

from typing import Any

from acp import RequestError

from lovia_server import protocol as p


def session_not_found(session_id: str) -> RequestError:
    return RequestError(
        -32002,
        f"Unknown session {session_id}",
        {
            "field": "sessionId",
            "sessionId": session_id,
            "hint": "Start one with session/new, or list stored ones with session/list.",
        },
    )


def invalid_params(message: str, field_name: str, **extra: Any) -> RequestError:
    return RequestError(-32602, message, {"field": field_name, "message": message, **extra})


def from_protocol_error(exc: p.ProtocolError) -> RequestError:
    """The language server's documented errors in ACP's codes (``data`` keeps the details)."""
    data = {**exc.data, "loviaCode": int(exc.code)}
    if exc.code == p.MODEL_NOT_CONFIGURED:
        return RequestError(-32000, exc.message, data)  # ACP's "authentication required"
    if exc.code in (p.INVALID_PARAMS, p.PATH_OUTSIDE_WORKSPACE):
        return RequestError(-32602, exc.message, data)
    if exc.code == p.RUN_NOT_FOUND:
        return RequestError(-32002, exc.message, data)
    if exc.code == p.RUN_ALREADY_ACTIVE:
        return RequestError(-32600, exc.message, data)
    if exc.code in (p.WORKTREE_UNAVAILABLE, p.WORKTREE_NOT_FOUND, p.PROTECTED_PATHS_UNCONFIRMED):
        return RequestError(int(exc.code), exc.message, data)  # implementation-defined range
    return RequestError(-32603, exc.message, data)


__all__ = ["from_protocol_error", "invalid_params", "session_not_found"]
