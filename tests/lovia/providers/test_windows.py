from __future__ import annotations

import pytest

from lovia.providers._windows import (
    WindowResolver,
    strip_snapshot,
    table_window,
    window_from_error,
    window_from_models_payload,
)


@pytest.mark.parametrize(
    ("body", "window"),
    [
        ("This model's maximum context length is 128000 tokens. However, ...", 128_000),
        ("prompt is too long: 210000 tokens > 200000 maximum", 200_000),
        ("the context length is only 4,096 tokens", 4096),
        ("maximum input length of 32768 tokens", 32_768),
        ("input must not exceed 8192 tokens", 8192),
        ("max_tokens must be <= 16384", 16_384),
        ('{"message": "exceed_context_size_error", "n_ctx": 4096}', 4096),
        ("exceed context limit: 70000 > 65536, shorten", 65_536),
    ],
)
def test_window_from_error_bodies(body: str, window: int) -> None:
    assert window_from_error(body) == window


def test_window_from_error_ignores_rate_limits_and_implausible_numbers() -> None:
    assert (
        window_from_error("Rate limit: 30000 tokens per minute, maximum context length is 9000")
        is None
    )
    assert window_from_error("maximum context length is 12 tokens") is None
    assert window_from_error("") is None
    assert window_from_error(None) is None


def test_smallest_reported_window_wins() -> None:
    body = "maximum context length is 200000; must not exceed 100000"
    assert window_from_error(body) == 100_000


def test_models_payload_fields_in_priority_order() -> None:
    payload = {
        "data": [
            {"id": "a", "max_model_len": 32768, "context_length": 4096},
            {"id": "b", "top_provider": {"context_length": 65536}, "context_length": 4096},
            {"id": "c", "loaded_context_length": 8192, "max_context_length": 131072},
            {"id": "d", "context_window": True},
            {"id": "llama3:8b", "context_length": 8192},
        ]
    }
    assert window_from_models_payload(payload, "a") == 32768
    assert window_from_models_payload(payload, "b") == 65536
    assert window_from_models_payload(payload, "c") == 8192
    assert window_from_models_payload(payload, "d") is None
    assert window_from_models_payload(payload, "llama3:8b") == 8192
    assert window_from_models_payload(payload, "missing") is None
    assert window_from_models_payload({"data": "nope"}, "a") is None


def test_table_lookup_exact_then_snapshot_then_longest_prefix() -> None:
    rules = {"gpt-5": 400_000, "claude-": 100_000, "claude-opus-": 200_000}
    assert table_window("gpt-5", rules) == 400_000
    assert table_window("gpt-5-2025-08-07", rules) == 400_000
    assert table_window("gpt-5-mini", rules) is None
    assert table_window("claude-opus-4-1", rules) == 200_000
    assert table_window("claude-haiku-4", rules) == 100_000
    assert strip_snapshot("claude-3-5-sonnet-20241022") == "claude-3-5-sonnet"


async def test_resolver_probes_once_per_endpoint_and_remembers_hits() -> None:
    calls = 0

    async def fetch() -> int | None:
        nonlocal calls
        calls += 1
        return 32768

    table = {"localhost": {"m": 4096}}
    first = WindowResolver(
        base_url="http://x/v1", host="localhost", model="m", table=table, probe=True
    )
    assert first.window() == 4096
    assert await first.discover(fetch) == 32768
    second = WindowResolver(
        base_url="http://x/v1", host="localhost", model="m", table=table, probe=True
    )
    assert second.window() == 32768
    assert await second.discover(fetch) == 32768
    assert calls == 1


async def test_resolver_without_probe_uses_the_table() -> None:
    async def fetch() -> int | None:
        raise AssertionError("must not probe")

    resolver = WindowResolver(
        base_url="https://api.openai.com/v1",
        host="api.openai.com",
        model="gpt-5",
        table={"api.openai.com": {"gpt-5": 400_000}},
        probe=False,
    )
    assert await resolver.discover(fetch) == 400_000


async def test_failed_probe_falls_back_and_is_not_repeated() -> None:
    calls = 0

    async def fetch() -> int | None:
        nonlocal calls
        calls += 1
        raise OSError("down")

    resolver = WindowResolver(base_url="http://y/v1", host="y", model="m", table={}, probe=True)
    assert await resolver.discover(fetch) is None
    assert await resolver.discover(fetch) is None
    assert calls == 1
