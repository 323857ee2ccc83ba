import asyncio
import json

import pytest

from lovia import Agent, AgentHooks, RunBudget, Runner, events, tool
from lovia.checkpointer import CheckpointOptions
from lovia.exceptions import BudgetExceeded
from lovia.messages import AssistantTurn, ToolCall, Usage
from lovia.parts import ImagePart, TextPart
from lovia.stores import InMemoryCheckpointer
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.transcript import ToolCallEntry, ToolResultEntry


def make(script, **kw):
    provider = ScriptedProvider(script)
    return Agent(name="a", model=provider, **kw), provider


def results(result):
    return [e for e in result.entries if isinstance(e, ToolResultEntry)]


def delayed(name, delay, log, *, parallel=True):
    async def fn(x: int = 0) -> str:
        log.append(f"{name}:start")
        await asyncio.sleep(delay)
        log.append(f"{name}:end")
        return name

    return tool(fn, name=name) if parallel else tool(name=name, parallel=False)(fn)


async def test_parallel_calls_complete_in_completion_order():
    log = []
    slow, fast = delayed("slow", 0.05, log), delayed("fast", 0.0, log)
    agent, provider = make(
        [batch(("slow", {}, "c1"), ("fast", {}, "c2")), text("done")], tools=[slow, fast]
    )
    evs = [e async for e in Runner.stream(agent, "go")]
    completed = [e.call.id for e in evs if isinstance(e, events.ToolCallCompleted)]
    assert completed == ["c2", "c1"]
    assert log[:2] == ["slow:start", "fast:start"]
    result = evs[-1].result
    assert [r.call_id for r in results(result)] == ["c2", "c1"]
    second = provider.calls[1]
    tool_msgs = [m for m in second if m.role == "tool"]
    assert {m.tool_call_id: m.content for m in tool_msgs} == {"c1": "slow", "c2": "fast"}


async def test_barrier_runs_alone_in_request_order():
    log = []
    a = delayed("a", 0.02, log, parallel=False)
    b = delayed("b", 0.0, log, parallel=False)
    c = delayed("c", 0.01, log, parallel=False)
    agent, _ = make([batch(("a", {}), ("b", {}), ("c", {})), text("x")], tools=[a, b, c])
    evs = [e async for e in Runner.stream(agent, "go")]
    assert log == ["a:start", "a:end", "b:start", "b:end", "c:start", "c:end"]
    tool_evs = [(type(e).__name__, e.call.id) for e in evs if isinstance(e, events.ToolEvent)]
    assert tool_evs == [
        ("ToolCallStarted", "call_0_a"),
        ("ToolCallCompleted", "call_0_a"),
        ("ToolCallStarted", "call_1_b"),
        ("ToolCallCompleted", "call_1_b"),
        ("ToolCallStarted", "call_2_c"),
        ("ToolCallCompleted", "call_2_c"),
    ]


async def test_barrier_waits_for_in_flight_parallel_sibling():
    log = []
    p = delayed("p", 0.03, log)
    s = delayed("s", 0.0, log, parallel=False)
    agent, _ = make([batch(("p", {}), ("s", {})), text("x")], tools=[p, s])
    await Runner.run(agent, "go")
    assert log == ["p:start", "p:end", "s:start", "s:end"]


async def test_handoff_barrier_waits_for_slow_sibling():
    log = []
    slow = delayed("slow", 0.03, log)
    target = Agent(name="beta", model=ScriptedProvider([text("from beta")]))
    agent, _ = make(
        [batch(("slow", {}, "c1"), ("transfer_to_beta", {}, "h1"))],
        tools=[slow],
        handoffs=[target],
    )
    evs = [e async for e in Runner.stream(agent, "go")]
    completed = [e.call.id for e in evs if isinstance(e, events.ToolCallCompleted)]
    assert completed == ["c1", "h1"]
    assert evs[-1].result.output == "from beta"


async def test_approval_reaches_consumer_before_slow_sibling_completes():
    log = []
    slow = delayed("slow", 0.05, log)

    @tool(needs_approval=True)
    async def risky() -> str:
        return "risky done"

    agent, _ = make(
        [batch(("slow", {}, "c1"), ("risky", {}, "c2")), text("x")], tools=[slow, risky]
    )
    order = []
    async for ev in Runner.stream(agent, "go"):
        if isinstance(ev, events.ApprovalRequired):
            order.append("approval")
            ev.approve()
        elif isinstance(ev, events.ToolCallCompleted):
            order.append(ev.call.id)
    assert order[0] == "approval" and set(order[1:]) == {"c1", "c2"}


async def test_budget_stops_dispatch_but_drains_in_flight_and_resume_runs_rest():
    ran = []

    @tool
    async def work(n: int) -> str:
        await asyncio.sleep(0.01)
        ran.append(n)
        return f"w{n}"

    cp = InMemoryCheckpointer()
    opts = CheckpointOptions(checkpointer=cp, run_id="r1")
    agent, _ = make([batch(("work", {"n": 1}), ("work", {"n": 2}))], tools=[work])
    with pytest.raises(BudgetExceeded, match="tool call count 2 exceeds budget 1"):
        await Runner.run(agent, "go", budget=RunBudget(max_tool_calls=1), checkpoint=opts)
    assert ran == [1]
    snap = await cp.load("r1")
    assert snap.status == "interrupted"
    assert [e.call_id for e in snap.entries if isinstance(e, ToolResultEntry)] == ["call_0_work"]
    agent2, provider2 = make([text("finished")], tools=[work])
    result = await Runner.run(agent2, "ignored", checkpoint=opts)
    assert ran == [1, 2] and result.output == "finished"
    assert [m.role for m in provider2.calls[0]] == ["user", "assistant", "tool", "tool"]


async def test_every_requested_call_counts_toward_budget_including_rejected():
    agent, _ = make([batch(("missing", {}), ("missing", {}), ("missing", {}))])
    with pytest.raises(BudgetExceeded):
        await Runner.run(agent, "x", budget=RunBudget(max_tool_calls=2))


async def test_rejections_exact_texts_and_raw_normalization():
    @tool
    async def f(x: int = 0) -> str:
        return "ok"

    turn = AssistantTurn(
        None,
        [
            ToolCall("c1", "nope", "{}"),
            ToolCall("c2", "f", "{bad json"),
            ToolCall("c3", "f", "[1, 2]"),
            ToolCall("c4", "f", '{"x": "y"}'),
        ],
        usage=Usage(1, 1),
    )
    agent, provider = make([turn, text("done")], tools=[f])
    result = await Runner.run(agent, "x")
    outs = {r.call_id: r.output for r in results(result)}
    assert outs["c1"] == "Tool 'nope' is not available."
    assert outs["c2"].startswith("Invalid JSON in tool arguments: ")
    assert outs["c3"] == "Invalid tool arguments: expected a JSON object, got list."
    assert outs["c4"].startswith("Tool error: Invalid arguments for tool 'f': x:")
    assert "integer" in outs["c4"]
    calls = {e.call_id: e.arguments for e in result.entries if isinstance(e, ToolCallEntry)}
    assert calls["c2"] == json.dumps({"_raw": "{bad json"})
    assert calls["c3"] == json.dumps({"_raw": "[1, 2]"})
    sent = [m for m in provider.calls[1] if m.role == "assistant"][0]
    assert {c.id: c.arguments for c in sent.tool_calls}["c2"] == json.dumps({"_raw": "{bad json"})


async def test_truncated_arguments_with_length_finish():
    turn = AssistantTurn(
        None, [ToolCall("c1", "f", '{"x": "abc')], usage=Usage(1, 1), finish_reason="length"
    )

    @tool
    async def f(x: str) -> str:
        return x

    agent, _ = make([turn, text("ok")], tools=[f])
    result = await Runner.run(agent, "x")
    out = results(result)[0].output
    assert out == (
        "Tool f arguments are incomplete: the response was cut off at the output token limit "
        "(finish_reason=length) mid-call."
    )
    assert "Invalid JSON" not in out


async def test_tool_exception_becomes_error_result_and_failed_event():
    @tool
    async def db() -> str:
        raise ConnectionError("db unreachable")

    @tool
    async def blank() -> str:
        raise ValueError()

    agent, _ = make([batch(("db", {}), ("blank", {})), text("ok")], tools=[db, blank])
    evs = [e async for e in Runner.stream(agent, "x")]
    failed = [e for e in evs if isinstance(e, events.ToolCallFailed)]
    assert len(failed) == 2 and not isinstance(failed[0], events.ToolEvent)
    outs = {r.call_id: (r.output, r.is_error) for r in results(evs[-1].result)}
    assert outs["call_0_db"] == ("Tool error: db unreachable", True)
    assert outs["call_1_blank"] == ("Tool error: ValueError", True)


async def test_output_cap_truncates_and_drops_raw():
    @tool(max_output_chars=1000)
    async def big() -> str:
        return "x" * 10_000

    @tool
    async def medium() -> dict:
        return {"data": "y" * 20_000}

    agent, _ = make([batch(("big", {}), ("medium", {})), text("ok")], tools=[big, medium])
    result = await Runner.run(agent, "x")
    by_id = {r.call_id: r for r in results(result)}
    assert (
        "[... tool output truncated: kept 1,000 of 10,000 chars ...]" in by_id["call_0_big"].output
    )
    assert by_id["call_0_big"].raw is None
    assert by_id["call_1_medium"].raw is None and len(by_id["call_1_medium"].output) > 16_000


async def test_agent_level_output_cap():
    @tool
    async def big() -> str:
        return "z" * 500

    agent, _ = make([call("big", {}), text("ok")], tools=[big], max_tool_output_chars=100)
    result = await Runner.run(agent, "x")
    assert "kept 100 of 500 chars" in results(result)[0].output


async def test_part_results_keep_parts_and_project_text():
    @tool
    async def shot() -> list:
        return ["shot.png", ImagePart(data="aGVsbG8=", mime_type="image/png")]

    agent, _ = make([call("shot", {}), text("ok")], tools=[shot])
    result = await Runner.run(agent, "x")
    r = results(result)[0]
    assert r.output == "shot.png\n[image: image/png, 5 B]"
    assert r.parts[0] == TextPart("shot.png") and r.raw is None


async def test_renderer_failure_is_tool_error():
    def bad_renderer(result, ctx):
        raise RuntimeError("render broke")

    @tool(result_renderer=bad_renderer)
    async def f() -> int:
        return 1

    agent, _ = make([call("f", {}), text("ok")], tools=[f])
    result = await Runner.run(agent, "x")
    assert results(result)[0].output == "Tool error: result rendering failed: render broke"


async def test_agent_default_renderer_used():
    @tool
    async def f() -> int:
        return 7

    agent, _ = make(
        [call("f", {}), text("ok")], tools=[f], tool_result_renderer=lambda r, c: f"<{r}>"
    )
    result = await Runner.run(agent, "x")
    assert results(result)[0].output == "<7>"


async def test_checkpoint_deltas_for_batch_contain_ids():
    appended = []

    class Recording(InMemoryCheckpointer):
        async def append(self, run_id, entries, head):
            appended.append([getattr(e, "call_id", None) for e in entries])
            await super().append(run_id, entries, head)

    @tool
    async def t1() -> str:
        return "1"

    @tool
    async def t2() -> str:
        return "2"

    @tool
    async def t3() -> str:
        return "3"

    agent, _ = make([batch(("t1", {}), ("t2", {}), ("t3", {})), text("ok")], tools=[t1, t2, t3])
    cp = Recording()
    await Runner.run(agent, "x", checkpoint=CheckpointOptions(checkpointer=cp, run_id="r"))
    flat = [i for batch_ in appended for i in batch_ if i]
    for cid in ("call_0_t1", "call_1_t2", "call_2_t3"):
        assert flat.count(cid) == 2  # the call entry, then its result


async def test_hooks_see_tool_events_in_stream_order_under_parallelism():
    hooks = AgentHooks()
    seen = []
    hooks.on(events.ToolEvent)(lambda ev, ctx: seen.append((type(ev).__name__, ev.call.id)))
    log = []
    a, b = delayed("a", 0.02, log), delayed("b", 0.0, log)
    agent, _ = make([batch(("a", {}), ("b", {})), text("ok")], tools=[a, b], hooks=hooks)
    streamed = [
        (type(e).__name__, e.call.id)
        async for e in Runner.stream(agent, "x")
        if isinstance(e, events.ToolEvent)
    ]
    assert streamed == seen


async def test_sibling_failure_of_cancel_stops_other_tasks():
    from lovia.exceptions import RunCancelled

    cancelled = []

    from lovia.run_context import RunContext

    async def stop_fn(ctx: RunContext) -> str:
        raise RunCancelled("stop")

    async def long_fn() -> str:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    stop = tool(stop_fn, name="stop")
    long = tool(long_fn, name="long")
    agent, _ = make([batch(("long", {}), ("stop", {}), ("long", {}, "c3"))], tools=[stop, long])
    with pytest.raises(RunCancelled):
        await asyncio.wait_for(Runner.run(agent, "x"), 2)
    assert cancelled == [True, True]
