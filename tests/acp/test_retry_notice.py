"""ACP: a model call that is retried is said as a thought before the retry is made, through
`lovia acp` as a real subprocess and the real openai SDK against the fake server (issue 40)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.acp.harness import AcpProcess, message_text
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI


async def test_a_rate_limited_call_is_announced_as_a_thought_before_the_retry(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(oai.rate_limited("4"), oai.text("all ", "good"))
    await agent.start(fs=False)
    sid = (await agent.new_session(ws)).session_id
    prompt = asyncio.ensure_future(agent.prompt(sid, "hi"))
    c = agent.client
    note = await c.wait_for(
        lambda: next(
            (
                u.content.text
                for u in c.of(sid, "agent_thought_chunk")
                if "retrying" in u.content.text
            ),
            None,
        )
    )
    assert len(fake_openai.stream_requests()) == 1  # said before the retry
    assert "HTTP 429" in note and "attempt 2 of 5" in note and "retrying in 4.0 s" in note
    done = await prompt
    assert done.stop_reason == "end_turn"
    assert message_text(c.of(sid)) == "all good"
    assert len(fake_openai.stream_requests()) == 2
