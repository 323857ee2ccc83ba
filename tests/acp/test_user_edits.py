"""``lovia acp`` with a client that holds the user's unsaved buffers (``fs/read_text_file``,
``fs/write_text_file``): a ``write_file`` built from the agent's earlier read is refused once
the user changed the buffer, and nothing is written through the client (issue 36)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.acp.harness import AcpProcess
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI

OLD = "".join(f"line {i}\n" for i in range(1, 13))
USER = OLD.replace("line 10\n", "line 10 typed by the user\n")


async def test_a_write_from_a_stale_read_is_refused_and_the_user_buffer_kept(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    path = ws / "app.py"
    path.write_text(OLD)
    fake_openai.script(
        oai.tool_calls(oai.call("read_file", {"path": "app.py"}, id="r1")),
        oai.tool_calls(
            oai.call(
                "write_file",
                {"path": "app.py", "content": OLD.replace("line 3\n", "line three\n")},
                id="w1",
            )
        ),
        oai.text("ok"),
    )
    await agent.start(fs=True)
    sid = (await agent.new_session(ws)).session_id
    c = agent.client
    c.buffers[str(path)] = OLD
    turn = asyncio.ensure_future(agent.prompt(sid, "change line 3"))
    await c.wait_for(lambda: c.permissions)
    c.buffers[str(path)] = USER  # the user types while the permission is asked
    c.answer("allow_once")
    assert (await turn).stop_reason == "end_turn"
    assert c.writes == []
    assert c.buffers[str(path)] == USER and path.read_text() == OLD
    requests = [r.json for r in fake_openai.requests if r.path.endswith("/chat/completions")]
    told = [str(m.get("content")) for m in requests[2]["messages"] if m.get("role") == "tool"]
    assert "app.py changed since you last read it" in told[-1]
    assert "updated app.py" not in told[-1]
