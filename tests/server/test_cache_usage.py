"""Cache health on the wire: usage events carry cache reads and writes per turn and per run,
and what the run and its session cost with cache pricing, from a real server run against a
local server speaking Anthropic's wire format."""

from __future__ import annotations

import pytest

from lovia.messages import Usage
from lovia_server.host.prices import DEFAULT_PRICES, Price, price_for
from tests.support import fake_anthropic as ant

SONNET = DEFAULT_PRICES["anthropic:claude-sonnet-4-5"]


def test_anthropic_cache_prices_are_a_tenth_and_five_quarters_of_input():
    for name, price in DEFAULT_PRICES.items():
        if name.startswith("anthropic:"):
            assert price.cache_read == pytest.approx(price.input * 0.1), name
            assert price.cache_write == pytest.approx(price.input * 1.25), name
        else:  # OpenAI bills no writes; every model of the table has its cached-input price
            assert price.cache_write is None and price.cache_read is not None, name
            assert price.cache_read < price.input, name


def test_a_provider_variant_takes_its_family_price_and_the_long_ttl_doubles_writes():
    assert price_for("openai-responses:gpt-5.1-codex") == DEFAULT_PRICES["openai:gpt-5.1-codex"]
    assert price_for("openai-responses:my-own") is None
    long = price_for("anthropic:claude-sonnet-4-5-20250929", long_cache=True)
    assert long == Price(3.0, 15.0, 0.30, 6.0)
    # 1,000 tokens written at the 1h TTL cost 2x input; a setting's own price is kept.
    assert long.cost(Usage(input_tokens=1000, cache_write_tokens=1000)) == pytest.approx(0.006)
    mine = Price(1.0, 1.0, 0.1, 1.25)
    assert price_for("anthropic:x", {"anthropic:x": mine}, long_cache=True) is mine
    assert price_for("openai:gpt-5", long_cache=True) == DEFAULT_PRICES["openai:gpt-5"]


def _cost(price: Price, *, plain: int, read: int = 0, write: int = 0, output: int = 0) -> float:
    assert price.cache_read is not None and price.cache_write is not None
    return (
        plain * price.input
        + read * price.cache_read
        + write * price.cache_write
        + output * price.output
    ) / 1_000_000


async def test_usage_events_carry_cache_reads_writes_and_the_session_cost(harness, fake_anthropic):
    (harness.root / "notes.txt").write_text("cache me\n")
    fake_anthropic.script(
        # run 1, turn 1: the prefix is written to the cache
        ant.tool_use(
            ant.tool_block("read_file", {"path": "notes.txt"}, id="toolu_1"),
            usage=ant.usage(input=100, output=20, cache_write=4000),
        ),
        # run 1, turn 2: read back, the new tail written
        ant.text(
            "Read it.", usage=ant.usage(input=50, output=10, cache_read=4000, cache_write=150)
        ),
        # run 2: almost all of it from the cache
        ant.text("Again.", usage=ant.usage(input=30, output=5, cache_read=4150, cache_write=80)),
    )
    await harness.start(settings={"model": "anthropic:claude-sonnet-4-5"}, env=fake_anthropic.env())
    first = await harness.run("read notes.txt")
    done = await harness.approve_all(first["runId"])
    assert done["status"] == "completed", done

    updates = [e for e in harness.of_run(first["runId"]) if e["kind"] == "usage.updated"]
    assert [u["turn"] for u in updates] == [
        {"inputTokens": 4100, "outputTokens": 20, "cacheReadTokens": 0, "cacheWriteTokens": 4000},
        {
            "inputTokens": 4200,
            "outputTokens": 10,
            "cacheReadTokens": 4000,
            "cacheWriteTokens": 150,
        },
    ]
    last = updates[-1]
    assert (last["inputTokens"], last["cacheReadTokens"], last["cacheWriteTokens"]) == (
        8300,
        4000,
        4150,
    )
    run_one = _cost(SONNET, plain=150, read=4000, write=4150, output=30)
    assert last["costUsd"] == pytest.approx(run_one, abs=1e-6)
    assert last["sessionCostUsd"] == pytest.approx(run_one, abs=1e-6)
    usage = done["usage"]
    assert usage["cacheWriteTokens"] == 4150 and usage["costUsd"] == pytest.approx(
        run_one, abs=1e-6
    )
    assert "turn" not in usage  # the run's end carries the totals only

    second = await harness.run("again", sessionId=first["sessionId"])
    again = await harness.finished(second["runId"])
    run_two = _cost(SONNET, plain=30, read=4150, write=80, output=5)
    assert again["usage"]["costUsd"] == pytest.approx(run_two, abs=1e-6)
    assert again["usage"]["sessionCostUsd"] == pytest.approx(run_one + run_two, abs=1e-6)
    # The stored records keep the cache counts (rows of older versions read as zero).
    view = await harness.request("lovia/session", {"sessionId": first["sessionId"]})
    assert [r["usage"]["cacheReadTokens"] for r in view["runs"]] == [4000, 4150]
