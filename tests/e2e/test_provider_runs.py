"""Whole runs through Runner.stream against the fake vendor servers, over real HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Any

from pydantic import BaseModel

from lovia import Agent, RetryPolicy, Runner, events, tool
from lovia.exceptions import ContextOverflowError
from lovia.providers.openai import OpenAIChatProvider
from tests.support import fake_anthropic as ant
from tests.support import fake_openai as oai
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeOpenAI


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def calculator(model: Any, **kw: Any) -> Agent[Any]:
    return Agent(
        name="calc",
        instructions="Use the add tool.",
        model=model,
        tools=[add],
        retry=RetryPolicy(max_attempts=3, backoff_base=0.0),
        **kw,
    )


async def stream(agent: Agent[Any], text: str) -> list[events.Event]:
    handle = Runner.stream(agent, text)
    seen = [event async for event in handle]
    await handle.result()
    return seen


def kinds(seen: list[events.Event]) -> list[str]:
    return [type(e).__name__ for e in seen if not isinstance(e, events.TextDelta)]


async def test_openai_agent_with_parallel_tools(openai_env: FakeOpenAI) -> None:
    openai_env.script(
        oai.tool_calls(
            oai.call("add", {"a": 2, "b": 3}, id="c1"),
            oai.call("add", {"a": 1, "b": 1}, id="c2"),
            chunk_size=4,
        ),
        oai.text("The sums are ", "5 and 2."),
    )
    seen = await stream(calculator("openai:fake-model"), "add 2+3 and 1+1")
    assert kinds(seen).count("ToolCallCompleted") == 2
    done = seen[-1]
    assert isinstance(done, events.RunCompleted)
    assert done.result.output == "The sums are 5 and 2."
    assert [m.role for m in done.result.messages] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    second = openai_env.stream_requests()[1].json
    assert second["messages"][0] == {"role": "system", "content": "Use the add tool."}
    assert second["tools"][0]["function"]["name"] == "add"
    results = {m["tool_call_id"]: m["content"] for m in second["messages"] if m["role"] == "tool"}
    assert results == {"c1": "5", "c2": "2"}
    assert openai_env.connections == 1


async def test_anthropic_agent_with_tools_and_thinking(anthropic_env: FakeAnthropic) -> None:
    anthropic_env.script(
        ant.message(
            ant.thinking_block("I should add.", signature="sig-e2e"),
            ant.tool_block("add", {"a": 2, "b": 3}, id="toolu_1", chunk_size=3),
            stop_reason="tool_use",
        ),
        ant.text("It is 5."),
    )
    seen = await stream(calculator("anthropic:claude-fake"), "what is 2+3?")
    done = seen[-1]
    assert isinstance(done, events.RunCompleted) and done.result.output == "It is 5."
    assert any(isinstance(e, events.ReasoningDelta) for e in seen)
    second = anthropic_env.stream_requests()[1].json
    cached = {"type": "ephemeral"}  # prompt caching is on by default
    assert second["system"] == [
        {"type": "text", "text": "Use the add tool.", "cache_control": cached}
    ]
    assistant, results = second["messages"][1], second["messages"][2]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "I should add.",
        "signature": "sig-e2e",
    }
    assert assistant["content"][1]["input"] == {"a": 2, "b": 3}
    assert results["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "5", "cache_control": cached}
    ]
    assert anthropic_env.connections == 1


async def test_a_whole_session_of_runs_uses_one_connection(openai_env: FakeOpenAI) -> None:
    for i in range(3):
        openai_env.script(oai.tool_calls(oai.call("add", {"a": i, "b": 1})), oai.text(f"run {i}"))
        result = await Runner.run(calculator("openai:fake-model"), f"run {i}")
        assert result.output == f"run {i}"
    assert len(openai_env.stream_requests()) == 6
    assert openai_env.connections == 1


async def test_cut_stream_is_discarded_and_retried(openai_env: FakeOpenAI) -> None:
    openai_env.script(oai.text("partial-", "answer").cut(after=2), oai.text("final answer"))
    seen = await stream(calculator("openai:fake-model"), "hi")
    deltas = [e for e in seen if isinstance(e, (events.TextDelta, events.OutputDiscarded))]
    assert [type(e).__name__ for e in deltas] == ["TextDelta", "OutputDiscarded", "TextDelta"]
    assert isinstance(seen[-1], events.RunCompleted)
    assert seen[-1].result.output == "final answer"


async def test_rate_limit_then_answer(anthropic_env: FakeAnthropic) -> None:
    anthropic_env.script(ant.rate_limited("0"), ant.text("fine"))
    result = await Runner.run(calculator("anthropic:claude-fake"), "hi")
    assert result.output == "fine"


async def test_context_overflow_fails_the_run(openai_env: FakeOpenAI) -> None:
    openai_env.script(oai.context_overflow(window=4096))
    handle = Runner.stream(calculator("openai:fake-model"), "very long prompt")
    seen = [event async for event in handle]
    failed = seen[-1]
    assert isinstance(failed, events.RunFailed)
    assert isinstance(failed.error, ContextOverflowError)
    assert failed.error.reported_window == 4096


class Answer(BaseModel):
    value: int


async def test_structured_output_uses_the_native_format(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text('{"value": ', "42}"))
    model = OpenAIChatProvider(
        "fake-model", base_url=fake_openai.base_url, api_key="k", supports_json_schema=True
    )
    result = await Runner.run(calculator(model, output_type=Answer), "answer")
    assert result.output == Answer(value=42)
    assert fake_openai.last_request.json["response_format"]["type"] == "json_schema"


async def test_structured_output_on_anthropic(anthropic_env: FakeAnthropic) -> None:
    anthropic_env.script(ant.text('{"value": 7}'))
    result = await Runner.run(calculator("anthropic:claude-fake", output_type=Answer), "answer")
    assert result.output == Answer(value=7)
    schema = anthropic_env.last_request.json["output_config"]["format"]["schema"]
    assert "value" in schema["properties"]


def test_another_process_can_use_the_fake_server(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(oai.text("hello from the fake"))
    code = textwrap.dedent(
        """
        from lovia import Agent, Runner
        result = Runner.run_sync(Agent(name="a", model="openai:fake-model"), "hi")
        print(result.output)
        """
    )
    env = {**os.environ, **fake_openai.env()}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "hello from the fake"
    assert fake_openai.last_request.headers["authorization"] == "Bearer test-key"
