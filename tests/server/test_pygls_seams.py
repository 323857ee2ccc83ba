"""The pygls members ``GuardedProtocol`` relies on, checked against the installed pygls.

docs/architecture.md ("pygls seams") lists each private member with the reason pygls has no
public hook for it. These tests fail when pygls renames one, changes its signature or stops
calling it where the guard expects, so an upgrade cannot silently bring back unanswered
requests or leaked tracebacks. The public extension points are checked too: they are what the
guard is built on.
"""

from __future__ import annotations

import asyncio
import inspect
from concurrent.futures import Future
from typing import Any

import pytest
from lsprotocol import types as lsp
from pygls import io_
from pygls.feature_manager import FeatureManager
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage
from pygls.server import JsonRPCServer

from lovia_server.lsp.jsonrpc import INTERNAL_MESSAGE, GuardedLanguageServer, GuardedProtocol
from lovia_server.lsp.language_server import converter_factory
from tests.server.test_jsonrpc import CapturingWriter


def parameters(function: Any) -> list[tuple[str, Any]]:
    return [(p.name, p.kind) for p in inspect.signature(function).parameters.values()]


P = inspect.Parameter


def make_server() -> tuple[GuardedLanguageServer, GuardedProtocol, CapturingWriter]:
    server = GuardedLanguageServer(
        name="t", version="0", protocol_cls=GuardedProtocol, converter_factory=converter_factory
    )
    writer = CapturingWriter()
    server.protocol.set_writer(writer)
    protocol = server.protocol
    assert isinstance(protocol, GuardedProtocol)
    return server, protocol, writer


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0.01)


# ----------------------------------------------------------------------------- private seams


def test_send_handler_result_is_the_callback_pygls_gives_request_handlers() -> None:
    """Seam 1: ``_send_handler_result(future, *, msg_id)`` turns a handler's outcome into its
    answer; pygls passes it to ``_execute_handler`` for every request."""
    assert parameters(JsonRPCProtocol._send_handler_result) == [
        ("self", P.POSITIONAL_OR_KEYWORD),
        ("future", P.POSITIONAL_OR_KEYWORD),
        ("msg_id", P.KEYWORD_ONLY),
    ]
    assert "self._send_handler_result" in inspect.getsource(JsonRPCProtocol._handle_request)


async def test_a_request_handlers_failure_comes_back_through_the_seam() -> None:
    server, protocol, writer = make_server()

    @server.feature("t/fail")
    async def fail(params: Any) -> None:
        raise KeyError("secret")

    protocol.handle_message({"jsonrpc": "2.0", "id": 1, "method": "t/fail", "params": {}})
    await settle()
    [answer] = writer.messages()
    # pygls' own callback would have sent "KeyError: 'secret'" with a traceback in data.
    assert answer["error"] == {
        "code": -32603,
        "message": INTERNAL_MESSAGE,
        "data": {"type": "KeyError"},
    }


def test_send_response_is_the_exit_pygls_answers_through() -> None:
    """Seam 2: ``_send_response(msg_id, result=None, error=None)`` is where every answer pygls
    sends by itself goes (a handler it could not start, a cancelled request)."""
    assert parameters(JsonRPCProtocol._send_response) == [
        ("self", P.POSITIONAL_OR_KEYWORD),
        ("msg_id", P.POSITIONAL_OR_KEYWORD),
        ("result", P.POSITIONAL_OR_KEYWORD),
        ("error", P.POSITIONAL_OR_KEYWORD),
    ]
    for caller in (JsonRPCProtocol._handle_request, JsonRPCProtocol._send_handler_result):
        assert "self._send_response(" in inspect.getsource(caller)


async def test_an_answer_pygls_sends_by_itself_goes_through_the_single_exit() -> None:
    server, protocol, writer = make_server()

    @server.feature("t/echo")
    async def echo(params: Any) -> Any:
        return params

    protocol.handle_message({"jsonrpc": "2.0", "id": 4, "method": "t/echo", "params": {}})
    await settle()
    protocol._send_response(
        4, error=lsp.ResponseError(code=-32603, message="x\nTraceback (most recent call last)")
    )
    assert [m["id"] for m in writer.messages()] == [4]  # answered once


async def test_request_futures_holds_the_running_handlers() -> None:
    """Seam 3: ``_request_futures`` maps a running request's id to its future (shutdown
    cancels them; finished ones pygls forgets to drop are dropped by the guard)."""
    server, protocol, writer = make_server()
    assert isinstance(protocol._request_futures, dict)
    started = asyncio.Event()

    @server.feature("t/slow")
    async def slow(params: Any) -> None:
        started.set()
        await asyncio.sleep(30)

    protocol.handle_message({"jsonrpc": "2.0", "id": "s", "method": "t/slow", "params": {}})
    await started.wait()
    future = protocol._request_futures["s"]
    assert isinstance(future, (asyncio.Future, Future)) and not future.done()
    protocol.handle_message({"jsonrpc": "2.0", "id": 1, "method": "shutdown"})
    await settle()
    assert future.cancelled()
    answers = {m["id"]: m for m in writer.messages()}
    assert answers[1] == {"jsonrpc": "2.0", "id": 1, "result": None}
    assert answers["s"]["error"]["code"] == -32800


async def test_finished_notification_futures_do_not_pile_up() -> None:
    """pygls 2.1 keeps the future of every notification handled by a generator builtin (and
    of every handler a builtin yields to) for good; the guard drops the finished ones."""
    server, protocol, writer = make_server()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def opened(params: lsp.DidOpenTextDocumentParams) -> None:
        pass

    @server.command("t.cmd")
    async def command(*args: Any) -> int:
        return 1

    for n in range(40):
        document = {"uri": f"file:///d{n}", "languageId": "x", "version": 1, "text": ""}
        protocol.handle_message(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {"textDocument": document},
            }
        )
        protocol.handle_message(
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "workspace/executeCommand",
                "params": {"command": "t.cmd"},
            }
        )
        await settle()
    assert len(protocol._request_futures) <= 3  # the last message's, at most
    assert len(writer.messages()) == 40


async def test_an_answer_to_a_request_its_waiter_gave_up_on_is_a_stray(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """pygls 2.1.1 would set the result of the cancelled future and raise InvalidStateError
    (openlawlibrary/pygls#621); the guard has forgotten the request by then."""
    server, protocol, writer = make_server()
    future = protocol.send_request("workspace/configuration", {"items": []}, msg_id="c1")
    future.cancel()
    protocol.handle_message({"jsonrpc": "2.0", "id": "c1", "result": [None]})
    assert "response.stray" in caplog.text
    assert "route_failed" not in caplog.text
    assert "c1" not in protocol._request_futures


def test_send_data_is_where_every_outgoing_message_goes() -> None:
    """The outgoing seams: pygls sends its responses, notifications and requests through
    ``_send_data(data)``, serialises its attrs messages with ``_serialize_message`` and frames by
    ``_include_headers``; the guard's ``_send_data`` reads both and hands the frame to the
    ``FrameWriter``."""
    assert parameters(JsonRPCProtocol._send_data) == [
        ("self", P.POSITIONAL_OR_KEYWORD),
        ("data", P.POSITIONAL_OR_KEYWORD),
    ]
    for sender in (
        JsonRPCProtocol._send_response,
        JsonRPCProtocol.notify,
        JsonRPCProtocol.send_request,
    ):
        assert "self._send_data(" in inspect.getsource(sender)
    assert parameters(JsonRPCProtocol._serialize_message) == [
        ("self", P.POSITIONAL_OR_KEYWORD),
        ("data", P.POSITIONAL_OR_KEYWORD),
    ]
    _, protocol, _ = make_server()
    assert protocol._include_headers is True  # set by set_writer(include_headers=True)
    assert "include_headers" in inspect.signature(JsonRPCProtocol.set_writer).parameters


def test_shutdown_is_the_flag_pygls_reads() -> None:
    """Seam 4: ``_shutdown`` (set by the ``shutdown`` builtin) makes pygls drop every message
    but ``exit`` and decides ``exit``'s return code; the guard answers those requests itself
    and sets it where pygls would."""
    server, protocol, writer = make_server()
    assert protocol._shutdown is False
    assert "self._shutdown" in inspect.getsource(JsonRPCProtocol.handle_message)
    assert "self._shutdown" in inspect.getsource(LanguageServerProtocol.lsp_exit)
    assert "self._shutdown = True" in inspect.getsource(LanguageServerProtocol.lsp_shutdown)


# ----------------------------------------------------------------------------- public points


def test_the_reader_hands_frames_to_structure_message_and_handle_message() -> None:
    source = inspect.getsource(io_.run_async)
    assert "object_hook=protocol.structure_message" in source
    assert "protocol.handle_message(message)" in source
    assert parameters(JsonRPCProtocol.structure_message)[1][0] == "data"
    assert parameters(JsonRPCProtocol.handle_message)[1][0] == "message"


def test_the_builtins_the_guard_extends_are_generators() -> None:
    for name in ("lsp_initialize", "lsp_shutdown", "lsp_exit", "lsp_workspace__execute_command"):
        builtin = getattr(LanguageServerProtocol, name)
        assert inspect.isgeneratorfunction(builtin), name
        assert hasattr(builtin, "method_name"), name


def test_messages_the_guard_builds_satisfy_pygls_dispatch() -> None:
    from pygls.protocol.json_rpc import RPCNotification, RPCRequest

    request = JsonRPCRequestMessage(id=1, method="m", jsonrpc="2.0", params={})
    notification = JsonRPCNotification(method="m", jsonrpc="2.0", params=None)
    assert isinstance(request, RPCRequest)
    assert isinstance(notification, RPCNotification) and not isinstance(notification, RPCRequest)


def test_features_commands_and_error_reports_are_where_the_guard_looks() -> None:
    manager = FeatureManager()
    for name in ("features", "builtin_features", "commands"):
        assert isinstance(getattr(manager, name), dict), name
    assert parameters(JsonRPCServer.report_server_error)[1:] == [
        ("error", P.POSITIONAL_OR_KEYWORD),
        ("source", P.POSITIONAL_OR_KEYWORD),
    ]
    assert "FeatureNotificationError" in inspect.getsource(JsonRPCProtocol._check_handler_result)
    assert "FeatureRequestError" in inspect.getsource(JsonRPCProtocol._handle_request)
    assert issubclass(GuardedLanguageServer, LanguageServer)
