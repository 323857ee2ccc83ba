"""The two front doors run on one host core: the same settings give the same runs.

Each test drives the real language server (``tests.server.harness``) and the real ``lovia acp``
process with the same settings and compares what their runs did.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from acp import schema as a

from lovia_server.host.store import ServerStore
from tests.acp.harness import AcpProcess, message_text
from tests.server.harness import Harness
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_server import RecordedRequest, Reply

STDIO_SCRIPT = str(Path(__file__).resolve().parents[1] / "support" / "mcp_stdio_server.py")

USER_AGENT = """
from lovia import Agent
from lovia.testing import ScriptedProvider, text


def agent():
    return Agent(name="mine", model=ScriptedProvider([text("scripted answer")]))
"""


def _settings_file(tmp_path: Path, settings: dict[str, object]) -> str:
    path = tmp_path / "acp-settings.json"
    path.write_text(json.dumps(settings))
    return str(path)


async def _models_of(state_dir: Path) -> list[str | None]:
    store = ServerStore(state_dir / "state.db")
    await store.open()
    try:
        rows = await store.list_sessions(limit=10, offset=0, query=None)
        return [r.model for row in rows for r in await store.runs_for_session(row["id"])]
    finally:
        await store.close()


async def test_a_user_agents_model_is_labelled_the_same_by_both_doors(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    (ws / "agent.py").write_text(USER_AGENT)
    settings = {"agent": "agent.py:agent", "model": "openai:fake-model"}

    lsp = Harness(ws, tmp_path / "lsp-state")
    try:
        await lsp.start(settings=settings)
        run = await lsp.run("hello")
        done = await lsp.finished(run["runId"])
        assert done["status"] == "completed" and done["output"] == "scripted answer"
        started = next(e for e in lsp.of_run(run["runId"]) if e["kind"] == "run.started")
    finally:
        await lsp.stop()

    acp = AcpProcess(tmp_path / "acp-state", env=fake_openai.env())
    try:
        await acp.start("--settings", _settings_file(tmp_path, settings))
        sid = (await acp.new_session(ws)).session_id
        assert (await acp.prompt(sid, "hello")).stop_reason == "end_turn"
        assert message_text(acp.client.of(sid)) == "scripted answer"
    finally:
        await acp.stop()

    # the provider object's own name, not its class name, in both hosts' run records
    assert started["model"] == "scripted"
    assert await _models_of(tmp_path / "lsp-state") == ["scripted"]
    assert await _models_of(tmp_path / "acp-state") == ["scripted"]


async def test_an_mcp_server_that_cannot_start_fails_the_run_through_neither_door(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    failing = {"needsApproval": False, "command": sys.executable, "args": [STDIO_SCRIPT]}
    settings = {
        "model": "openai:fake-model",
        "mcpServers": {"down": {**failing, "args": [STDIO_SCRIPT, "--fail-start"]}},
    }
    fake_openai.script(oai.text("done without it"), oai.text("done without them"))

    lsp = Harness(ws, tmp_path / "lsp-state")
    try:
        await lsp.start(settings=settings, env=fake_openai.env())
        run = await lsp.run("go")
        done = await lsp.finished(run["runId"])
        statuses = [e for e in lsp.of_run(run["runId"]) if e["kind"] == "mcp.status"]
    finally:
        await lsp.stop()
    assert done["status"] == "completed" and done["output"] == "done without it"
    assert {e["server"] for e in statuses} == {"down"} and statuses[-1]["state"] == "failed"

    acp = AcpProcess(tmp_path / "acp-state", env=fake_openai.env())
    try:
        await acp.start("--settings", _settings_file(tmp_path, settings))
        own = a.McpServerStdio(
            name="mine", command=sys.executable, args=[STDIO_SCRIPT, "--fail-start"], env=[]
        )
        sid = (await acp.conn.new_session(cwd=str(ws), mcp_servers=[own])).session_id
        answer = await acp.prompt(sid, "go")
        thoughts = message_text(acp.client.of(sid), "agent_thought_chunk")
        said = message_text(acp.client.of(sid))
    finally:
        await acp.stop()
    assert answer.stop_reason == "end_turn" and said == "done without them"
    assert "MCP server down is failed" in thoughts and "MCP server mine is failed" in thoughts

    # and the model is told the same way which servers it cannot use
    lsp_system, acp_system = (
        r.json["messages"][0]["content"] for r in fake_openai.requests if r.method == "POST"
    )
    for system in (lsp_system, acp_system):
        assert "## Unavailable MCP servers" in system and "`down` is not available" in system
    assert "`mine` is not available" in acp_system


async def test_the_built_in_agent_has_subagents_in_lovia_acp_too(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """The ACP door builds the same built-in agent: a child run spawned over ACP reports back."""
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    child_prompt = "say hi from the child"

    def responder(request: RecordedRequest) -> Reply:
        messages = request.messages
        first_user = next(m.get("content") for m in messages if m.get("role") == "user")
        if child_prompt in str(first_user):
            return oai.text("hi from the child")
        done = sum(m.get("role") == "tool" for m in messages)
        if done == 0:
            return oai.tool_calls(oai.call("spawn_subagent", {"prompt": child_prompt}, id="s1"))
        if not any("hi from the child" in str(m.get("content")) for m in messages):
            return oai.tool_calls(oai.call("wait_subagents", {"timeout_seconds": 60}, id="w1"))
        return oai.text("the child said hi")

    fake_openai.responder = responder
    acp = AcpProcess(tmp_path / "acp-state", env=fake_openai.env())
    try:
        await acp.start("--settings", _settings_file(tmp_path, {"model": "openai:fake-model"}))
        sid = (await acp.new_session(ws)).session_id
        acp.client.answer(*["allow_once"] * 4)  # the spawn (and the wait) may ask
        assert (await acp.prompt(sid, "delegate")).stop_reason == "end_turn"
        said = message_text(acp.client.of(sid))
        thoughts = message_text(acp.client.of(sid), "agent_thought_chunk")
    finally:
        await acp.stop()
    assert said.endswith("the child said hi")
    first = next(r for r in fake_openai.requests if r.method == "POST")
    assert "spawn_subagent" in {t["function"]["name"] for t in first.json["tools"]}
    assert "hi from the child" in thoughts  # subagent.finished, with the start of its report


async def test_lovia_acp_has_no_editor_tools_and_does_not_mention_them(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """ACP has no client method for diagnostics or code navigation: the tools are absent."""
    ws = (tmp_path / "ws").resolve()
    ws.mkdir()
    fake_openai.script(oai.text("hi"))
    acp = AcpProcess(tmp_path / "acp-state", env=fake_openai.env())
    try:
        await acp.start("--settings", _settings_file(tmp_path, {"model": "openai:fake-model"}))
        sid = (await acp.new_session(ws)).session_id
        assert (await acp.prompt(sid, "hello")).stop_reason == "end_turn"
    finally:
        await acp.stop()
    first = next(r for r in fake_openai.requests if r.method == "POST").json
    names = {t["function"]["name"] for t in first["tools"]}
    assert "edit_file" in names
    assert not names & {"diagnostics", "go_to_definition", "find_references", "symbols"}
    system = first["messages"][0]["content"]
    assert "## Editor" not in system and "find_references" not in system
