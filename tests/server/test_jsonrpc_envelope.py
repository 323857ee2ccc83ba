"""One JSON-RPC envelope rule for both front doors.

The rules themselves (``lovia_server.transport.jsonrpc_envelope``), then the same malformed frames sent to
the language server's ``GuardedProtocol`` and to the ACP agent's ``GuardedTransport``: both
answer each with the same id and the same error object, or both stay silent.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from lovia_server.acp.connection import GuardedTransport
from lovia_server.lsp.jsonrpc import GuardedLanguageServer, GuardedProtocol
from lovia_server.lsp.language_server import converter_factory
from lovia_server.transport.jsonrpc_envelope import (
    INTERNAL_MESSAGE,
    Envelope,
    Kind,
    Rejection,
    classify,
    internal_error,
    is_id,
    params_error,
    safe_error,
)
from tests.server.test_jsonrpc import CapturingWriter


@pytest.mark.parametrize(
    ("value", "usable"),
    [
        ("abc", True),
        ("", True),
        (0, True),
        (-7, True),
        (2**70, True),
        (True, False),
        (False, False),
        (None, False),
        (1.0, False),
        (1.5, False),
        ({"a": 1}, False),
        ([1], False),
    ],
)
def test_an_id_is_a_string_or_an_integer(value: Any, usable: bool) -> None:
    assert is_id(value) is usable


def test_classify_tells_requests_notifications_and_responses_apart() -> None:
    request = classify({"jsonrpc": "2.0", "id": 1, "method": "m", "params": {}})
    assert isinstance(request, Envelope) and request.kind is Kind.REQUEST
    assert (request.id, request.method, request.params) == (1, "m", {})
    note = classify({"jsonrpc": "2.0", "method": "m"})
    assert isinstance(note, Envelope) and note.kind is Kind.NOTIFICATION and note.params is None
    answer = classify({"jsonrpc": "2.0", "id": "x", "result": None})
    assert isinstance(answer, Envelope) and answer.kind is Kind.RESPONSE


@pytest.mark.parametrize(
    ("frame", "answer_id"),
    [
        ([], None),
        (5, None),
        ({"foo": 1}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "m"}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "m"}, None),
        ({"jsonrpc": "2.0", "id": None, "method": "m"}, None),
        ({"jsonrpc": "2.0", "id": "r"}, "r"),
        ({"jsonrpc": "1.0", "id": 3, "method": "m"}, 3),
        ({"id": 3, "method": "m"}, 3),
        ({"jsonrpc": "2.0", "id": 3, "method": 5}, 3),
    ],
)
def test_what_is_answered_with_invalid_request(frame: Any, answer_id: Any) -> None:
    verdict = classify(frame)
    assert isinstance(verdict, Rejection) and verdict.answer
    assert verdict.answer_id == answer_id
    assert verdict.error["code"] == -32600


@pytest.mark.parametrize(
    "frame",
    [
        {"jsonrpc": "1.0", "method": "m"},
        {"jsonrpc": "2.0", "method": 5},
        {"jsonrpc": "2.0", "id": True, "result": 1},
        {"jsonrpc": "2.0", "id": 1.5, "error": {}},
        {"id": 1, "result": 1},
    ],
)
def test_malformed_notifications_and_responses_are_never_answered(frame: Any) -> None:
    verdict = classify(frame)
    assert isinstance(verdict, Rejection) and not verdict.answer


def test_params_must_be_an_object_or_an_array() -> None:
    params: Any
    for params in ({}, [], None):
        envelope = classify({"jsonrpc": "2.0", "id": 1, "method": "m", "params": params})
        assert isinstance(envelope, Envelope) and params_error(envelope) is None
    envelope = classify({"jsonrpc": "2.0", "id": 1, "method": "m", "params": "junk"})
    assert isinstance(envelope, Envelope)
    error = params_error(envelope)
    assert error is not None and (error["code"], error["data"]) == (-32602, {"field": "params"})


def test_an_error_carrying_a_traceback_becomes_the_generic_internal_error() -> None:
    assert safe_error(-32010, "Run not found", {"runId": "r"}) == {
        "code": -32010,
        "message": "Run not found",
        "data": {"runId": "r"},
    }
    leaked = safe_error(-32603, "KeyError: 'x'", {"traceback": ["File x"]}, KeyError("x"))
    assert leaked == {"code": -32603, "message": INTERNAL_MESSAGE, "data": {"type": "KeyError"}}
    text = "Traceback (most recent call last):\n  File x"
    assert safe_error(-32000, text)["message"] == INTERNAL_MESSAGE
    assert internal_error() == {"code": -32603, "message": INTERNAL_MESSAGE}


# ----------------------------------------------------------------------------- both doors

BAD_FRAMES: list[Any] = [
    [],
    [{"jsonrpc": "2.0", "id": 1, "method": "m"}],
    7,
    "s",
    None,
    {"foo": 1},
    {"jsonrpc": "2.0", "id": True, "method": "m"},
    {"jsonrpc": "2.0", "id": 1.5, "method": "m"},
    {"jsonrpc": "2.0", "id": None, "method": "m"},
    {"jsonrpc": "2.0", "id": {"a": 1}, "method": "m"},
    {"jsonrpc": "2.0", "id": "r1"},
    {"jsonrpc": "1.0", "id": "r2", "method": "m"},
    {"id": "r3", "method": "m", "params": {}},
    {"jsonrpc": "2.0", "id": "r4", "method": 5},
    {"jsonrpc": "1.0", "method": "m"},  # a malformed notification: silence
    {"jsonrpc": "2.0", "id": True, "result": 1},  # a malformed response: silence
    {"jsonrpc": "2.0", "method": "m", "params": 5},  # a notification with bad params: silence
]


def lsp_answers(frames: list[Any]) -> list[dict[str, Any]]:
    server = GuardedLanguageServer(
        name="t", version="0", protocol_cls=GuardedProtocol, converter_factory=converter_factory
    )
    writer = CapturingWriter()
    server.protocol.set_writer(writer)
    for frame in frames:
        server.protocol.handle_message(frame)
    return writer.messages()


async def acp_answers(frames: list[Any]) -> list[dict[str, Any]]:
    reader = asyncio.StreamReader()
    for frame in frames:
        reader.feed_data(json.dumps(frame).encode() + b"\n")
    reader.feed_eof()
    written: list[bytes] = []
    transport = GuardedTransport(reader, written.append)
    assert await transport.receive() is None  # nothing routable among them
    return [json.loads(line) for line in written]


async def test_both_front_doors_answer_bad_frames_alike() -> None:
    lsp = lsp_answers(BAD_FRAMES)
    acp = await acp_answers(BAD_FRAMES)
    assert lsp == acp
    assert [m["id"] for m in lsp] == [None] * 10 + ["r1", "r2", "r3", "r4"]
    assert {m["error"]["code"] for m in lsp} == {-32600}


async def test_both_front_doors_answer_unparsable_frames_alike() -> None:
    server = GuardedLanguageServer(
        name="t", version="0", protocol_cls=GuardedProtocol, converter_factory=converter_factory
    )
    writer = CapturingWriter()
    server.protocol.set_writer(writer)
    try:
        json.loads("{oops")
    except ValueError as exc:
        server.report_server_error(exc, JsonRpcException)
    reader = asyncio.StreamReader()
    reader.feed_data(b"{oops\n")
    reader.feed_eof()
    written: list[bytes] = []
    assert await GuardedTransport(reader, written.append).receive() is None
    assert writer.messages() == [json.loads(line) for line in written]
    assert json.loads(written[0])["error"]["code"] == -32700
