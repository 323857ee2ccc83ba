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


async def test_a_plan_mode_session_stays_in_plan_mode_after_a_crash(
    tmp_path: Path, ws: Path, fake_openai: FakeOpenAI
) -> None:
    """SIGKILL mid-turn in plan mode: the session loaded by a new process is in plan mode
    (the client is told so), and the interrupted turn continues without writing or asking."""
    env = {**fake_openai.env(), "LOVIA_MODEL": "openai:model-a"}
    (ws / "app.py").write_text("print('hi')\n")
    fake_openai.script(
        oai.tool_calls(oai.call("read_file", {"path": "app.py"}, id="read")),
        oai.text("never sent").stall(),
    )
    first = AcpProcess(tmp_path / "state", env=env)
    await first.start()
    sid = (await first.new_session(ws)).session_id
    await first.conn.set_session_mode(session_id=sid, mode_id="plan")
    turn = asyncio.ensure_future(first.prompt(sid, "plan it"))
    for _ in range(500):  # the stalled second model call has been asked
        if len([r for r in fake_openai.requests if r.path.endswith("/chat/completions")]) >= 2:
            break
        await asyncio.sleep(0.02)
    await first.kill()
    turn.cancel()

    fake_openai.reset()
    fake_openai.script(
        oai.tool_calls(
            oai.call("write_file", {"path": "x.txt", "content": "x"}, id="write"),
            oai.call("shell", {"command": "echo x > f"}, id="echo"),
        ),
        oai.text("1. Write x.txt"),
    )
    second = AcpProcess(tmp_path / "state", env=env)
    try:
        await second.start()
        c = second.client
        loaded = await second.conn.load_session(session_id=sid, cwd=str(ws), mcp_servers=[])
        assert loaded.modes is not None and loaded.modes.current_mode_id == "plan"
        await c.wait_for(
            lambda: [
                u
                for u in c.of(sid, "session_info_update")
                if u.field_meta["lovia"]["status"] != "running"
            ]
        )
        assert c.permissions == [] and c.writes == []
        ends = {u.tool_call_id: u for u in c.of(sid, "tool_call_update") if u.status}
        for refused in ("write", "echo"):
            assert "plan mode:" in ends[refused].raw_output["output"], ends[refused].raw_output
        assert not (ws / "x.txt").exists() and not (ws / "f").exists()
    finally:
        await second.stop()
