"""Provider options for the built-in agent: ``promptCaching``, ``promptCacheTtl`` and
``providerOptions`` become its ``ModelSettings.provider_options`` and reach the request a real
server sends to a local server speaking the provider's wire format."""

from __future__ import annotations

import json

import pytest

from lovia_server.protocol.settings import LoviaSettings, parse_settings
from tests.support import fake_anthropic as ant
from tests.support import fake_openai as oai


def test_the_caching_settings_become_the_providers_options():
    assert LoviaSettings().provider_options() == {}
    off, problems = parse_settings({"promptCaching": False})
    assert problems == []
    assert off.provider_options() == {
        "anthropic": {"cache": False},
        "openai": {"prompt_cache_key": None},
        "openai-responses": {"prompt_cache_key": None},
    }
    assert not off.long_cache()
    hour, _ = parse_settings({"promptCacheTtl": "1h"})
    assert hour.provider_options() == {"anthropic": {"cache_ttl": "1h"}} and hour.long_cache()
    # providerOptions go over them, per provider and per key.
    mixed, _ = parse_settings(
        {
            "promptCacheTtl": "1h",
            "providerOptions": {
                "anthropic": {"cache_ttl": "5m", "thinking": {"type": "disabled"}},
                "openai": {"prompt_cache_key": "team-repo"},
            },
        }
    )
    assert mixed.provider_options() == {
        "anthropic": {"cache_ttl": "5m", "thinking": {"type": "disabled"}},
        "openai": {"prompt_cache_key": "team-repo"},
    }
    assert not mixed.long_cache()


def test_bad_provider_settings_are_problems_and_leave_the_rest():
    settings, problems = parse_settings(
        {"promptCacheTtl": "1d", "providerOptions": {"openai": {"model": "gpt-5"}}, "maxTurns": 7}
    )
    assert settings.maxTurns == 7
    assert settings.promptCacheTtl == "5m" and settings.providerOptions == {}
    assert any(p.startswith("lovia.promptCacheTtl") for p in problems)
    assert any("providerOptions" in p and "model" in p for p in problems)
    _, problems = parse_settings({"providerOptions": {"openai": "not an object"}})
    assert problems and "providerOptions.openai" in problems[0]


def _bodies(server) -> list[dict]:
    return [r.json for r in server.requests if r.method == "POST"]


async def test_a_prompt_cache_key_from_the_settings_reaches_the_openai_request(
    harness, fake_openai
):
    fake_openai.script(oai.text("one"))
    await harness.start(
        settings={
            "model": "openai:fake-model",
            "providerOptions": {"openai": {"prompt_cache_key": "team-repo"}},
        },
        env=fake_openai.env(),
    )
    run = await harness.run("hello")
    assert (await harness.finished(run["runId"]))["status"] == "completed"
    (body,) = _bodies(fake_openai)
    assert body["prompt_cache_key"] == "team-repo"


async def test_caching_off_sends_no_cache_key_to_openai(harness, fake_openai):
    fake_openai.script(oai.text("one"))
    await harness.start(
        settings={"model": "openai:fake-model", "promptCaching": False}, env=fake_openai.env()
    )
    run = await harness.run("hello")
    assert (await harness.finished(run["runId"]))["status"] == "completed"
    (body,) = _bodies(fake_openai)
    assert "prompt_cache_key" not in body


async def test_caching_off_marks_nothing_in_the_anthropic_request(harness, fake_anthropic):
    fake_anthropic.script(ant.text("one"))
    await harness.start(
        settings={"model": "anthropic:claude-sonnet-4-5", "promptCaching": False},
        env=fake_anthropic.env(),
    )
    run = await harness.run("hello")
    assert (await harness.finished(run["runId"]))["status"] == "completed"
    (body,) = _bodies(fake_anthropic)
    assert "cache_control" not in json.dumps(body)


async def test_the_hour_ttl_is_priced_at_twice_the_input_for_writes(harness, fake_anthropic):
    fake_anthropic.script(
        ant.text("one", usage=ant.usage(input=0, output=0, cache_write=1_000_000))
    )
    await harness.start(
        settings={"model": "anthropic:claude-sonnet-4-5", "promptCacheTtl": "1h"},
        env=fake_anthropic.env(),
    )
    run = await harness.run("hello")
    usage = (await harness.finished(run["runId"]))["usage"]
    # Sonnet 4.5's input is $3 per million: a million tokens written for an hour cost $6.
    assert usage["cacheWriteTokens"] == 1_000_000
    assert usage["costUsd"] == pytest.approx(6.0 + 15.0 * usage["outputTokens"] / 1e6)


@pytest.mark.parametrize(("settings", "ttl"), [({}, None), ({"promptCacheTtl": "1h"}, "1h")])
async def test_the_built_in_agent_marks_its_anthropic_request_for_the_cache(
    harness, fake_anthropic, settings, ttl
):
    fake_anthropic.script(ant.text("one"))
    await harness.start(
        settings={"model": "anthropic:claude-sonnet-4-5", **settings}, env=fake_anthropic.env()
    )
    run = await harness.run("hello")
    assert (await harness.finished(run["runId"]))["status"] == "completed"
    (body,) = _bodies(fake_anthropic)
    text = json.dumps(body)
    marks = list(_marks(body))
    assert 1 <= len(marks) <= 4
    assert "cache_ttl" not in text and '"cache": ' not in text
    assert {m.get("ttl") for m in marks} == {ttl}


def _marks(value):
    if isinstance(value, dict):
        if isinstance(value.get("cache_control"), dict):
            yield value["cache_control"]
        for v in value.values():
            yield from _marks(v)
    elif isinstance(value, list):
        for v in value:
            yield from _marks(v)
