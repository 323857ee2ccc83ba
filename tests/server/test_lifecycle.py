"""Handshake, capability advertisement, settings, folders, executeCommand aliases."""

import asyncio
import json
import os
import sys
import time

import pytest
from lsprotocol import types as lsp

import lovia
from lovia_server import protocol as p
from tests.server.harness import AGENT_HEADER


async def test_initialize_advertises_lovia_capability(harness):
    started = time.perf_counter()
    await harness.start()
    elapsed = time.perf_counter() - started
    exp = harness.initialize_result.capabilities.experimental["lovia"]
    assert exp["protocolVersion"] == 1 and exp["version"] == lovia.__version__
    assert set(exp["methods"]) == set(p.METHODS)
    assert "run.finished" in exp["eventKinds"] and exp["editModes"] == ["server", "workspaceEdit"]
    assert elapsed < 10
    commands = harness.initialize_result.capabilities.execute_command_provider.commands
    assert {"lovia.run", "lovia.status", "lovia.deleteSession"} <= set(commands)


async def test_initialize_does_not_import_provider_sdks(harness, tmp_path):
    code = (
        "import sys, lovia_server.lsp.language_server as s; s.create_server();"
        "print('openai' in sys.modules, 'anthropic' in sys.modules)"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert out.decode().strip() == "False False"


async def test_status_reports_folders_acl_and_live_runs(harness):
    await harness.start(settings={"model": "openai:gpt-test", "permissions": {"preset": "trusted"}})
    status = await harness.request("lovia/status", {})
    assert status["version"] == lovia.__version__ and status["model"] == "openai:gpt-test"
    (folder,) = status["folders"]
    assert folder["path"] == str(harness.root) and folder["uri"] == harness.root.as_uri()
    assert folder["preset"] == "trusted" and folder["readOutside"] == "allow"
    assert ".env" in folder["deniedPaths"]
    assert status["liveRuns"] == [] and status["approvals"] == "events"


async def test_execute_command_aliases(harness):
    await harness.start()
    result = await harness.request(
        "workspace/executeCommand", lsp.ExecuteCommandParams(command="lovia.status", arguments=[{}])
    )
    assert result["version"] == lovia.__version__
    sessions = await harness.request(
        "workspace/executeCommand",
        lsp.ExecuteCommandParams(command="lovia.sessions", arguments=[{"limit": 5}]),
    )
    assert sessions == {"sessions": []}
    with pytest.raises(Exception) as info:
        await harness.request(
            "workspace/executeCommand",
            lsp.ExecuteCommandParams(command="lovia.replay", arguments=[{"runId": "r_nope"}]),
        )
    assert info.value.code == -32010


async def test_invalid_settings_are_reported_not_fatal(harness):
    await harness.start(settings={"maxTurns": -3, "permissions": {"preset": "bogus"}})
    status = await harness.request("lovia/status", {})
    assert any("maxTurns" in s for s in status["settingsProblems"])
    assert status["folders"][0]["preset"] == "coding"


async def test_configuration_change_applies_to_new_runs(harness):
    await harness.start(settings={"model": "openai:a"})
    harness.client.set_configuration({"model": "openai:b"}, section="lovia")
    harness.client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings=None)
    )
    for _ in range(100):
        if (await harness.request("lovia/status", {}))["model"] == "openai:b":
            break
        await asyncio.sleep(0.05)
    assert (await harness.request("lovia/status", {}))["model"] == "openai:b"
    harness.client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(settings={"lovia": {"model": "openai:pushed"}})
    )
    for _ in range(100):
        if (await harness.request("lovia/status", {}))["model"] == "openai:pushed":
            break
        await asyncio.sleep(0.05)
    assert (await harness.request("lovia/status", {}))["model"] == "openai:pushed"


async def test_workspace_folder_changes(harness, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    await harness.start()
    harness.client.workspace_did_change_workspace_folders(
        lsp.DidChangeWorkspaceFoldersParams(
            event=lsp.WorkspaceFoldersChangeEvent(
                added=[lsp.WorkspaceFolder(uri=other.as_uri(), name="other")], removed=[]
            )
        )
    )
    for _ in range(100):
        status = await harness.request("lovia/status", {})
        if len(status["folders"]) == 2:
            break
        await asyncio.sleep(0.05)
    paths = [f["path"] for f in status["folders"]]
    assert paths == [str(harness.root), str(other.resolve())]
    first = status["folders"][0]
    assert any(r["pattern"] == str(other.resolve()) for r in first["pathRules"])
    harness.write_agent(
        AGENT_HEADER + "agent = Agent(name='a', model=ScriptedProvider([text('hi')]))\n"
    )
    run = await harness.run(cwd=str(other), agent="agent.py:agent")
    assert run["status"] == "running"


async def _raw_server():
    env = {**os.environ}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lovia_server",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
    )
    return proc


async def _send(proc, message, raw=None):
    body = raw if raw is not None else json.dumps(message).encode()
    proc.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    await proc.stdin.drain()


async def _read(proc, msg_id):
    while True:
        message = await _read_one(proc)
        if message.get("id") == msg_id and "method" not in message:
            return message


async def _read_one(proc):
    length = 0
    while True:
        line = await proc.stdout.readline()
        if line in (b"\r\n", b""):
            break
        if line.lower().startswith(b"content-length"):
            length = int(line.split(b":")[1])
    return json.loads(await proc.stdout.readexactly(length))


async def test_request_before_initialize_and_malformed_frames():
    proc = await _raw_server()
    try:
        await _send(proc, None, raw=b"{not json")
        await _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "lovia/status", "params": {}})
        reply = await asyncio.wait_for(_read(proc, 1), 10)
        assert reply["error"]["code"] == -32002
        await _send(proc, {"jsonrpc": "2.0", "id": 2, "method": "lovia/nope", "params": {}})
        reply = await asyncio.wait_for(_read(proc, 2), 10)
        assert reply["error"]["code"] == -32601
        assert proc.returncode is None
    finally:
        proc.kill()
        await proc.wait()


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("lovia/run", {}, "prompt"),
        ("lovia/run", {"prompt": "   "}, "prompt"),
        ("lovia/run", {"prompt": "x", "sessionId": 5}, "sessionId"),
        ("lovia/run", {"prompt": "x", "context": [{"range": {}}]}, "context.0.uri"),
        ("lovia/steer", {"runId": "r"}, "message"),
        ("lovia/unsteer", {"runId": "r"}, "messageId"),
        ("lovia/approve", {"runId": "r", "approvalId": "a", "decision": "maybe"}, "decision"),
        ("lovia/answer", {"runId": "r", "questionId": "q"}, "answer"),
        ("lovia/cancel", {}, "runId"),
        ("lovia/resume", {"runId": ""}, "runId"),
        ("lovia/replay", {"runId": "r", "afterSeq": -1}, "afterSeq"),
        ("lovia/sessions", {"limit": 0}, "limit"),
        ("lovia/session", {}, "sessionId"),
        ("lovia/deleteSession", {"sessionId": 3}, "sessionId"),
        ("lovia/status", [], "params"),
    ],
)
async def test_bad_params_give_invalid_params_with_field(harness, method, params, field):
    await harness.start()
    with pytest.raises(Exception) as info:
        await harness.request(method, params)
    err = info.value
    assert getattr(err, "code", None) == -32602, err
    assert err.data["field"] == field


AGENT_FILE = """
from lovia import Agent
from lovia.testing import ScriptedProvider, text

agent = Agent(name="early", model=ScriptedProvider([text("served")]))
"""


async def test_a_run_sent_with_the_handshake_waits_for_the_runtime(tmp_path):
    """``initialize``, ``initialized`` and ``lovia/run`` in one write: the run arrives before
    the runtime has loaded, waits for it, and is served (not refused)."""
    from tests.support.raw_lsp import RawClient, frame

    root = tmp_path / "ws"
    root.mkdir()
    (root / "agent.py").write_text(AGENT_FILE)
    client = await RawClient.start(tmp_path / "logs")
    try:
        init = {
            "processId": None,
            "rootUri": root.as_uri(),
            "capabilities": {},
            "workspaceFolders": [{"uri": root.as_uri(), "name": "ws"}],
            "initializationOptions": {
                "lovia": {"client": "raw", "stateDir": str(tmp_path / "state")}
            },
        }
        messages = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
            {"jsonrpc": "2.0", "method": "initialized", "params": {}},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "lovia/run",
                "params": {"prompt": "hello", "agent": "agent.py:agent"},
            },
        ]
        client.expect(1)
        client.expect(2)
        await client.send_bytes(b"".join(frame(json.dumps(m).encode()) for m in messages))
        assert "result" in await client.answer(1)
        answer = await client.answer(2, within=60)
        assert "result" in answer, answer
        run_id = answer["result"]["runId"]
        for _ in range(1500):
            finished = [
                n["params"]
                for n in client.notifications
                if n["method"] == "lovia/event"
                and n["params"]["kind"] == "run.finished"
                and n["params"]["runId"] == run_id
            ]
            if finished:
                break
            await asyncio.sleep(0.02)
        assert finished and finished[0]["status"] == "completed", client.notifications
        texts = [
            n["params"]["text"]
            for n in client.notifications
            if n["method"] == "lovia/event" and n["params"]["kind"] == "message.completed"
        ]
        assert texts == ["served"]
        assert client.leaked_text() == []
    finally:
        await client.close()


SLOW_AGENT_FILE = """
import asyncio

from lovia import Agent
from lovia.transcript import TextDelta


class Slow:
    name = "slow"
    model = "slow"
    supports_json_schema = False

    async def stream(self, entries, **kw):
        yield TextDelta("thinking")
        await asyncio.sleep(60)


agent = Agent(name="slow", model=Slow())
"""


async def _slow_run_streaming(tmp_path):
    """A server whose one live run has streamed its first delta and now waits on its model."""
    from tests.support.raw_lsp import RawClient

    root = tmp_path / "ws"
    root.mkdir()
    (root / "agent.py").write_text(SLOW_AGENT_FILE)
    client = await RawClient.start(tmp_path / "logs")
    try:
        await client.initialize(root, tmp_path / "state")
        run = await client.request("lovia/run", {"prompt": "go", "agent": "agent.py:agent"})
        for _ in range(1500):
            if any(
                n["method"] == "lovia/event" and n["params"]["kind"] == "message.delta"
                for n in client.notifications
            ):
                break
            await asyncio.sleep(0.02)
    except BaseException:
        await client.close()
        raise
    return client, run["result"]["runId"]


def _finished(client):
    return [
        (n["params"]["runId"], n["params"]["status"], n["params"]["resumable"])
        for n in client.notifications
        if n["method"] == "lovia/event" and n["params"]["kind"] == "run.finished"
    ]


async def test_exit_right_after_shutdown_waits_for_it_and_leaves_no_traceback(tmp_path):
    """A client that sends ``exit`` without waiting for the ``shutdown`` answer (VS Code does
    after 2 s) while a run is live: the server finishes shutting down (the run is interrupted
    and stays resumable), answers, and exits 0 without a traceback on stderr."""
    from tests.support.raw_lsp import frame

    client, run_id = await _slow_run_streaming(tmp_path)
    try:
        shutdown = client.expect("bye")
        messages = [
            {"jsonrpc": "2.0", "id": "bye", "method": "shutdown"},
            {"jsonrpc": "2.0", "method": "exit"},
        ]
        started = time.monotonic()
        await client.send_bytes(b"".join(frame(json.dumps(m).encode()) for m in messages))
        answer = await asyncio.wait_for(asyncio.shield(shutdown), 30)
        # The run waits on its model: it is interrupted at once, not after the 5 s grace a
        # run between steps gets (an editor gives shutdown 2 s).
        assert time.monotonic() - started < 4
        code = await asyncio.wait_for(client.proc.wait(), 30)
        assert answer.get("result", "missing") is None
    finally:
        await client.close()
    assert code == 0
    assert "Traceback" not in client.stderr(), client.stderr()
    assert _finished(client) == [(run_id, "interrupted", True)]


async def test_sigterm_while_the_client_keeps_stdin_open_exits_promptly(tmp_path):
    """SIGTERM with a run live and the client's end of stdin still open: the run is
    interrupted, resumable, and the process exits (no read of stdin holds it)."""
    import signal

    client, run_id = await _slow_run_streaming(tmp_path)
    try:
        client.proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(client.proc.wait(), 20)
    finally:
        await client.close()
    assert code == 0
    assert "Traceback" not in client.stderr(), client.stderr()
    assert _finished(client) == [(run_id, "interrupted", True)]
