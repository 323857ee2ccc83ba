"""Conformance: the TypeScript SDK (@agentclientprotocol/sdk) drives `lovia acp` from node.

The node script (tests/acp/ts/conformance.mjs) runs the client side and asserts what it sees;
this test runs the fake model it talks to and checks what reached the model. `./dev test`
installs the script's package (npm ci) before pytest runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lovia.stores import SQLiteSession
from lovia.transcript import InputEntry, ToolCallEntry, ToolResultEntry
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI

TS_DIR = Path(__file__).parent / "ts"


def _node_ready() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (TS_DIR / "node_modules" / "@agentclientprotocol" / "sdk").is_dir():
        return "run `npm ci` in tests/acp/ts (./dev test does)"
    return None


def _node(script: str, tmp_path: Path, ws: Path, fake_openai: FakeOpenAI) -> dict:
    missing = _node_ready()
    if missing:
        if os.environ.get("LOVIA_REQUIRE_ALL") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    agent = [sys.executable, "-m", "lovia_server.acp", "--state-dir", str(tmp_path / "state")]
    env = {
        **os.environ,
        **fake_openai.env(),
        "LOVIA_MODEL": "openai:model-a",
        "LOVIA_MODELS": "openai:model-b",
        "LOVIA_ACP_CMD": json.dumps(agent),
        "LOVIA_ACP_WS": str(ws),
    }
    done = subprocess.run(
        ["node", str(TS_DIR / script)],
        cwd=TS_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-8000:]
    summary: dict = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["ok"] is True
    return summary


def _todos(call_id: str, *items: tuple[str, str]) -> oai.Reply:
    todos = [{"content": c, "status": s} for c, s in items]
    return oai.tool_calls(oai.call("todo_write", {"todos": todos}, id=call_id))


def test_typescript_sdk_client(tmp_path: Path, ws: Path, fake_openai: FakeOpenAI) -> None:
    (ws / "a.txt").write_text("one\ntwo\n")
    (ws / "notes.md").write_text("saved on disk\n")
    edit = {"path": "notes.md", "old": "unsaved", "new": "edited"}
    fake_openai.script(
        _todos("t1", ("Edit a.txt", "in_progress"), ("Write b.txt", "pending")),
        oai.tool_calls(
            oai.call("edit_file", {"path": "a.txt", "old": "one", "new": "uno"}, id="e1")
        ),
        oai.tool_calls(oai.call("write_file", {"path": "b.txt", "content": "bee\n"}, id="w1")),
        _todos("t2", ("Edit a.txt", "completed"), ("Write b.txt", "completed")),
        oai.text("Edited a.txt."),
        oai.tool_calls(oai.call("read_file", {"path": "notes.md"}, id="r1")),
        oai.tool_calls(oai.call("edit_file", edit, id="e2")),
        oai.text("Notes edited."),
        oai.text("from b"),
        oai.tool_calls(oai.call("shell", {"command": "echo hi | tee /dev/null"}, id="s1")),
        oai.text("noted: tabs"),
        oai.tool_calls(oai.call("write_file", {"path": "x.txt", "content": "x"}, id="x1")),
        oai.text("could not write"),
        oai.tool_calls(oai.call("shell", {"command": "sleep 30"}, id="s2")),
    )
    summary = _node("conformance.mjs", tmp_path, ws, fake_openai)
    assert summary["replayed"] > summary["updates"]

    requests = [r.json for r in fake_openai.requests if r.path.endswith("/chat/completions")]
    assert len(requests) == 14
    # the unsaved buffer, not the disk, reached the model
    tools = [str(m.get("content")) for m in requests[6]["messages"] if m["role"] == "tool"]
    assert any("unsaved in the editor" in t for t in tools)
    assert not any("saved on disk" in t for t in tools)
    # the model switch, and the steer delivered at the turn boundary
    assert [r["model"] for r in requests[:8]] == ["model-a"] * 8
    assert {r["model"] for r in requests[8:]} == {"model-b"}
    users = [m["content"] for m in requests[10]["messages"] if m["role"] == "user"]
    assert users[-1].startswith("use tabs, not spaces")
    assert (ws / "notes.md").read_text() == "edited in the editor\n"


def test_typescript_sdk_client_resumes_after_sigkill(
    tmp_path: Path, ws: Path, fake_openai: FakeOpenAI
) -> None:
    (ws / "a.txt").write_text("one\n")
    edit = {"path": "a.txt", "old": "one", "new": "two"}
    fake_openai.script(
        oai.tool_calls(oai.call("edit_file", edit, id="e1")),
        oai.text("Changed one to two."),
    )
    summary = _node("crash.mjs", tmp_path, ws, fake_openai)
    requests = [r for r in fake_openai.requests if r.path.endswith("/chat/completions")]
    assert len(requests) == 2  # nothing was asked of the model twice
    store = SQLiteSession(tmp_path / "state" / "state.db")

    async def entries() -> list:
        try:
            return list(await store.load(summary["sessionId"]))
        finally:
            await store.aclose()

    stored = asyncio.run(entries())
    users = [e for e in stored if isinstance(e, InputEntry) and e.role == "user"]
    assert len(users) == 1
    assert [e.call_id for e in stored if isinstance(e, ToolCallEntry)] == ["e1"]
    assert [e.call_id for e in stored if isinstance(e, ToolResultEntry)] == ["e1"]
