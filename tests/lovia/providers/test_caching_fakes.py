"""The caching fakes follow the vendors' documented prompt-cache rules, seen through the real SDKs.

These fakes decide the figures of ``bench/prompt_cache.py``; if they drifted from the rules the
benchmark would measure nothing, so each rule gets a case here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from tests.support import fake_anthropic as ant
from tests.support import fake_openai as oai
from tests.support.caching_anthropic import CachingAnthropic, prompt_blocks
from tests.support.caching_openai import MINIMUM, STEP, CachingOpenAI, prompt_bytes
from tests.support.prompt_tokens import count_tokens

MARK = {"type": "ephemeral"}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def caching_anthropic(clock: Clock) -> Iterator[CachingAnthropic]:
    server = CachingAnthropic(responder=lambda request: ant.text("ok"), clock=clock)
    with server:
        yield server


@pytest.fixture
def caching_openai(clock: Clock) -> Iterator[CachingOpenAI]:
    server = CachingOpenAI(responder=lambda request: oai.text("ok"), clock=clock)
    with server:
        yield server


def text(label: str, size: int = 400, *, mark: dict[str, Any] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": f"{label} " + "x" * size}
    if mark is not None:
        block["cache_control"] = mark
    return block


SYSTEM = [text("You are a careful coding agent.", 6000)]
"""About 1,500 tokens: above Sonnet's minimum, below Haiku's."""


def tokens(body: dict[str, Any]) -> int:
    return sum(b.tokens for b in prompt_blocks(body))


async def send(server: CachingAnthropic, **body: Any) -> Any:
    """One streamed request through the real SDK; the final message's usage."""
    body.setdefault("model", "claude-sonnet-4-5")
    body.setdefault("max_tokens", 100)
    extra = {"cache_control": body.pop("cache_control")} if "cache_control" in body else None
    client = anthropic.AsyncAnthropic(base_url=server.base_url, api_key="k", max_retries=0)
    try:
        async with client.messages.stream(**body, extra_body=extra) as stream:
            return (await stream.get_final_message()).usage
    finally:
        await client.close()


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(label: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [text(label, 200)]}


async def test_a_breakpoint_writes_and_the_next_turn_reads_it(
    caching_anthropic: CachingAnthropic,
) -> None:
    first = [user(text("u1", mark=MARK))]
    usage = await send(caching_anthropic, system=SYSTEM, messages=first)
    whole = tokens({"system": SYSTEM, "messages": first})
    assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (0, whole)
    assert usage.input_tokens == 0

    plain = [user(text("u1"))]
    second = [*plain, assistant("a1"), user(text("u2", mark=MARK), text("reminder", 50))]
    usage = await send(caching_anthropic, system=SYSTEM, messages=second)
    assert usage.cache_read_input_tokens == whole
    tail = tokens({"messages": [user(text("reminder", 50))]})
    assert usage.input_tokens == tail
    assert usage.cache_creation_input_tokens == tokens({"system": SYSTEM, "messages": second}) - (
        whole + tail
    )
    assert caching_anthropic.tally.requests == 2
    assert 0 < caching_anthropic.tally.relative < 1


async def test_no_breakpoint_no_cache(caching_anthropic: CachingAnthropic) -> None:
    for _ in range(2):
        usage = await send(caching_anthropic, system=SYSTEM, messages=[user(text("u1"))])
        assert usage.cache_read_input_tokens == 0 == usage.cache_creation_input_tokens
    assert caching_anthropic.tally.relative == 1.0


@pytest.mark.parametrize(("added", "hit"), [(19, True), (20, False)])
async def test_a_read_looks_back_twenty_blocks_from_a_breakpoint(
    caching_anthropic: CachingAnthropic, added: int, hit: bool
) -> None:
    head = [text(f"b{i}", 50) for i in range(5)]
    await send(
        caching_anthropic,
        system=SYSTEM,
        messages=[user(*head[:-1], dict(head[-1], cache_control=MARK))],
    )
    more = [text(f"c{i}", 50) for i in range(added)]
    more[-1]["cache_control"] = MARK
    usage = await send(caching_anthropic, system=SYSTEM, messages=[user(*head, *more)])
    written = tokens({"system": SYSTEM, "messages": [user(*head)]})
    assert usage.cache_read_input_tokens == (written if hit else 0)


async def test_a_second_breakpoint_bridges_a_long_turn(caching_anthropic: CachingAnthropic) -> None:
    head = [text(f"b{i}", 50) for i in range(5)]
    await send(
        caching_anthropic,
        system=SYSTEM,
        messages=[user(*head[:-1], dict(head[-1], cache_control=MARK))],
    )
    more = [text(f"c{i}", 50) for i in range(30)]
    more[10]["cache_control"] = MARK
    more[-1]["cache_control"] = MARK
    usage = await send(caching_anthropic, system=SYSTEM, messages=[user(*head, *more)])
    assert usage.cache_read_input_tokens == tokens({"system": SYSTEM, "messages": [user(*head)]})


async def test_prefixes_below_the_minimum_are_not_cached(
    caching_anthropic: CachingAnthropic,
) -> None:
    short = [text("short system", 200, mark=MARK)]
    for _ in range(2):
        usage = await send(caching_anthropic, system=short, messages=[user(text("u"))])
        assert usage.cache_read_input_tokens == 0 == usage.cache_creation_input_tokens
    # ~1,500 tokens: cached for Sonnet, too short for Haiku's 2,048.
    marked = [dict(SYSTEM[0], cache_control=MARK)]
    sonnet = await send(caching_anthropic, system=marked, messages=[user(text("u"))])
    haiku = await send(
        caching_anthropic, model="claude-haiku-4-5", system=marked, messages=[user(text("u"))]
    )
    assert sonnet.cache_creation_input_tokens > 1024
    assert haiku.cache_creation_input_tokens == 0


async def test_more_than_four_breakpoints_is_a_400(caching_anthropic: CachingAnthropic) -> None:
    blocks = [text(f"b{i}", 50, mark=MARK) for i in range(5)]
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4 blocks"):
        await send(caching_anthropic, system=SYSTEM, messages=[user(*blocks)])
    await send(caching_anthropic, system=SYSTEM, messages=[user(*blocks[:4])])


async def test_entries_expire_after_their_ttl_and_hits_refresh_them(
    caching_anthropic: CachingAnthropic, clock: Clock
) -> None:
    body = {"system": [dict(SYSTEM[0], cache_control=MARK)], "messages": [user(text("u"))]}
    await send(caching_anthropic, **body)
    clock.now += 299
    assert (await send(caching_anthropic, **body)).cache_read_input_tokens > 0
    clock.now += 299  # 598 s after the write, 299 after the refreshing hit
    assert (await send(caching_anthropic, **body)).cache_read_input_tokens > 0
    clock.now += 301
    usage = await send(caching_anthropic, **body)
    assert usage.cache_read_input_tokens == 0 and usage.cache_creation_input_tokens > 0

    hour_system = [text("Another system prompt.", 6000, mark={**MARK, "ttl": "1h"})]
    hour = {"system": hour_system, "messages": body["messages"]}
    usage = await send(caching_anthropic, **hour)
    assert usage.cache_creation.ephemeral_1h_input_tokens == usage.cache_creation_input_tokens
    clock.now += 1800
    assert (await send(caching_anthropic, **hour)).cache_read_input_tokens > 0
    assert caching_anthropic.tally.write_1h > 0


async def test_top_level_cache_control_marks_the_last_block(
    caching_anthropic: CachingAnthropic,
) -> None:
    first = [user(text("u1"))]
    usage = await send(caching_anthropic, system=SYSTEM, messages=first, cache_control=MARK)
    assert usage.cache_creation_input_tokens == tokens({"system": SYSTEM, "messages": first})
    second = [*first, assistant("a1"), user(text("u2"))]
    usage = await send(caching_anthropic, system=SYSTEM, messages=second, cache_control=MARK)
    assert usage.cache_read_input_tokens == tokens({"system": SYSTEM, "messages": first})
    assert usage.input_tokens == 0


async def test_tools_come_first_in_the_prefix(caching_anthropic: CachingAnthropic) -> None:
    tool = {"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}
    body = {"system": [dict(SYSTEM[0], cache_control=MARK)], "messages": [user(text("u"))]}
    await send(caching_anthropic, tools=[tool], **body)
    assert (await send(caching_anthropic, tools=[tool], **body)).cache_read_input_tokens > 0
    changed = dict(tool, description="Read a file (changed).")
    assert (await send(caching_anthropic, tools=[changed], **body)).cache_read_input_tokens == 0


# --------------------------------------------------------------------------- OpenAI


async def chat(server: CachingOpenAI, messages: list[dict[str, Any]], **extra: Any) -> Any:
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    try:
        completions: Any = client.chat.completions
        stream = await completions.create(
            model="gpt-4.1",
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
            extra_body=extra or None,
        )
        usage = None
        async for chunk in stream:
            usage = chunk.usage or usage
        return usage
    finally:
        await client.close()


def sized(role: str, tokens_wanted: int, label: str = "") -> dict[str, Any]:
    return {"role": role, "content": label + "y" * (tokens_wanted * 4 - len(label))}


def steps_of(total: int) -> int:
    return 0 if total < MINIMUM else MINIMUM + STEP * ((total - MINIMUM) // STEP)


async def test_openai_caches_prefixes_of_1024_tokens_in_128_token_steps(
    caching_openai: CachingOpenAI,
) -> None:
    small = [sized("system", 900)]
    for _ in range(2):
        usage = await chat(caching_openai, small)
        assert usage.prompt_tokens_details.cached_tokens == 0
    first = [sized("system", 1500)]
    total = count_tokens(prompt_bytes({"model": "gpt-4.1", "messages": first}))
    usage = await chat(caching_openai, first)
    assert (usage.prompt_tokens, usage.prompt_tokens_details.cached_tokens) == (total, 0)
    usage = await chat(caching_openai, first)
    assert usage.prompt_tokens_details.cached_tokens == steps_of(total) == 1408
    longer = [*first, sized("user", 700)]
    usage = await chat(caching_openai, longer)
    assert usage.prompt_tokens_details.cached_tokens == steps_of(total)
    changed = [sized("system", 1500, "changed ")]
    assert (await chat(caching_openai, changed)).prompt_tokens_details.cached_tokens == 0
    assert caching_openai.tally.cache_read == 2 * 1408


async def test_openai_entries_expire_when_idle(caching_openai: CachingOpenAI, clock: Clock) -> None:
    messages = [sized("system", 1500)]
    await chat(caching_openai, messages)
    clock.now += 301
    assert (await chat(caching_openai, messages)).prompt_tokens_details.cached_tokens == 0


@pytest.mark.parametrize(("keys", "third_hits"), [((None, None), False), (("a", "b"), True)])
async def test_prompt_cache_key_keeps_a_conversation_on_its_shard_under_load(
    clock: Clock, keys: tuple[str | None, str | None], third_hits: bool
) -> None:
    """Conversations sharing a head route together unless keyed; past ``overflow_rpm`` a
    routing hash spills over to other shards, where its prefix is not cached."""
    server = CachingOpenAI(
        responder=lambda request: oai.text("ok"), clock=clock, shards=4, overflow_rpm=3
    )
    with server:
        head = sized("system", 1500)
        a = [head, sized("user", 300, "conversation a ")]
        b = [head, sized("user", 300, "conversation b ")]

        def key(k: str | None) -> dict[str, Any]:
            return {"prompt_cache_key": k} if k else {}

        await chat(server, a, **key(keys[0]))
        assert (await chat(server, a, **key(keys[0]))).prompt_tokens_details.cached_tokens > 0
        await chat(server, b, **key(keys[1]))
        third = await chat(server, a, **key(keys[0]))
        assert (third.prompt_tokens_details.cached_tokens > 0) is third_hits
