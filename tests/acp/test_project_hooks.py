"""Project hooks through ``lovia acp``: a trusted workspace's PreToolUse hook blocks a call and
the model reads why; with ``--untrusted`` the workspace's hooks never run (a marker proves it)
while the user's own still do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.acp.harness import AcpProcess
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI


def _hooks(folder: Path, hooks: dict[str, Any]) -> None:
    (folder / ".lovia").mkdir(parents=True, exist_ok=True)
    (folder / ".lovia" / "hooks.json").write_text(json.dumps({"hooks": hooks}))


def _one(command: str, matcher: str = "") -> list[dict[str, Any]]:
    return [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]


def _sent(fake: FakeOpenAI) -> list[str]:
    return [
        json.dumps(r.json["messages"])
        for r in fake.requests
        if r.path.endswith("/chat/completions")
    ]


async def test_a_pre_tool_hook_blocks_through_acp(
    tmp_path: Path, ws: Path, fake_openai: FakeOpenAI
) -> None:
    _hooks(ws, {"PreToolUse": _one("echo 'no shell in this repo' >&2; exit 2", "Bash")})
    fake_openai.script(
        oai.tool_calls(oai.call("shell", {"command": "touch made"}, id="sh")),
        oai.text("done"),
    )
    agent = AcpProcess(
        tmp_path / "state",
        env={**fake_openai.env(), "LOVIA_MODEL": "openai:m", "HOME": str(tmp_path / "home")},
    )
    try:
        await agent.start()
        sid = (await agent.new_session(ws)).session_id
        assert (await agent.prompt(sid, "go")).stop_reason == "end_turn"
        assert agent.client.permissions == []
    finally:
        await agent.stop()
    assert not (ws / "made").exists()
    assert "no shell in this repo" in _sent(fake_openai)[1]


async def test_an_untrusted_workspace_runs_only_the_users_hooks_through_acp(
    tmp_path: Path, ws: Path, fake_openai: FakeOpenAI
) -> None:
    home = tmp_path / "home"
    marker = ws / "workspace-hook-ran"
    _hooks(ws, {"UserPromptSubmit": _one(f"touch {marker}; echo WORKSPACE HOOK")})
    _hooks(home, {"UserPromptSubmit": _one("echo USER HOOK")})
    fake_openai.script(oai.text("done"))
    agent = AcpProcess(
        tmp_path / "state",
        env={**fake_openai.env(), "LOVIA_MODEL": "openai:m", "HOME": str(home)},
    )
    try:
        await agent.start("--untrusted")
        sid = (await agent.new_session(ws)).session_id
        assert (await agent.prompt(sid, "hello")).stop_reason == "end_turn"
    finally:
        await agent.stop()
    sent = _sent(fake_openai)[0]
    assert "USER HOOK" in sent and "WORKSPACE HOOK" not in sent
    assert not marker.exists()
