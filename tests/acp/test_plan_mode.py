"""``lovia acp``'s "plan" session mode: a model that insists on writing changes nothing and
no permission is asked; back in "coding", the same write goes through the review."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.acp.harness import AcpProcess
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI


async def test_plan_mode_refuses_without_asking_then_coding_reviews(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    (ws / "app.py").write_text("print('hi')\n")
    fake_openai.script(
        oai.tool_calls(
            oai.call("read_file", {"path": "app.py"}, id="read"),
            oai.call("write_file", {"path": "x.txt", "content": "x"}, id="write"),
            oai.call("edit_file", {"path": "app.py", "old": "hi", "new": "bye"}, id="edit"),
            oai.call("shell", {"command": "echo x > f"}, id="echo"),
        ),
        oai.text("1. Write x.txt\n\nFiles to touch:\n- x.txt"),
        oai.tool_calls(oai.call("write_file", {"path": "x.txt", "content": "x"}, id="act")),
        oai.text("done"),
    )
    await agent.start()
    session = await agent.new_session(ws)
    sid = session.session_id
    assert "plan" in {m.id for m in session.modes.available_modes}
    await agent.conn.set_session_mode(session_id=sid, mode_id="plan")
    c = agent.client
    assert (await agent.prompt(sid, "plan it")).stop_reason == "end_turn"
    assert c.permissions == []
    ends = {u.tool_call_id: u for u in c.of(sid, "tool_call_update") if u.status}
    for refused in ("write", "edit", "echo"):
        assert ends[refused].status == "failed"
        assert "plan mode:" in ends[refused].raw_output["output"], ends[refused].raw_output
    assert ends["read"].status == "completed"
    assert not (ws / "x.txt").exists() and not (ws / "f").exists()
    assert (ws / "app.py").read_text() == "print('hi')\n"
    assert c.writes == []
    requests = [r.json for r in fake_openai.requests if r.path.endswith("/chat/completions")]
    assert "# Plan mode" in requests[0]["messages"][0]["content"]

    # act on the plan: the coding mode, the plan in the conversation, the write reviewed
    await agent.conn.set_session_mode(session_id=sid, mode_id="coding")
    turn = asyncio.ensure_future(agent.prompt(sid, "Act on this plan"))
    await c.wait_for(lambda: c.permissions)
    c.answer("allow_once")
    assert (await turn).stop_reason == "end_turn"
    assert len(c.permissions) == 1
    assert c.writes == [(str(ws / "x.txt"), "x")]
