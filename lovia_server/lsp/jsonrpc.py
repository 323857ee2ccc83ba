"""The language server's JSON-RPC guard: every request answered once, no traceback leaks.

pygls dispatches whatever it manages to build: a request without ``params`` or with params that
do not fit the method's type is dropped without a reply, invalid JSON is reported through
``window/showMessage``, and an unexpected exception travels to the client with its traceback.
``GuardedProtocol`` judges every incoming frame with the envelope rules both front doors share
(``jsonrpc_envelope``), answers what is malformed itself, and hands the rest to pygls' own
``handle_message``. Answers leave through one exit that sends each accepted request exactly one
answer, a result or a typed error (-32700, -32600, -32601, -32602, -32603, ...); exception
details go to the log only. Because this happens below the handlers, a new method cannot forget
it.

Only documented pygls extension points are subclassed (``structure_message``,
``handle_message``, ``send_request``, the ``@lsp_method`` builtins, ``report_server_error``),
except for the few private members listed under "pygls seams" in docs/architecture.md, each
with the reason pygls offers no hook for it; ``tests/server/test_pygls_seams.py`` fails when
pygls changes one of them.
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
from typing import Any

import cattrs
from lsprotocol import types as lsp
from pygls.exceptions import (
    FeatureNotificationError,
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInvalidParams,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage

from lovia_server import protocol as p
from lovia_server.transport.frame_writer import FrameWriter, Lane
from lovia_server.transport.jsonrpc_envelope import (
    INTERNAL_ERROR,
    INTERNAL_MESSAGE,
    INVALID_PARAMS,
    Envelope,
    Kind,
    MsgId,
    Rejection,
    classify,
    error_object,
    internal_error,
    method_not_found,
    params_error,
    parse_error,
    safe_error,
    short,
)

logger = logging.getLogger("lovia_server.lsp.jsonrpc")

REQUEST_CANCELLED = int(p.ErrorCode.REQUEST_CANCELLED)


def error_for(exc: BaseException) -> dict[str, Any]:
    """Map a handler's exception to the error object sent to the client.

    Typed errors keep their code, message and ``data``; anything carrying a traceback, and any
    exception that is not a typed error, becomes a generic -32603.
    """
    if isinstance(exc, p.ProtocolError):
        return error_object(exc.code, exc.message, exc.data or None)
    if isinstance(exc, JsonRpcException):
        return safe_error(exc.code, exc.message, exc.data, exc)
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

    RAW_PARAMS: frozenset[str] = frozenset()
    """LSP methods whose handlers take the params as JSON (as our own methods' do)."""

    def __init__(self, server: LanguageServer, converter: cattrs.Converter) -> None:
        super().__init__(server, converter)
        self.converter = converter
        # Client requests accepted and not answered yet (a Counter: a buggy client may reuse ids).
        self._awaiting: Counter[MsgId] = Counter()
        # Our own requests to the client (None while being sent): only these may be answered.
        self._outgoing: dict[MsgId, Future[Any] | None] = {}
        self._writes: set[asyncio.Future[None]] = set()  # pending writes of an async transport
        self.outgoing: FrameWriter | None = None  # the stdio transport (``set_outgoing``)
        self._shutdown_id: MsgId | None = None  # the shutdown request being handled
        self._exit_after_shutdown = False

    # ------------------------------------------------------------------ incoming

    def structure_message(self, data: dict[str, Any]) -> Any:
        """Keep the raw JSON (pygls' reader calls this for every object it decodes):
        ``handle_message`` judges the envelope first, then structures what pygls will get."""
        return data

    def handle_message(self, message: Any) -> None:
        """Route one decoded frame; never raises (a bad message must not end the reader)."""
        try:
            contextvars.copy_context().run(self._route, message)
        except Exception:
            logger.exception("jsonrpc.route_failed for %s", short(message))

    def _route(self, raw: Any) -> None:
        self._forget_finished()
        verdict = classify(raw)
        if isinstance(verdict, Rejection):
            if verdict.answer:
                error = verdict.error
                self._send_error(
                    verdict.answer_id, error["code"], error["message"], error.get("data")
                )
            else:
                kind = verdict.kind.value if verdict.kind else "message"
                logger.warning("%s.invalid ignored: %s: %s", kind, verdict.reason, short(raw))
        elif verdict.kind is Kind.REQUEST:
            self._on_request(verdict)
        elif verdict.kind is Kind.NOTIFICATION:
            self._on_notification(verdict)
        else:
            self._on_response(verdict)

    def _serves(self, method: str) -> bool:
        return method in self.fm.builtin_features or method in self.fm.features

    def _on_request(self, request: Envelope) -> None:
        msg_id = request.id
        self._awaiting[msg_id] += 1
        try:
            error = self._refusal(request)
            if error is not None:
                self._answer(msg_id, error=error)
                return
            message = self._structured(request)
        except p.ProtocolError as exc:
            self._answer(msg_id, error=error_for(exc))
            return
        except Exception as exc:
            logger.exception("request.dispatch_failed: %s", short(request.method))
            self._answer(msg_id, error=internal_error(exc))
            return
        # pygls runs the handler; its outcome comes back through ``_send_handler_result``.
        super().handle_message(message)

    def _refusal(self, request: Envelope) -> dict[str, Any] | None:
        """The error for a well-formed request we will not run, or None."""
        if self._shutdown:
            return error_object(p.ErrorCode.INVALID_REQUEST, "The server is shutting down")
        if not self._serves(request.method):
            logger.info("request.unknown_method: %s", short(request.method))
            return method_not_found(request.method)
        return params_error(request)

    def _structured(self, envelope: Envelope) -> Any:
        """The message object pygls dispatches: typed params for LSP methods (-32602 naming
        the field when they do not fit), the raw params for our own methods."""
        method, params = envelope.method, envelope.params
        message_type = None if method in self.RAW_PARAMS else self.get_message_type(method)
        if message_type is None:
            if envelope.kind is Kind.REQUEST:
                return JsonRPCRequestMessage(
                    id=envelope.id, method=method, jsonrpc=self.VERSION, params=params
                )
            return JsonRPCNotification(method=method, jsonrpc=self.VERSION, params=params)
        message: dict[str, Any] = {"jsonrpc": self.VERSION, "method": method}
        if envelope.kind is Kind.REQUEST:
            message["id"] = envelope.id
        if params is not None:
            message["params"] = params
        try:
            return self.converter.structure(message, message_type)
        except Exception as exc:
            raise invalid_params_from(exc) from None

    def _on_notification(self, notification: Envelope) -> None:
        method = notification.method
        if self._shutdown and method != lsp.EXIT:
            logger.warning("notification.after_shutdown ignored: %s", short(method))
            return
        if method != lsp.CANCEL_REQUEST and not self._serves(method):
            # "$/" notifications may be ignored by contract; others are logged.
            log = logger.debug if method.startswith("$/") else logger.info
            log("notification.unknown_method ignored: %s", short(method))
            return
        if (error := params_error(notification)) is not None:
            logger.warning("notification.bad_params ignored: %s: %s", short(method), error)
            return
        try:
            message = self._structured(notification)
        except p.ProtocolError as exc:
            logger.warning("notification.bad_params ignored: %s: %s", short(method), exc.message)
            return
        # pygls runs the handler; a failure reaches ``report_server_error`` (logged only).
        super().handle_message(message)

    def _on_response(self, response: Envelope) -> None:
        msg_id = response.id
        if msg_id not in self._outgoing:
            logger.warning("response.stray ignored: id %s", short(msg_id))
            return
        del self._outgoing[msg_id]
        try:
            # pygls' own structuring: typed by the request's result type, which it forgets here.
            message = super().structure_message(response.raw)
        except Exception:
            logger.warning("response.malformed for %s: %s", short(msg_id), short(response.raw))
            error = lsp.ResponseError(code=INVALID_PARAMS, message="malformed response")
            message = lsp.ResponseErrorMessage(id=msg_id, error=error)
        super().handle_message(message)

    def _forget_finished(self) -> None:
        """Drop the futures pygls keeps after they finished.

        pygls 2.1 files the future of every notification handler, and of every handler a
        builtin yields to, in ``_request_futures`` and never removes it: one per ``didChange``.
        Finished ones are looked up by nobody (a ``$/cancelRequest`` for a finished request
        does nothing either way), so they are dropped before each message. Our own requests
        the waiter gave up on are forgotten too: a late answer is then a stray."""
        for key, future in list(self._request_futures.items()):
            if future.done():
                self._request_futures.pop(key, None)
        for key, pending in list(self._outgoing.items()):
            if pending is not None and pending.done():
                self._outgoing.pop(key, None)

    @lsp_method(lsp.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(
        self, params: lsp.ExecuteCommandParams
    ) -> Generator[Any, Any, Any]:
        """pygls' executeCommand, with errors that name the field and carry no exception text."""
        if params.command not in self.fm.commands:
            raise p.invalid_params(f"Unknown command: {params.command[:100]}", "command")
        try:
            return (yield from super().lsp_workspace__execute_command(params))
        except JsonRpcInvalidParams:
            # Raised while pygls fits the arguments to the handler (the handler's own errors
            # never come back into this generator).
            logger.warning("command.bad_arguments: %s", params.command[:100], exc_info=True)
            raise p.invalid_params(
                f"Invalid arguments for command {params.command[:100]}", "arguments"
            ) from None

    @lsp_method(lsp.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Any:
        """pygls' shutdown over a copy of the futures: cancelling a concurrent future runs its
        callback at once, which removes it from ``_request_futures`` while pygls iterates it."""
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

    # ------------------------------------------------------------------ answers

    def send_request(
        self,
        method: str,
        params: Any | None = None,
        callback: Any = None,
        msg_id: MsgId | None = None,
    ) -> Future[Any]:
        msg_id = msg_id if msg_id is not None else str(uuid.uuid4())
        self._outgoing[msg_id] = None
        future: Future[Any] = super().send_request(method, params, callback, msg_id)
        if msg_id in self._outgoing:  # not answered while it was being sent
            self._outgoing[msg_id] = future
        return future

    def _send_handler_result(self, future: Future[Any], *, msg_id: MsgId) -> None:
        """pygls seam: a request handler's outcome becomes its answer here. pygls would send an
        exception's text with its traceback and log typed errors as crashes."""
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
        """pygls seam: every answer pygls sends itself (a handler it could not start, ...)
        goes through the same single exit."""
        if error is not None and not isinstance(error, dict):
            error = error_for(JsonRpcException(error.message, error.code, error.data))
        self._answer(msg_id, result=result, error=error)

    def _answer(
        self, msg_id: MsgId, *, result: Any = None, error: dict[str, Any] | None = None
    ) -> None:
        """The single exit for answers to client requests: exactly one per accepted request."""
        if self._awaiting[msg_id] <= 0:
            logger.warning("response.duplicate suppressed for id %s", short(msg_id))
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
            self.handle_message({"jsonrpc": self.VERSION, "method": lsp.EXIT})  # deferred

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
        A notification handler's failure arrives as ``FeatureNotificationError`` with pygls'
        traceback in ``data``: it goes to the log.
        """
        if source is JsonRpcException:
            logger.warning("frame.unparsable: %s", short(error))
            parse = parse_error()
            self._send_error(None, parse["code"], parse["message"])
            return
        if source is FeatureRequestError:
            return  # the request was answered with a typed error; its failure is logged
        if source is FeatureNotificationError:
            lines = getattr(error, "data", None) or {}
            trace = "".join(lines.get("traceback", [])) if isinstance(lines, dict) else ""
            logger.error("notification.failed: %s\n%s", error, trace)
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
    "INTERNAL_MESSAGE",
    "GuardedLanguageServer",
    "GuardedProtocol",
    "error_for",
    "internal_error",
    "invalid_params_from",
]
