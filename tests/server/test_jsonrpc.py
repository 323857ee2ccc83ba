"""GuardedProtocol in-process: handler faults become typed errors without exception text.

The process-level edge cases live in ``test_jsonrpc_edges.py``; here handlers that fail in
ways no real method can be made to fail on demand are registered on a real pygls server.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInternalError

from lovia_server.lsp.jsonrpc import (
    INTERNAL_MESSAGE,
    GuardedLanguageServer,
    GuardedProtocol,
    error_for,
)
from lovia_server.lsp.language_server import converter_factory

SECRET = "secret-detail-4711"


class CapturingWriter:
    """A real pygls writer that keeps the framed bytes."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    def close(self) -> None:
        pass

    def messages(self) -> list[dict[str, Any]]:
        out, rest = [], self.data
        while rest:
            header, _, rest = rest.partition(b"\r\n\r\n")
            length = int(header.split(b"Content-Length: ")[1].split(b"\r\n")[0])
            out.append(json.loads(rest[:length]))
            rest = rest[length:]
        return out


def make_server() -> tuple[GuardedLanguageServer, CapturingWriter]:
    server = GuardedLanguageServer(
        name="t", version="0", protocol_cls=GuardedProtocol, converter_factory=converter_factory
    )
    writer = CapturingWriter()
    server.protocol.set_writer(writer)

    @server.feature("t/sync-crash")
    def sync_crash(params: Any) -> None:
        raise RuntimeError(SECRET)

    @server.feature("t/async-crash")
    async def async_crash(params: Any) -> None:
        raise KeyError(SECRET)

    @server.feature("t/unserializable")
    async def unserializable(params: Any) -> Any:
        return {"value": object()}

    @server.feature("t/traceback-data")
    async def traceback_data(params: Any) -> None:
        try:
            raise ValueError(SECRET)
        except ValueError as exc:
            import sys

            raise JsonRpcInternalError.of(sys.exc_info()) from exc

    @server.feature("t/echo")
    async def echo(params: Any) -> Any:
        return params

    @server.feature("t/note")
    def note(params: Any) -> None:
        raise RuntimeError(SECRET)

    @server.feature("initialized")
    async def slow_initialized(params: Any) -> None:
        # pygls runs this inside its generator builtin, whose future is a concurrent one.
        await asyncio.sleep(30)

    return server, writer


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0.01)


@pytest.mark.parametrize(
    "method", ["t/sync-crash", "t/async-crash", "t/unserializable", "t/traceback-data"]
)
async def test_a_failing_handler_answers_internal_error_without_exception_text(method: str) -> None:
    server, writer = make_server()
    server.protocol.handle_message({"jsonrpc": "2.0", "id": 1, "method": method, "params": {}})
    await settle()
    [message] = writer.messages()
    assert message["id"] == 1
    assert message["error"]["code"] == -32603
    assert message["error"]["message"] == INTERNAL_MESSAGE
    assert SECRET not in writer.data.decode()
    assert b"Traceback" not in writer.data


async def test_a_failing_notification_handler_is_logged_not_shown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server, writer = make_server()
    server.protocol.handle_message({"jsonrpc": "2.0", "method": "t/note", "params": {}})
    await settle()
    assert writer.data == b""
    assert SECRET in caplog.text


async def test_a_reader_parse_failure_answers_parse_error_not_show_message() -> None:
    server, writer = make_server()
    try:
        json.loads("{oops")
    except ValueError as exc:
        # pygls' reader reports unparsable frames through the server's error handler.
        server.report_server_error(exc, JsonRpcException)
    [message] = writer.messages()
    assert message == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: the message is not valid JSON"},
    }


async def test_a_request_is_answered_once_even_if_the_same_result_is_sent_twice() -> None:
    server, writer = make_server()
    protocol = server.protocol
    assert isinstance(protocol, GuardedProtocol)
    protocol.handle_message({"jsonrpc": "2.0", "id": 9, "method": "t/echo", "params": {"a": 1}})
    await settle()
    protocol._send_response(9, result={"again": True})
    [message] = writer.messages()
    assert message["result"] == {"a": 1}


async def test_requests_after_shutdown_get_invalid_request() -> None:
    server, writer = make_server()
    server.protocol.handle_message({"jsonrpc": "2.0", "id": 1, "method": "shutdown"})
    await settle()
    server.protocol.handle_message({"jsonrpc": "2.0", "id": 2, "method": "t/echo", "params": {}})
    await settle()
    first, second = writer.messages()
    assert first == {"jsonrpc": "2.0", "id": 1, "result": None}
    assert second["id"] == 2 and second["error"]["code"] == -32600


async def test_shutdown_answers_while_notification_handlers_are_still_running() -> None:
    server, writer = make_server()
    server.protocol.handle_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    await settle()
    server.protocol.handle_message({"jsonrpc": "2.0", "id": 1, "method": "shutdown"})
    await settle()
    assert writer.messages() == [{"jsonrpc": "2.0", "id": 1, "result": None}]


def test_error_for_keeps_typed_errors_and_drops_tracebacks() -> None:
    from lovia_server.protocol import ProtocolError

    assert error_for(ProtocolError(-32010, "Run not found", {"runId": "r"})) == {
        "code": -32010,
        "message": "Run not found",
        "data": {"runId": "r"},
    }
    leaked = JsonRpcInternalError("boom", data={"traceback": ["File x"]})
    assert error_for(leaked)["message"] == INTERNAL_MESSAGE
    assert error_for(ValueError(SECRET)) == {
        "code": -32603,
        "message": INTERNAL_MESSAGE,
        "data": {"type": "ValueError"},
    }
