"""A short run of ``bench/prompt_cache.py``'s session, so the benchmark keeps working.

Seven model turns (plan, list, read, test run, grep, read a module, answer) instead of 43: the
same agents, fakes and tools, in a few seconds. The figures are not the benchmark's; these
checks hold with caching off (today's default) and on.
"""

from __future__ import annotations

from bench import prompt_cache as bench
from bench.cache_session import STEPS
from tests.support.prompt_tokens import CacheTally

SHORT = [*STEPS[:6], STEPS[-1]]
VENDORS = bench.vendors(read_ratio=0.25)


async def test_the_framework_rows_run_the_whole_script(fresh_providers: None) -> None:
    tally, output, requests = await bench.run_framework(VENDORS["anthropic"], SHORT)
    assert output == SHORT[-1].text
    assert tally.requests == len(requests) == len(SHORT)
    assert 0 < tally.relative <= 1.0
    first = requests[0].json
    assert {"read_file", "edit_file", "shell", "todo_write"} <= {t["name"] for t in first["tools"]}
    assert "coding agent" in first["system"][0]["text"]
    results = [
        block["content"]
        for message in requests[-1].json["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert len(results) == len(SHORT) - 1
    assert "tests/test_money.py FF" in str(results[3])  # the real test run's output

    peer, answer = await bench.run_sdk_peer(requests, SHORT)
    assert answer == SHORT[-1].text
    assert peer.requests == len(SHORT)
    assert peer.cache_read > 0 and peer.relative < 0.6

    tally, output, _ = await bench.run_framework(VENDORS["openai"], SHORT)
    assert output == SHORT[-1].text
    assert tally.cache_read > 0 and tally.relative < 0.6


async def test_the_server_row_gives_the_framework_figure(fresh_providers: None) -> None:
    framework, _, _ = await bench.run_framework(VENDORS["anthropic"], SHORT)
    server, output = await bench.run_server(VENDORS["anthropic"], SHORT)
    assert output == SHORT[-1].text
    assert server.requests == len(SHORT)
    assert abs(server.relative - framework.relative) < 0.05


def test_the_table_lists_every_row() -> None:
    rows = [bench.Row("framework", "anthropic", CacheTally(), 0.1, "")]
    rows[0].tally.add(input=100, cache_read=900)
    text = bench.table(rows)
    assert "framework" in text and "0.190" in text
    assert rows[0].as_dict()["billed_relative"] == 0.19
