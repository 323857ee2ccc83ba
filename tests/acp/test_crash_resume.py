"""SIGKILL `lovia acp` mid-turn; a new process on the same state resumes the session."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

import pytest

from lovia.stores import SQLiteSession
from lovia.transcript import AssistantTextEntry, InputEntry, ToolCallEntry, ToolResultEntry
from tests.acp.harness import AcpProcess, message_text
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI


async def _leave(process: AcpProcess, how: str) -> None:
    """End the first agent process the way ``how`` says: SIGKILL, SIGTERM or the client's EOF."""
    if how == "sigkill":
        await process.kill()
    elif how == "eof":
        await process.stop()
    else:
        assert process.proc is not None
        process.proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.proc.wait(), 30)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(process.conn.close(), 5)


@pytest.mark.parametrize(
    ("reopen", "how"),
    [("load", "sigkill"), ("resume", "sigkill"), ("load", "eof"), ("resume", "sigterm")],
)
async def test_sigkill_while_waiting_for_approval_then_resume_to_completion(
    tmp_path: Path, ws: Path, fake_openai: FakeOpenAI, reopen: str, how: str
) -> None:
    """However the agent process ends while an approval waits — SIGKILL, SIGTERM, the client
    closing the pipe — nobody decided it: the reopened session asks the same call again, and
    the model never receives a refusal."""
    env = {**fake_openai.env(), "LOVIA_MODEL": "openai:model-a"}
    (ws / "a.txt").write_text("one\n")
    fake_openai.script(
        oai.tool_calls(oai.call("read_file", {"path": "a.txt"}, id="r1")),
        oai.tool_calls(
            oai.call("edit_file", {"path": "a.txt", "old": "one", "new": "two"}, id="e1")
        ),
        oai.text("Changed one to two."),
    )
    first = AcpProcess(tmp_path / "state", env=env)
    await first.start()
    sid = (await first.new_session(ws)).session_id
    first.client.hold_permissions = True
    turn = asyncio.ensure_future(first.prompt(sid, "change one to two"))
    await first.client.wait_for(lambda: first.client.permissions)
    await _leave(first, how)  # while the edit waits for approval
    with contextlib.suppress(Exception):
        await turn
    assert (ws / "a.txt").read_text() == "one\n"

    second = AcpProcess(tmp_path / "state", env=env)
    try:
        await second.start()
        c = second.client
        c.answer("allow_once")  # the pending approval is asked again
        if reopen == "load":
            await second.conn.load_session(session_id=sid, cwd=str(ws), mcp_servers=[])
        else:
            await second.conn.resume_session(session_id=sid, cwd=str(ws), mcp_servers=[])
        end = await c.wait_for(
            lambda: [
                u
                for u in c.of(sid, "session_info_update")
                if u.field_meta["lovia"]["status"] != "running"
            ]
        )
        assert end[0].field_meta["lovia"]["status"] == "completed"
        ((asked, _),) = c.permissions
        assert asked.tool_call_id == "e1"
        assert (ws / "a.txt").read_text() == "two\n"
        assert message_text(c.of(sid)).endswith("Changed one to two.")
        if reopen == "resume":  # no history replayed, only the continuation
            assert c.of(sid, "user_message_chunk") == []
        second.frames()
    finally:
        await second.stop()

    # the stored conversation holds every entry exactly once
    store = SQLiteSession(tmp_path / "state" / "state.db")
    try:
        entries = list(await store.load(sid))
    finally:
        await store.aclose()
    users = [e for e in entries if isinstance(e, InputEntry) and e.role == "user"]
    calls = [e.call_id for e in entries if isinstance(e, ToolCallEntry)]
    results = [e.call_id for e in entries if isinstance(e, ToolResultEntry)]
    texts = [e.content for e in entries if isinstance(e, AssistantTextEntry)]
    assert len(users) == 1
    assert calls == ["r1", "e1"] and results == ["r1", "e1"]
    sent = [str(r.messages) for r in fake_openai.requests if r.messages]
    assert sent and not any("not approved" in t or "declined" in t for t in sent), sent
    assert texts == ["Changed one to two."]
    # three model calls in all: nothing was asked twice
    assert len([r for r in fake_openai.requests if r.path.endswith("/chat/completions")]) == 3
