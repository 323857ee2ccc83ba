"""Conformance: the Python SDK's client side drives `lovia acp` as a real subprocess."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.acp.harness import AcpProcess, message_text
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI


def todos(*items: tuple[str, str]) -> oai.Call:
    return oai.call(
        "todo_write", {"todos": [{"content": c, "status": s} for c, s in items]}, id=None
    )


async def test_prompt_tools_diffs_permissions_plan_and_cancel(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    (ws / "a.txt").write_text("one\ntwo\n")
    fake_openai.script(
        oai.tool_calls(
            oai.call(
                "todo_write",
                {
                    "todos": [
                        {"content": "Edit a.txt", "status": "in_progress"},
                        {"content": "Write b.txt", "status": "pending"},
                    ]
                },
                id="t1",
            )
        ),
        oai.tool_calls(
            oai.call("edit_file", {"path": "a.txt", "old": "one", "new": "uno"}, id="e1")
        ),
        oai.tool_calls(oai.call("write_file", {"path": "b.txt", "content": "bee\n"}, id="w1")),
        oai.tool_calls(
            oai.call(
                "todo_write",
                {
                    "todos": [
                        {"content": "Edit a.txt", "status": "completed"},
                        {"content": "Write b.txt", "status": "completed"},
                    ]
                },
                id="t2",
            )
        ),
        oai.text("Edited a.txt; ", "b.txt was declined."),
        oai.tool_calls(oai.call("shell", {"command": "sleep 30"}, id="s1")),
    )
    init = await agent.start(fs=False)
    assert init.protocol_version == 1
    assert init.agent_capabilities.load_session is True
    assert init.agent_capabilities.prompt_capabilities.embedded_context is True
    assert init.agent_info.name == "lovia"

    new = await agent.new_session(ws)
    sid = new.session_id
    assert new.modes.current_mode_id == "review"
    c = agent.client
    c.answer("allow_once", "reject_once")
    done = await agent.prompt(sid, "tidy up")
    assert done.stop_reason == "end_turn"

    # two permission requests: the edit (with its diff) allowed, the write rejected
    (edit_call, edit_opts), (write_call, _) = c.permissions
    assert edit_call.tool_call_id == "e1" and write_call.tool_call_id == "w1"
    assert {o.kind for o in edit_opts} == {
        "allow_once",
        "allow_always",
        "reject_once",
        "reject_always",
    }
    diff = edit_call.content[0]
    assert diff.type == "diff" and diff.old_text == "one\ntwo\n" and diff.new_text == "uno\ntwo\n"
    assert (ws / "a.txt").read_text() == "uno\ntwo\n"
    assert not (ws / "b.txt").exists()

    calls = {u.tool_call_id: u for u in c.of(sid, "tool_call")}
    assert calls["e1"].kind == "edit" and calls["e1"].locations[0].path == str(ws / "a.txt")
    assert calls["e1"].raw_input == {"path": "a.txt", "old": "one", "new": "uno"}
    ends = {
        u.tool_call_id: u
        for u in c.of(sid, "tool_call_update")
        if u.status in ("completed", "failed")
    }
    assert ends["e1"].status == "completed"
    assert any(x.type == "diff" and x.new_text == "uno\ntwo\n" for x in ends["e1"].content)
    assert ends["w1"].status == "failed"
    plans = c.of(sid, "plan")
    assert [[(e.content, e.status) for e in p.entries] for p in plans] == [
        [("Edit a.txt", "in_progress"), ("Write b.txt", "pending")],
        [("Edit a.txt", "completed"), ("Write b.txt", "completed")],
    ]
    assert message_text(c.of(sid)) == "Edited a.txt; b.txt was declined."

    # cancel while a command runs: the prompt ends `cancelled`
    c.answer("allow_once")
    turn = asyncio.ensure_future(agent.prompt(sid, "run it"))
    await c.wait_for(
        lambda: any(
            u.session_update == "tool_call_update"
            and u.tool_call_id == "s1"
            and u.status == "in_progress"
            for _, u in c.updates
        )
    )
    await agent.conn.cancel(session_id=sid)
    cancelled = await turn
    assert cancelled.stop_reason == "cancelled"
    assert [u for u in c.of(sid, "tool_call_update") if u.tool_call_id == "s1"][
        -1
    ].status == "failed"
    agent.frames()  # stdout held nothing but JSON-RPC frames
