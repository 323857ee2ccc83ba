"""JSON-RPC hygiene, enforced where messages enter and leave the server.

pygls dispatches whatever it manages to build: a request without ``params`` or with params that
do not fit the method's type is dropped without a reply, invalid JSON is reported through
``window/showMessage``, and an unexpected exception travels to the client with its traceback.
``GuardedProtocol`` validates every incoming message itself and answers each request exactly
once, with a result or a typed error (-32700, -32600, -32601, -32602, -32603, ...). Exception
details go to the log only. Because this happens below the handlers, a new method cannot forget
it.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import logging
import re
import uuid
from collections import Counter
from collections.abc import Generator
from concurrent.futures import Future
from functools import partial
from typing import Any

import cattrs
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import MsgId
from pygls.protocol.language_server import _prepare_command_arguments

from lovia_server import protocol as p
from lovia_server.writer import FrameWriter, Lane

logger = logging.getLogger("lovia_server.jsonrpc")

PARSE_ERROR = p.ErrorCode.PARSE_ERROR
INVALID_REQUEST = p.ErrorCode.INVALID_REQUEST
METHOD_NOT_FOUND = p.ErrorCode.METHOD_NOT_FOUND
INVALID_PARAMS = p.INVALID_PARAMS
INTERNAL_ERROR = p.INTERNAL_ERROR
REQUEST_CANCELLED = p.ErrorCode.REQUEST_CANCELLED

INTERNAL_MESSAGE = "Internal error (details are in the server log)"

_TRACEBACK_MARK = "Traceback (most recent call last)"
_LOG_LIMIT = 200


def _is_id(value: Any) -> bool:
    """JSON-RPC ids we accept: strings and integers (``true`` is not an id)."""
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _short(value: Any) -> str:
    """A bounded repr for logs (a 1 MB payload must not become a 1 MB log line)."""
    text = repr(value)
    return text if len(text) <= _LOG_LIMIT else text[:_LOG_LIMIT] + "..."


def error_object(code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return error


def internal_error(exc: BaseException | None = None) -> dict[str, Any]:
    """-32603 with a generic message: the exception's text and traceback stay in the log."""
    return error_object(
        INTERNAL_ERROR, INTERNAL_MESSAGE, {"type": type(exc).__name__} if exc else None
    )


def _mentions_traceback(value: Any) -> bool:
    if isinstance(value, str):
        return _TRACEBACK_MARK in value
    if isinstance(value, dict):
        return "traceback" in value or any(_mentions_traceback(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_mentions_traceback(v) for v in value)
    return False


def error_for(exc: BaseException) -> dict[str, Any]:
    """Map a handler's exception to the error object sent to the client.

    Typed errors keep their code, message and ``data``; anything carrying a traceback, and any
    exception that is not a typed error, becomes a generic -32603.
    """
    if isinstance(exc, p.ProtocolError):
        return error_object(exc.code, exc.message, exc.data or None)
    if isinstance(exc, JsonRpcException):
        if _mentions_traceback(exc.message) or _mentions_traceback(exc.data):
            return internal_error(exc)
        return error_object(exc.code, exc.message, exc.data)
    return internal_error(exc)


_SNAKE = re.compile(r"_([a-z])")


def _json_name(attribute: str) -> str:
    """lsprotocol attribute name -> the JSON field name (``text_document`` -> ``textDocument``)."""
    return _SNAKE.sub(lambda m: m.group(1).upper(), attribute.rstrip("_"))


def invalid_params_from(exc: BaseException) -> p.ProtocolError:
    """A cattrs structuring failure as -32602 naming the first offending field."""
    field, reason = "params", "does not match the method's parameter type"
    if isinstance(exc, cattrs.ClassValidationError):
        try:
            first = cattrs.transform_error(exc)[0]
        except Exception:  # pragma: no cover - cattrs could not describe its own error
            first = ""
        described, _, path = first.rpartition(" @ ")
        if path.startswith("$.params"):
            parts = re.findall(r"\.([A-Za-z0-9_]+)|\[(\d+)\]", path[len("$.params") :])
            names = [_json_name(name) if name else index for name, index in parts]
            field = ".".join(names) or "params"
            reason = described or reason
    return p.invalid_params(f"Invalid params: {field}: {reason}", field)


class GuardedProtocol(LanguageServerProtocol):
    """A ``LanguageServerProtocol`` that validates every message and answers every request once."""

    def __init__(self, server: LanguageServer, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        # Client requests accepted and not answered yet (a Counter: a buggy client may reuse ids).
        self._awaiting: Counter[MsgId] = Counter()
        # Ids of our own requests to the client: only these may be answered by a response.
        self._outgoing: set[MsgId] = set()
        self._writes: set[asyncio.Future[None]] = set()  # pending writes of an async transport
        self.outgoing: FrameWriter | None = None  # the stdio transport (``set_outgoing``)
        self._shutdown_id: MsgId | None = None  # the shutdown request being handled
        self._exit_after_shutdown = False

    # ------------------------------------------------------------------ incoming

    def structure_message(self, data: dict[str, Any]) -> Any:
        """Keep the raw JSON: ``handle_message`` validates and structures it."""
        return data

    def handle_message(self, message: Any) -> None:
        """Route one parsed frame; never raises (a bad message must not end the reader)."""
        try:
            contextvars.copy_context().run(self._route, message)
        except Exception:
            logger.exception("jsonrpc.route_failed for %s", _short(message))

    def _route(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            kind = type(raw).__name__
            self._send_error(
                None, INVALID_REQUEST, f"Invalid request: expected an object, got {kind}"
            )
            return
        if "method" in raw:
            if "id" in raw:
                self._on_request(raw)
            else:
                self._on_notification(raw)
        elif "id" in raw and ("result" in raw or "error" in raw):
            self._on_response(raw)
        else:
            msg_id = raw.get("id") if _is_id(raw.get("id")) else None
            self._send_error(
                msg_id,
                INVALID_REQUEST,
                "Invalid request: not a JSON-RPC request, notification or response",
            )

    def _on_request(self, raw: dict[str, Any]) -> None:
        msg_id = raw["id"]
        if not _is_id(msg_id):
            self._send_error(
                None, INVALID_REQUEST, "Invalid request: id must be a string or an integer"
            )
            return
        self._awaiting[msg_id] += 1
        try:
            self._dispatch_request(msg_id, raw)
        except p.ProtocolError as exc:
            self._answer(msg_id, error=error_for(exc))
        except Exception as exc:
            logger.exception("request.dispatch_failed: %s", _short(raw.get("method")))
            self._answer(msg_id, error=internal_error(exc))

    def _dispatch_request(self, msg_id: MsgId, raw: dict[str, Any]) -> None:
        method = raw["method"]
        if raw.get("jsonrpc") != self.VERSION:
            raise p.ProtocolError(INVALID_REQUEST, 'Invalid request: jsonrpc must be "2.0"')
        if not isinstance(method, str):
            raise p.ProtocolError(INVALID_REQUEST, "Invalid request: method must be a string")
        if self._shutdown:
            raise p.ProtocolError(INVALID_REQUEST, "The server is shutting down")
        handler = self._handler_for(method)
        if handler is None:
            logger.info("request.unknown_method: %s", _short(method))
            raise p.ProtocolError(
                METHOD_NOT_FOUND, f"Method not found: {method[:100]}", {"method": method[:100]}
            )
        params = self._params_for(msg_id, method, raw)
        self._ctx_msg_id.set(msg_id)
        self._execute_handler(
            msg_id,
            handler,
            partial(self._send_handler_result, msg_id=msg_id),
            args=(params,),
        )

    def _handler_for(self, method: str) -> Any:
        return self.fm.builtin_features.get(method) or self.fm.features.get(method)

    def _params_for(self, msg_id: MsgId | None, method: str, raw: dict[str, Any]) -> Any:
        """The handler's argument: typed for LSP methods, the raw value for our own methods."""
        params = raw.get("params")
        if "params" in raw and params is not None and not isinstance(params, (dict, list)):
            raise p.invalid_params("Invalid params: params must be an object or an array", "params")
        message_type = self.get_message_type(method)
        if message_type is None:
            return params
        message: dict[str, Any] = {"jsonrpc": self.VERSION, "method": method}
        if msg_id is not None:
            message["id"] = msg_id
        if params is not None:
            message["params"] = params
        try:
            structured = self._converter.structure(message, message_type)
        except Exception as exc:
            raise invalid_params_from(exc) from None
        return getattr(structured, "params", None)

    def _on_notification(self, raw: dict[str, Any]) -> None:
        method = raw["method"]
        if raw.get("jsonrpc") != self.VERSION or not isinstance(method, str):
            logger.warning("notification.invalid ignored: %s", _short(raw))
            return
        if self._shutdown and method != lsp.EXIT:
            logger.warning("notification.after_shutdown ignored: %s", _short(method))
            return
        try:
            params = self._params_for(None, method, raw)
        except p.ProtocolError as exc:
            logger.warning("notification.bad_params ignored: %s: %s", _short(method), exc.message)
            return
        try:
            self._handle_notification(method, params)
        except Exception:
            logger.exception("notification.failed: %s", _short(method))

    def _handle_notification(self, method_name: str, params: Any) -> None:
        if method_name == lsp.CANCEL_REQUEST:
            self._handle_cancel_notification(params.id)
            return
        handler = self._handler_for(method_name)
        if handler is None:
            # "$/" notifications may be ignored by contract; others are logged.
            log = logger.debug if method_name.startswith("$/") else logger.info
            log("notification.unknown_method ignored: %s", _short(method_name))
            return
        key = f"notification/{uuid.uuid4()}"
        self._execute_handler(
            key, handler, partial(self._notification_done, key=key), args=(params,)
        )

    def _notification_done(self, future: Future[Any], *, key: str) -> None:
        self._request_futures.pop(key, None)
        if future.cancelled():
            return
        exc = future.exception()
        if exc is not None:
            logger.error("notification.failed", exc_info=exc)

    def _check_handler_result(self, future: Future[Any]) -> None:
        """pygls' notification callback, kept for its other callers: log, never tell the client."""
        if not future.cancelled() and (exc := future.exception()) is not None:
            logger.error("notification.failed", exc_info=exc)

    def _on_response(self, raw: dict[str, Any]) -> None:
        msg_id = raw["id"]
        if not _is_id(msg_id) or msg_id not in self._outgoing:
            logger.warning("response.stray ignored: id %s", _short(msg_id))
            return
        self._outgoing.discard(msg_id)
        result_type = self._result_types.pop(msg_id, None)
        if "error" in raw:
            try:
                error = self._converter.structure(raw["error"], lsp.ResponseError)
            except Exception:
                logger.warning("response.malformed_error for %s: %s", msg_id, _short(raw["error"]))
                error = lsp.ResponseError(code=INTERNAL_ERROR, message="malformed error response")
            self._handle_response(msg_id, None, error)
            return
        result = raw.get("result")
        if result_type is not None:
            try:
                message = {"jsonrpc": self.VERSION, "id": msg_id, "result": result}
                result = self._converter.structure(message, result_type).result
            except Exception:
                logger.warning("response.malformed_result for %s: %s", msg_id, _short(result))
                error = lsp.ResponseError(code=INVALID_PARAMS, message="malformed result")
                self._handle_response(msg_id, None, error)
                return
        self._handle_response(msg_id, result)

    @lsp_method(lsp.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: lsp.ExecuteCommandParams) -> Any:
        """pygls' executeCommand, with errors that name the field and carry no exception text."""
        handler = self.fm.commands.get(params.command)
        if handler is None:
            raise p.invalid_params(f"Unknown command: {params.command[:100]}", "command")
        try:
            args, kwargs = _prepare_command_arguments(handler, params, self._converter)
        except Exception:
            logger.warning("command.bad_arguments: %s", params.command[:100], exc_info=True)
            raise p.invalid_params(
                f"Invalid arguments for command {params.command[:100]}", "arguments"
            ) from None
        result = yield handler, args, kwargs
        return result

    @lsp_method(lsp.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Any:
        """pygls' shutdown over a copy of the futures: cancelling one runs a callback that
        removes it from ``_request_futures``."""
        current = self.msg_id
        self._shutdown_id = current
        if (user_handler := self.fm.features.get(lsp.SHUTDOWN)) is not None:
            yield user_handler, args, None
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    @lsp_method(lsp.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """An ``exit`` that arrives while ``shutdown`` is still being handled (a client that
        stopped waiting for the answer; VS Code waits 2 s) takes effect once that answer is
        sent: exiting now would cut the shutdown short (live runs not recorded as
        interrupted) and the request would never be answered."""
        if self._shutdown_id is not None and not self._shutdown:
            self._exit_after_shutdown = True
            return
        yield from super().lsp_exit(*args)

    # ------------------------------------------------------------------ outgoing

    def send_request(
        self,
        method: str,
        params: Any | None = None,
        callback: Any = None,
        msg_id: MsgId | None = None,
    ) -> Future[Any]:
        msg_id = msg_id if msg_id is not None else str(uuid.uuid4())
        self._outgoing.add(msg_id)
        future: Future[Any] = super().send_request(method, params, callback, msg_id)
        return future

    def _send_handler_result(self, future: Future[Any], *, msg_id: MsgId) -> None:
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            self._answer(msg_id, error=error_object(REQUEST_CANCELLED, "Request cancelled"))
            return
        exc = future.exception()
        if exc is None:
            self._answer(msg_id, result=future.result())
            return
        if not isinstance(exc, (JsonRpcException, p.ProtocolError)):
            logger.error("request.failed: %s", type(exc).__name__, exc_info=exc)
        self._answer(msg_id, error=error_for(exc))

    def _send_response(
        self, msg_id: MsgId, result: Any | None = None, error: Any | None = None
    ) -> None:
        """pygls' own answers go through the same single exit."""
        if error is not None and not isinstance(error, dict):
            error = error_for(JsonRpcException(error.message, error.code, error.data))
        self._answer(msg_id, result=result, error=error)

    def _answer(
        self, msg_id: MsgId, *, result: Any = None, error: dict[str, Any] | None = None
    ) -> None:
        """The single exit for answers to client requests: exactly one per accepted request."""
        if self._awaiting[msg_id] <= 0:
            logger.warning("response.duplicate suppressed for id %s", _short(msg_id))
            return
        self._awaiting[msg_id] -= 1
        if self._awaiting[msg_id] <= 0:
            del self._awaiting[msg_id]
        if error is not None:
            self._send_error(msg_id, error["code"], error["message"], error.get("data"))
        else:
            super()._send_response(msg_id, result=result)
        if self._exit_after_shutdown and msg_id == self._shutdown_id:
            self._exit_after_shutdown = False
            self._handle_notification(lsp.EXIT, None)  # the exit deferred by lsp_exit

    def _send_error(self, msg_id: MsgId | None, code: int, message: str, data: Any = None) -> None:
        self._send_data(
            {"jsonrpc": self.VERSION, "id": msg_id, "error": error_object(code, message, data)}
        )

    def _send_data(self, data: Any) -> None:
        """Serialize and write one message; what cannot be serialized is logged, not shown."""
        if self.writer is None:
            logger.error("send.no_transport")
            return
        try:
            body = json.dumps(data, default=self._serialize_message).encode(self.CHARSET)
        except Exception as exc:
            logger.exception("send.unserializable %s", type(data).__name__)
            msg_id = _response_id(data)
            if msg_id is not None:
                # The client still gets its one answer for this request.
                self._send_error(
                    msg_id, INTERNAL_ERROR, INTERNAL_MESSAGE, {"type": type(exc).__name__}
                )
            return
        self._write_frame(body, lane="answer" if _is_answer(data) else "normal")

    def set_outgoing(self, writer: FrameWriter) -> None:
        """Write through ``writer``: its lanes and cap apply to every frame."""
        self.outgoing = writer
        self.set_writer(writer)

    def notify_json(
        self,
        method: str,
        params: bytes,
        *,
        lane: Lane = "normal",
        droppable: bool = False,
        key: str | None = None,
    ) -> bool:
        """Send a notification whose params are already encoded JSON (UTF-8): the event path
        encodes each event once, for the store and the wire alike. False when the transport
        refused it (see ``FrameWriter.send`` for ``lane``, ``droppable`` and ``key``)."""
        if self.writer is None:
            logger.error("send.no_transport")
            return False
        head = b'{"jsonrpc":"2.0","method":' + json.dumps(method).encode() + b',"params":'
        return self._write_frame(head + params + b"}", lane=lane, droppable=droppable, key=key)

    def _write_frame(
        self,
        body: bytes,
        *,
        lane: Lane = "normal",
        droppable: bool = False,
        key: str | None = None,
    ) -> bool:
        """Frame one encoded message and hand it to the transport.

        On the ``FrameWriter``, the ``answer`` lane (responses, requests to the client) and then
        the ``essential`` one overtake queued notifications, and ``droppable`` lets it refuse
        the frame when the client is too far behind. Returns False when it was refused."""
        if self._include_headers:
            header = (
                f"Content-Length: {len(body)}\r\n"
                f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
            ).encode("ascii")
            payload = header + body
        else:
            payload = body
        if self.outgoing is not None:
            return self.outgoing.send(payload, lane=lane, droppable=droppable, key=key)
        writer = self.writer
        assert writer is not None
        try:
            written = writer.write(payload)
            if inspect.isawaitable(written):
                task = asyncio.ensure_future(written)
                self._writes.add(task)
                task.add_done_callback(self._writes.discard)
        except BrokenPipeError:
            logger.error("send.broken_pipe: the client is gone")
            raise
        except Exception:
            logger.exception("send.failed")
        return True

    # ------------------------------------------------------------------ transport errors

    def report_error(self, error: Exception, source: Any) -> None:
        """Errors pygls reports out of band: logged, never shown to the user.

        The reader reports with ``source=JsonRpcException`` when a frame could not be parsed
        (invalid JSON or UTF-8, nesting too deep): that gets a -32700 answer with id null.
        """
        if source is JsonRpcException:
            logger.warning("frame.unparsable: %s", _short(error))
            self._send_error(None, PARSE_ERROR, "Parse error: the message is not valid JSON")
            return
        logger.error("server.error (%s)", getattr(source, "__name__", source), exc_info=error)


def _is_answer(data: Any) -> bool:
    """Responses and requests to the client: everything but a notification (no ``id``)."""
    if isinstance(data, dict):
        return "method" not in data or "id" in data
    return not hasattr(data, "method") or getattr(data, "id", None) is not None


def _response_id(data: Any) -> MsgId | None:
    """The id of an outgoing response (an attrs message or a dict), else None."""
    if isinstance(data, dict):
        if "method" not in data and ("result" in data or "error" in data):
            return data.get("id")
        return None
    if hasattr(data, "result") and not hasattr(data, "method"):
        msg_id: MsgId | None = getattr(data, "id", None)
        return msg_id
    return None


class GuardedLanguageServer(LanguageServer):
    """Sends pygls' out-of-band error reports to ``GuardedProtocol`` instead of the user."""

    def report_server_error(self, error: Exception, source: Any) -> None:
        protocol = self.protocol
        if isinstance(protocol, GuardedProtocol):
            protocol.report_error(error, source)
        else:  # pragma: no cover - a server built with another protocol class
            logger.error("server.error", exc_info=error)


__all__ = [
    "GuardedLanguageServer",
    "GuardedProtocol",
    "error_for",
    "internal_error",
    "invalid_params_from",
]
