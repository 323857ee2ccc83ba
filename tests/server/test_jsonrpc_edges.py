"""JSON-RPC edges against the real server process over raw stdio framing.

Every request gets exactly one answer (a result or a typed error), broken frames get -32700 /
-32600 with id null, the connection stays up, and no exception text reaches the client.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.support.jsonrpc_fuzz import run_fuzz
from tests.support.raw_lsp import MISSING, RawClient, frame


@pytest_asyncio.fixture
async def raw(tmp_path: Path) -> AsyncIterator[RawClient]:
    client = await RawClient.start(tmp_path / "logs")
    yield client
    await client.close()


@pytest_asyncio.fixture
async def ready(raw: RawClient, tmp_path: Path) -> RawClient:
    root = tmp_path / "ws"
    root.mkdir()
    answer = await raw.initialize(root, tmp_path / "state")
    assert "result" in answer
    status = await raw.request("lovia/status", {})
    assert "result" in status, status
    return raw


def error_of(answer: dict[str, Any]) -> dict[str, Any]:
    assert "error" in answer, answer
    assert "result" not in answer, answer
    return answer["error"]


def assert_nothing_leaked(client: RawClient) -> None:
    assert client.shown_messages() == []
    assert client.leaked_text() == []
    assert all(len(got) == 1 for got in client.responses.values()), client.responses


async def quiet_period(client: RawClient) -> None:
    """Anything the server would send for earlier frames arrives before a later answer."""
    answer = await client.request("lovia/status", {})
    assert "result" in answer


# ----------------------------------------------------------------------------- no params


async def test_a_request_without_params_is_answered(ready: RawClient) -> None:
    answer = await ready.request("lovia/status")
    assert answer["result"]["protocolVersion"] == 1
    answer = await ready.request("lovia/sessions")
    assert "result" in answer
    assert_nothing_leaked(ready)


async def test_a_standard_request_without_required_params_gets_invalid_params(
    ready: RawClient,
) -> None:
    error = error_of(await ready.request("workspace/executeCommand"))
    assert error["code"] == -32602
    assert error["data"]["field"] == "params"
    assert_nothing_leaked(ready)


async def test_initialize_without_params_or_with_junk_gets_invalid_params(raw: RawClient) -> None:
    error = error_of(await raw.request("initialize"))
    assert (error["code"], error["data"]["field"]) == (-32602, "params")
    error = error_of(await raw.request("initialize", {"processId": "x", "capabilities": {}}))
    assert (error["code"], error["data"]["field"]) == (-32602, "processId")
    error = error_of(await raw.request("initialize", "junk"))
    assert (error["code"], error["data"]["field"]) == (-32602, "params")
    assert_nothing_leaked(raw)


# ----------------------------------------------------------------------------- malformed params


EXECUTE_COMMAND_CASES: list[tuple[Any, str]] = [
    ("lovia.status", "params"),
    (["lovia.status"], "command"),
    ({"command": 5}, "command"),
    ({"command": "lovia.nothing"}, "command"),
    ({"command": "lovia.status", "arguments": ["not an object"]}, "params"),
    ({"command": "lovia.run", "arguments": [{"prompt": 5}]}, "prompt"),
]


async def test_execute_command_with_malformed_params_gets_invalid_params_with_field(
    ready: RawClient,
) -> None:
    for params, field in EXECUTE_COMMAND_CASES:
        error = error_of(await ready.request("workspace/executeCommand", params))
        assert (error["code"], error["data"]["field"]) == (-32602, field), params
    assert_nothing_leaked(ready)


async def test_our_methods_with_malformed_params_get_invalid_params_with_field(
    ready: RawClient,
) -> None:
    cases: list[tuple[Any, str]] = [
        ("junk", "params"),
        (7, "params"),
        ([1], "params"),
        ({"prompt": 5}, "prompt"),
    ]
    for params, field in cases:
        error = error_of(await ready.request("lovia/run", params))
        assert (error["code"], error["data"]["field"]) == (-32602, field), params
    assert_nothing_leaked(ready)


async def test_methods_we_do_not_serve_get_method_not_found(ready: RawClient) -> None:
    for method in ["textDocument/hover", "workspace/symbol", "fuzz/nothing", "", "$/x"]:
        for params in [{"textDocument": 5}, "junk", MISSING]:
            error = error_of(await ready.request(method, params))
            assert error["code"] == -32601, (method, params)
            assert error["data"]["method"] == method
    assert_nothing_leaked(ready)


async def test_before_initialize_our_methods_get_server_not_initialized(raw: RawClient) -> None:
    error = error_of(await raw.request("lovia/status", {}))
    assert error["code"] == -32002
    error = error_of(await raw.request("lovia/status"))
    assert error["code"] == -32002
    assert_nothing_leaked(raw)


# ----------------------------------------------------------------------------- broken frames


async def test_invalid_json_gets_parse_error_with_null_id_and_the_server_keeps_reading(
    ready: RawClient,
) -> None:
    await ready.send_body(b'{"jsonrpc": "2.0", "id": 1, "method": ')
    error = error_of(await ready.null_id_error(1))
    assert error["code"] == -32700
    await ready.send_body(b"\xff\xfe{not utf8")
    assert error_of(await ready.null_id_error(2))["code"] == -32700
    await ready.send_body(b"[" * 100_000 + b"]" * 100_000)
    assert error_of(await ready.null_id_error(3))["code"] == -32700
    await quiet_period(ready)
    assert "Expecting" not in json.dumps(ready.null_id_errors)
    assert_nothing_leaked(ready)
    # The details went to the log instead: one line each, no traceback (pygls' own
    # "Unable to handle message" traceback repeats what the server logged already)
    log = ready.stderr()
    assert "JSONDecodeError" in log and "frame.unparsable" in log
    assert "Traceback" not in log and "Unable to handle message" not in log, log


NOT_OBJECTS: list[Any] = [
    [],
    [{"jsonrpc": "2.0", "id": 1, "method": "lovia/status"}],
    5,
    "s",
    None,
    {"foo": 1},
]


async def test_a_non_object_or_non_rpc_object_gets_invalid_request_with_null_id(
    ready: RawClient,
) -> None:
    for n, body in enumerate(NOT_OBJECTS, start=1):
        await ready.send(body)
        error = error_of(await ready.null_id_error(n))
        assert error["code"] == -32600, body
    await quiet_period(ready)
    assert len(ready.null_id_errors) == len(NOT_OBJECTS)
    assert_nothing_leaked(ready)


INVALID_WITH_ID: list[dict[str, Any]] = [
    {"jsonrpc": "2.0"},
    {"jsonrpc": "1.0", "method": "lovia/status"},
    {"method": "lovia/status", "params": {}},
    {"jsonrpc": "2.0", "method": 5},
]


async def test_an_invalid_request_with_a_readable_id_gets_invalid_request_with_that_id(
    ready: RawClient,
) -> None:
    for n, message in enumerate(INVALID_WITH_ID):
        ready.expect(f"r{n}")
        await ready.send({**message, "id": f"r{n}"})
        error = error_of(await ready.answer(f"r{n}"))
        assert error["code"] == -32600, message
    assert ready.null_id_errors == []
    assert_nothing_leaked(ready)


async def test_an_unusable_id_gets_invalid_request_with_null_id(ready: RawClient) -> None:
    for bad in (True, 1.5, {"a": 1}, [1]):
        await ready.send({"jsonrpc": "2.0", "id": bad, "method": "lovia/status"})
    for n in range(1, 5):
        assert error_of(await ready.null_id_error(n))["code"] == -32600
    assert_nothing_leaked(ready)


async def test_junk_header_lines_and_empty_frames_are_skipped(ready: RawClient) -> None:
    await ready.send_bytes(b"X-Junk: 1\r\nnonsense\r\nContent-Length: 0\r\n\r\n")
    ready.expect("after")
    body = json.dumps({"jsonrpc": "2.0", "id": "after", "method": "lovia/status"}).encode()
    await ready.send_bytes(b"X-Other: 2\r\n" + frame(body))
    assert "result" in await ready.answer("after")
    assert ready.null_id_errors == []
    assert_nothing_leaked(ready)


async def test_a_header_line_over_the_limit_is_dropped_and_the_next_frame_is_read(
    ready: RawClient,
) -> None:
    """A header line of 3 MB (no newline for longer than the reader holds): dropped, the
    server keeps reading, and the frame after it is answered."""
    from lovia_server.lsp.language_server import LINE_LIMIT

    await ready.send_bytes(b"X-Junk: " + b"z" * (3 * LINE_LIMIT) + b"\r\n")
    ready.expect("after-long")
    body = json.dumps({"jsonrpc": "2.0", "id": "after-long", "method": "lovia/status"}).encode()
    await ready.send_bytes(frame(body))
    assert "result" in await ready.answer("after-long")
    assert ready.proc.returncode is None
    assert_nothing_leaked(ready)


# ----------------------------------------------------------------------------- silence


async def test_stray_responses_and_bad_notifications_are_ignored(ready: RawClient) -> None:
    await ready.send({"jsonrpc": "2.0", "id": 424242, "result": {"x": 1}})
    await ready.send({"jsonrpc": "2.0", "id": "nobody", "error": {"code": 1, "message": "m"}})
    await ready.send({"jsonrpc": "2.0", "id": 7, "error": "junk"})
    await ready.notify("$/cancelRequest", "junk")
    await ready.notify("$/cancelRequest")
    await ready.notify("textDocument/didOpen", {"textDocument": 5})
    await ready.notify(
        "textDocument/didChange", {"textDocument": {"uri": "file:///none"}, "contentChanges": []}
    )
    await ready.notify("lovia/run", {"prompt": 5})
    await ready.notify("fuzz/nothing", [1, 2])
    await quiet_period(ready)
    before = len(ready.bodies)
    await quiet_period(ready)
    assert len(ready.bodies) == before + 1  # only the status answer
    assert ready.null_id_errors == []
    assert set(ready.responses) <= {1, 2, 3, 4}  # initialize and the status requests
    assert 7 not in ready.responses
    assert_nothing_leaked(ready)
    assert "response.stray" in ready.stderr()


async def test_a_cancelled_request_is_answered_once(ready: RawClient) -> None:
    msg_id = await ready.send_request("lovia/status", {})
    await ready.notify("$/cancelRequest", {"id": msg_id})
    answer = await ready.answer(msg_id)
    assert "result" in answer or answer["error"]["code"] == -32800
    await quiet_period(ready)
    assert len(ready.responses[msg_id]) == 1


async def test_huge_params_get_a_typed_answer(ready: RawClient) -> None:
    error = error_of(await ready.request("lovia/steer", {"runId": 5, "text": "x" * 1_000_000}))
    assert (error["code"], error["data"]["field"]) == (-32602, "runId")
    nested: Any = "leaf"
    for _ in range(300):
        nested = {"a": [nested]}
    error = error_of(await ready.request("lovia/run", {"prompt": nested}))
    assert (error["code"], error["data"]["field"]) == (-32602, "prompt")
    assert "result" in await ready.request("lovia/status", {"extra": nested})
    assert_nothing_leaked(ready)


# ----------------------------------------------------------------------------- fuzz


@pytest.mark.parametrize("seed", [12])
async def test_fuzz_every_request_is_answered_once_and_status_still_answers(
    ready: RawClient, seed: int
) -> None:
    report = await asyncio.wait_for(run_fuzz(ready, 2000, seed, within=60), 150)
    assert report.messages >= 2000
    assert report.requests > 800
    assert report.problems() == [], report.summary()
    # The stream held every kind of malformed message and params shape.
    expected = {
        "lovia",
        "standard",
        "unknown",
        "notification",
        "stray",
        "parse",
        "non-object",
        "cancel",
    }
    expected |= {f"params:{shape}" for shape in ("missing", "wrong-type", "huge", "nested", "junk")}
    assert expected <= set(report.kinds), report.kinds
