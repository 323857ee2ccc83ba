import asyncio
import logging

import pytest

from lovia import Agent, Runner, events, tool
from lovia.runtime.result import RunResult
from lovia.runtime.utils import (
    agent_model_label,
    input_preview,
    supports_json_schema,
    truncate_repr,
)
from lovia.testing import ScriptedProvider, call, text
from lovia.tracing import ConsoleTracer, InMemoryTracer, NoopTracer, SpanName


def make(script, **kw):
    return Agent(name="a", model=ScriptedProvider(script), **kw)


async def test_handle_iterates_once():
    handle = Runner.stream(make([text("x")]), "q")
    [e async for e in handle]
    with pytest.raises(RuntimeError, match="RunHandle can only be iterated once"):
        handle.__aiter__()
    assert (await handle).output == "x"


async def test_result_drives_stream_when_not_iterated():
    handle = Runner.stream(make([text("x")]), "q")
    assert (await handle.result()).output == "x"


async def test_result_waits_for_concurrent_iteration():
    handle = Runner.stream(make([text("x")]), "q")

    async def consume():
        async for _ in handle:
            await asyncio.sleep(0)

    task = asyncio.create_task(consume())
    await asyncio.sleep(0)
    result = await handle.result()
    await task
    assert result.output == "x"


async def test_consumer_break_abandons_run():
    handle = Runner.stream(make([text("abc")]), "q")
    async for ev in handle:
        if isinstance(ev, events.TextDelta):
            break
    await asyncio.sleep(0.01)
    with pytest.raises(RuntimeError, match="Run was abandoned before completion"):
        await handle.result()


async def test_failure_never_raises_while_iterating():
    handle = Runner.stream(make([]), "q")  # script exhausted -> AssertionError in provider
    evs = [e async for e in handle]
    assert isinstance(evs[-1], events.RunFailed)
    with pytest.raises(AssertionError, match="ran out of canned responses"):
        await handle


def test_run_result_repr():
    r = RunResult("y" * 100, [], Agent(name="a"), __import__("lovia").Usage(1, 2), 3)
    text_ = repr(r)
    assert text_.startswith("RunResult(output='yyy") and "..." in text_
    assert "turns=3" in text_ and "tokens=3" in text_ and "entries=" not in text_
    assert "agent='a'" in text_


async def test_tracing_spans():
    @tool
    async def t() -> str:
        return "x"

    @tool(needs_approval=True)
    async def nope() -> str:
        return "y"

    tracer = InMemoryTracer()
    agent = make([call("t", {}), call("nope", {}), text("ok")], tools=[t, nope])
    await Runner.run(agent, "q", tracer=tracer)
    names = [s.name for s in tracer.spans]
    assert names.count("run") == 1 and names.count("model_call") == 3
    assert names.count("tool_call") == 1
    run = tracer.spans[0]
    assert run.attrs["agent"] == "a" and run.attrs["run_id"] == "" and run.attrs["resumed"] is False
    assert run.attrs["turns"] == 3 and run.attrs["total_tokens"] == 6


async def test_tool_span_records_exception():
    @tool
    async def bad() -> str:
        raise ValueError("boom")

    tracer = InMemoryTracer()
    await Runner.run(make([call("bad", {}), text("ok")], tools=[bad]), "q", tracer=tracer)
    span = [s for s in tracer.spans if s.name == "tool_call"][0]
    assert isinstance(span.exception, ValueError)


def test_console_tracer_logs(caplog):
    tracer = ConsoleTracer()
    with caplog.at_level(logging.INFO, logger="lovia.trace"):
        with tracer.span("outer", a=1), tracer.span("inner"):
            pass
        with pytest.raises(KeyError), tracer.span("bad"):
            raise KeyError("k")
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith("  inner (") and lines[1].startswith("outer (")
    assert "a=1" in lines[1] and "! KeyError" in lines[2]
    quiet = ConsoleTracer(min_duration_ms=10_000)
    caplog.clear()
    with quiet.span("fast"):
        pass
    assert caplog.records == []


def test_span_name_and_noop():
    assert str(SpanName.RUN) == "run" and f"{SpanName.TOOL_CALL}" == "tool_call"
    with NoopTracer().span("x") as s:
        s.set_attribute("k", 1)


def test_runtime_utils():
    assert truncate_repr("a\nb\tc") == "a\\nb c"
    assert truncate_repr("x" * 10, 4) == "xxxx... <+6 chars>"

    class Bad:
        def __repr__(self):
            raise RuntimeError

    assert truncate_repr(Bad()) == "<unrepr>"
    assert agent_model_label(Agent(name="a", model="openai:x")) == "openai:x"
    assert agent_model_label(Agent(name="a", model=ScriptedProvider([]))) == "scripted"
    from lovia.messages import system, user

    assert input_preview("hi") == "hi"
    assert input_preview([system("s"), user("u")]) == "u"
    assert input_preview([]) == ""
    assert supports_json_schema(ScriptedProvider([])) is False
