"""JSON-RPC 2.0 envelopes, judged the same way by both front doors (LSP and ACP).

What a usable id is, which decoded frames are requests, notifications or responses, the error
objects a bad frame is answered with, and how an exception becomes an error object without its
text or traceback reaching the client. Protocol-neutral: no pygls, no ACP SDK, no pydantic, so
either front door imports it before it answers anything.

The rules (JSON-RPC 2.0, with LSP's id type for both doors):

- an id is a string or an integer; ``true``, ``1.5``, ``null``, objects and arrays are not;
- a request with an unusable id is answered -32600 with ``id: null``; one with a usable id but
  a bad ``jsonrpc`` or ``method`` is answered -32600 with its id;
- ``params`` that are neither an object nor an array (``null`` counts as absent) get -32602
  naming the field ``params`` (``params_error``): the LSP door asks once it knows the method
  (an unknown one is -32601 whatever its params), the ACP door, whose SDK router looks methods
  up and validates in one step, asks before routing;
- a malformed notification or response is never answered (nobody waits for it): it is logged
  and dropped;
- anything else (not an object, no method and no result or error) is -32600, with the frame's
  id if it has a usable one, else ``null``.
"""

from __future__ import annotations

import enum
from typing import Any

from lovia_server.protocol.errors import ErrorCode

MsgId = str | int

PARSE_ERROR = int(ErrorCode.PARSE_ERROR)
INVALID_REQUEST = int(ErrorCode.INVALID_REQUEST)
METHOD_NOT_FOUND = int(ErrorCode.METHOD_NOT_FOUND)
INVALID_PARAMS = int(ErrorCode.INVALID_PARAMS)
INTERNAL_ERROR = int(ErrorCode.INTERNAL_ERROR)

VERSION = "2.0"
INTERNAL_MESSAGE = "Internal error (details are in the server log)"
PARSE_MESSAGE = "Parse error: the message is not valid JSON"

_TRACEBACK_MARK = "Traceback (most recent call last)"
_LOG_LIMIT = 200


def is_id(value: Any) -> bool:
    """A JSON-RPC id we accept and can answer: a string or an integer (``true`` is not one)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


class Kind(enum.Enum):
    REQUEST = "request"
    NOTIFICATION = "notification"
    RESPONSE = "response"


class Envelope:
    """A frame that passed the envelope checks (its params are judged by ``params_error`` and
    then by each method). A plain class: a dataclass would cost start-up a compile."""

    __slots__ = ("kind", "raw")

    def __init__(self, kind: Kind, raw: dict[str, Any]) -> None:
        self.kind = kind
        self.raw = raw

    @property
    def id(self) -> MsgId:
        """The request's or response's id (a notification has none: do not ask)."""
        msg_id: MsgId = self.raw["id"]
        return msg_id

    @property
    def method(self) -> str:
        method: str = self.raw["method"]
        return method

    @property
    def params(self) -> Any:
        """The params, ``None`` when absent or ``null``."""
        return self.raw.get("params")


class Rejection:
    """Why a decoded frame is not a usable message, and whether (and with what) to answer:
    ``answer`` is False for malformed notifications and responses (nobody waits for one)."""

    __slots__ = ("answer", "answer_id", "error", "kind")

    def __init__(
        self,
        error: dict[str, Any],
        answer: bool,
        answer_id: MsgId | None = None,
        kind: Kind | None = None,
    ) -> None:
        self.error = error
        self.answer = answer
        self.answer_id = answer_id
        self.kind = kind

    @property
    def reason(self) -> str:
        message: str = self.error["message"]
        return message


def error_object(code: int, message: str, data: Any = None) -> dict[str, Any]:
    """The ``error`` member of a response: ``data`` only when there is some."""
    error: dict[str, Any] = {"code": int(code), "message": message}
    if data is not None:
        error["data"] = data
    return error


def error_response(msg_id: MsgId | None, error: dict[str, Any]) -> dict[str, Any]:
    """A whole error response frame (``id: null`` when the request's id was unreadable)."""
    return {"jsonrpc": VERSION, "id": msg_id, "error": error}


def parse_error() -> dict[str, Any]:
    """-32700 for a frame that is not JSON; the decoder's complaint stays in the log."""
    return error_object(PARSE_ERROR, PARSE_MESSAGE)


def invalid_request(reason: str) -> dict[str, Any]:
    return error_object(INVALID_REQUEST, f"Invalid request: {reason}")


def method_not_found(method: str) -> dict[str, Any]:
    return error_object(
        METHOD_NOT_FOUND, f"Method not found: {method[:100]}", {"method": method[:100]}
    )


def invalid_params(reason: str, field: str) -> dict[str, Any]:
    """-32602 whose ``data.field`` names the offending field (``params`` for the whole)."""
    return error_object(INVALID_PARAMS, f"Invalid params: {reason}", {"field": field})


def internal_error(exc: BaseException | None = None) -> dict[str, Any]:
    """-32603 with a generic message: the exception's text and traceback stay in the log."""
    return error_object(
        INTERNAL_ERROR, INTERNAL_MESSAGE, {"type": type(exc).__name__} if exc else None
    )


def mentions_traceback(value: Any) -> bool:
    """Whether an error's message or data carries a traceback (pygls puts one in ``data``)."""
    if isinstance(value, str):
        return _TRACEBACK_MARK in value
    if isinstance(value, dict):
        return "traceback" in value or any(mentions_traceback(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(mentions_traceback(v) for v in value)
    return False


def safe_error(
    code: int, message: str, data: Any = None, exc: BaseException | None = None
) -> dict[str, Any]:
    """A typed error as sent to the client, unless it carries a traceback: then the generic
    -32603 (naming ``exc``'s type, when given)."""
    if mentions_traceback(message) or mentions_traceback(data):
        return internal_error(exc)
    return error_object(code, message, data)


def short(value: Any) -> str:
    """A bounded repr for logs (a 1 MB payload must not become a 1 MB log line)."""
    text = repr(value)
    return text if len(text) <= _LOG_LIMIT else text[:_LOG_LIMIT] + "..."


def classify(message: Any) -> Envelope | Rejection:
    """Judge one decoded frame: an ``Envelope`` to dispatch, or a ``Rejection`` to answer or
    drop (see the module docstring for the rules)."""
    if not isinstance(message, dict):
        kind = type(message).__name__
        return Rejection(invalid_request(f"expected an object, got {kind}"), answer=True)
    if "method" in message:
        if "id" in message:
            return _request(message)
        return _notification(message)
    if "id" in message and ("result" in message or "error" in message):
        return _response(message)
    msg_id = message.get("id")
    return Rejection(
        invalid_request("not a JSON-RPC request, notification or response"),
        answer=True,
        answer_id=msg_id if is_id(msg_id) else None,
    )


def _request(message: dict[str, Any]) -> Envelope | Rejection:
    msg_id = message["id"]
    if not is_id(msg_id):
        reason = "id must be a string or an integer"
        return Rejection(invalid_request(reason), answer=True, kind=Kind.REQUEST)
    problem = _envelope_problem(message)
    if problem is not None:
        return Rejection(invalid_request(problem), True, msg_id, Kind.REQUEST)
    return Envelope(Kind.REQUEST, message)


def _notification(message: dict[str, Any]) -> Envelope | Rejection:
    problem = _envelope_problem(message)
    if problem is not None:
        return Rejection(invalid_request(problem), answer=False, kind=Kind.NOTIFICATION)
    return Envelope(Kind.NOTIFICATION, message)


def _response(message: dict[str, Any]) -> Envelope | Rejection:
    if not is_id(message["id"]):
        reason = "a response's id must be a string or an integer"
        return Rejection(invalid_request(reason), answer=False, kind=Kind.RESPONSE)
    if message.get("jsonrpc") != VERSION:
        return Rejection(invalid_request('jsonrpc must be "2.0"'), False, kind=Kind.RESPONSE)
    return Envelope(Kind.RESPONSE, message)


def _envelope_problem(message: dict[str, Any]) -> str | None:
    if message.get("jsonrpc") != VERSION:
        return 'jsonrpc must be "2.0"'
    if not isinstance(message["method"], str):
        return "method must be a string"
    return None


def params_error(envelope: Envelope) -> dict[str, Any] | None:
    """-32602 (field ``params``) when the params are neither an object nor an array."""
    params = envelope.params
    if params is None or isinstance(params, (dict, list)):
        return None
    return invalid_params("params must be an object or an array", "params")


__all__ = [
    "INTERNAL_ERROR",
    "INTERNAL_MESSAGE",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Envelope",
    "Kind",
    "MsgId",
    "Rejection",
    "classify",
    "error_object",
    "error_response",
    "internal_error",
    "invalid_params",
    "invalid_request",
    "is_id",
    "mentions_traceback",
    "method_not_found",
    "params_error",
    "parse_error",
    "safe_error",
    "short",
]
