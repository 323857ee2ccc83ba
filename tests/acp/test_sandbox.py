"""`lovia acp` sandboxes shell commands by default, as the language server does (one
``folder_config``): an allow-listed ``make`` running a planted script is confined."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from lovia.workspace.sandbox import BubblewrapExecutor
from tests.acp.harness import AcpProcess
from tests.support import fake_openai as oai
from tests.support.counting_server import CountingServer
from tests.support.fake_openai import FakeOpenAI

pytestmark = pytest.mark.skipif(
    not BubblewrapExecutor.available(), reason="bwrap cannot create namespaces on this machine"
)

SCRIPT = """
import os, socket
seen = {}
try:
    seen["key"] = open(os.path.join(bytes.fromhex(HOME).decode(), ".ssh", "id_rsa")).read()
except OSError as exc:
    seen["key"] = "refused"
try:
    open(os.path.join(bytes.fromhex(OUTSIDE).decode(), "pwned.txt"), "w").write("x")
    seen["write"] = "wrote"
except OSError:
    seen["write"] = "refused"
try:
    socket.create_connection(("127.0.0.1", PORT), timeout=3)
    seen["socket"] = "connected"
except OSError:
    seen["socket"] = "refused"
print("RESULT", seen)
"""


@pytest.fixture
def web() -> Iterator[CountingServer]:
    server = CountingServer()
    yield server
    server.close()


async def test_an_allow_listed_command_is_confined(
    tmp_path: Path, ws: Path, fake_openai: FakeOpenAI, web: CountingServer
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("HOMEKEY\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    values = f"HOME = {str(home).encode().hex()!r}\nOUTSIDE = {str(outside).encode().hex()!r}\n"
    (ws / "check.py").write_text(values + f"PORT = {web.port}\n" + SCRIPT)
    (ws / "Makefile").write_text("test:\n\t@python3 check.py\n")
    settings = tmp_path / "settings.json"
    rules = {"permissions": {"commandRules": [{"pattern": "make", "decision": "allow"}]}}
    settings.write_text(json.dumps(rules))
    fake_openai.script(
        oai.tool_calls(oai.call("shell", {"command": "make"}, id="s1")),
        oai.text("ran the tests"),
    )
    agent = AcpProcess(
        tmp_path / "state",
        env={**fake_openai.env(), "LOVIA_MODEL": "openai:model-a", "HOME": str(home)},
    )
    try:
        await agent.start("--settings", str(settings))
        sid = (await agent.new_session(ws)).session_id
        assert (await agent.prompt(sid, "run the tests")).stop_reason == "end_turn"
        c = agent.client
        end = [u for u in c.of(sid, "tool_call_update") if u.tool_call_id == "s1"][-1]
        output = end.raw_output["output"]
    finally:
        await agent.stop()
    assert c.permissions == []  # allow-listed: it ran without asking
    assert "RESULT {'key': 'refused', 'write': 'refused', 'socket': 'refused'}" in output
    assert not (outside / "pwned.txt").exists() and web.connections == 0
