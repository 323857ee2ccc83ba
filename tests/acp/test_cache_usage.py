"""Cache health through ``lovia acp``: a real agent process against a local server speaking
Anthropic's wire format sends the session's cost in ``usage_update`` (ACP's ``cost``) with the
cached share in its ``_meta``, and the prompt's answer counts cache reads and writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acp.harness import AcpProcess
from tests.support import fake_anthropic as ant
from tests.support.fake_anthropic import FakeAnthropic

MODEL = "anthropic:claude-sonnet-4-5"


async def test_usage_updates_carry_the_session_cost_and_the_cached_share(
    tmp_path: Path, ws: Path, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.models = [{"id": "claude-sonnet-4-5", "max_input_tokens": 200_000}]
    fake_anthropic.script(
        ant.text("First.", usage=ant.usage(input=100, output=10, cache_write=3000)),
        ant.text("Second.", usage=ant.usage(input=50, output=10, cache_read=3000, cache_write=60)),
    )
    agent = AcpProcess(tmp_path / "state", env={**fake_anthropic.env(), "LOVIA_MODEL": MODEL})
    try:
        await agent.start()
        sid = (await agent.new_session(ws)).session_id
        first = await agent.prompt(sid, "one")
        second = await agent.prompt(sid, "two")
        updates = agent.client.of(sid, "usage_update")
    finally:
        await agent.stop()

    # $3 input, $0.30 read, $3.75 write, $15 output per million tokens
    one = (100 * 3.0 + 3000 * 3.75 + 10 * 15.0) / 1e6
    two = (50 * 3.0 + 3000 * 0.30 + 60 * 3.75 + 10 * 15.0) / 1e6
    assert first.usage is not None and first.usage.cached_write_tokens == 3000
    assert first.usage.cached_read_tokens is None
    assert second.usage is not None
    assert (second.usage.input_tokens, second.usage.cached_read_tokens) == (3110, 3000)
    assert second.field_meta["lovia"]["costUsd"] == pytest.approx(two, abs=1e-6)
    assert second.field_meta["lovia"]["sessionCostUsd"] == pytest.approx(one + two, abs=1e-6)

    assert len(updates) == 2 and {u.size for u in updates} == {200_000}
    assert updates[0].cost.currency == "USD"
    assert [u.cost.amount for u in updates] == pytest.approx([one, one + two], abs=1e-6)
    last = updates[-1].field_meta["lovia"]
    assert last["cacheReadTokens"] == 3000 and last["cacheWriteTokens"] == 60
    assert last["cachedShare"] == round(3000 / 3110, 3) and last["turnCachedShare"] == 0.965
