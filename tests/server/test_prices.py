"""Cost per run: usage times the model's price from the built-in table or lovia.modelPrices."""

from __future__ import annotations

import pytest

from lovia.messages import Usage
from lovia_server.host.prices import DEFAULT_PRICES, Price, price_for, prices_from_settings
from lovia_server.protocol.settings import parse_settings
from tests.support import fake_openai as oai


def test_price_lookup_takes_the_setting_then_the_table_and_dated_names():
    assert price_for("openai:gpt-4.1-mini") == DEFAULT_PRICES["openai:gpt-4.1-mini"]
    assert (
        price_for("anthropic:claude-sonnet-4-5-20250929")
        == DEFAULT_PRICES["anthropic:claude-sonnet-4-5"]
    )
    assert price_for("openai:gpt-4.1-mini-2025-04-14") == DEFAULT_PRICES["openai:gpt-4.1-mini"]
    assert price_for("openai:my-local-model") is None and price_for(None) is None
    mine = Price(1.0, 2.0)
    assert price_for("openai:gpt-4.1-mini", {"openai:gpt-4.1-mini": mine}) is mine


def test_cost_prices_cached_input_apart():
    usage = Usage(input_tokens=1_000_000, output_tokens=500_000, cache_read_tokens=400_000)
    price = Price(input=2.0, output=8.0, cache_read=0.5)
    assert price.cost(usage) == pytest.approx(0.6 * 2.0 + 0.4 * 0.5 + 0.5 * 8.0)
    assert Price(1.0, 1.0).cost(Usage(input_tokens=10, cache_read_tokens=10)) == pytest.approx(1e-5)


def test_price_settings_are_typed_and_a_bad_one_is_a_problem_not_fatal():
    settings, problems = parse_settings(
        {"modelPrices": {"a:ok": {"input": 1, "output": 2, "cacheRead": 0.1}}, "maxTurns": 3}
    )
    assert problems == []
    assert prices_from_settings(settings.modelPrices) == {"a:ok": Price(1.0, 2.0, 0.1)}
    settings, problems = parse_settings({"modelPrices": {"m:y": {"input": "free"}}, "maxTurns": 3})
    assert settings.maxTurns == 3 and settings.modelPrices == {}
    assert problems and "modelPrices.m:y" in problems[0]


async def test_runs_report_their_cost_with_a_price_from_the_settings(harness, fake_openai):
    fake_openai.script(oai.text("one"), oai.text("two"))
    await harness.start(
        settings={
            "model": "openai:fake-model",
            "modelPrices": {"openai:fake-model": {"input": 3, "output": 15}},
        },
        env=fake_openai.env(),
    )
    first = await harness.run("hello")
    done = await harness.finished(first["runId"])
    usage = done["usage"]
    expected = (usage["inputTokens"] * 3 + usage["outputTokens"] * 15) / 1_000_000
    assert usage["inputTokens"] > 0 and usage["costUsd"] == pytest.approx(expected)
    updated = [e for e in harness.of_run(first["runId"]) if e["kind"] == "usage.updated"][-1]
    assert updated["costUsd"] == pytest.approx(expected)
    # The stored run record keeps it (what the panel sums per session).
    view = await harness.request("lovia/session", {"sessionId": first["sessionId"]})
    assert view["runs"][0]["usage"]["costUsd"] == pytest.approx(expected)


async def test_an_unknown_model_has_usage_but_no_cost(harness, fake_openai):
    fake_openai.script(oai.text("hi"))
    await harness.start(settings={"model": "openai:fake-model"}, env=fake_openai.env())
    run = await harness.run("hello")
    usage = (await harness.finished(run["runId"]))["usage"]
    assert usage["inputTokens"] > 0 and "costUsd" not in usage
