import asyncio
import logging

import pytest

from lovia import (
    Agent,
    AgentHooks,
    CancelToken,
    GuardrailTripped,
    InMemorySession,
    Mailbox,
    MaxTurnsExceeded,
    RunBudget,
    Runner,
    UserError,
    events,
    system,
    tool,
    user,
)
from lovia.context.policy import NoopContextPolicy
from lovia.exceptions import BudgetExceeded
from lovia.messages import Usage
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import AssistantTextEntry, InputEntry, ReasoningEntry


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def make(script, **kw):
    provider = ScriptedProvider(script)
    return Agent(name=kw.pop("name", "a"), model=provider, **kw), provider


async def collect(handle):
    return [e async for e in handle]


async def test_plain_run_roles_and_entries():
    agent, _ = make([text("hello")])
    result = await Runner.run(agent, "hi")
    assert result.output == "hello"
    assert [m.role for m in result.messages] == ["user", "assistant"]
    assert [type(e) for e in result.entries] == [InputEntry, AssistantTextEntry]
    assert result.turns == 1 and result.usage.total_tokens == 2


async def test_reasoning_entry_kept():
    agent, _ = make([text("ok", reasoning="because")])
    result = await Runner.run(agent, "hi")
    assert [type(e) for e in result.entries] == [InputEntry, ReasoningEntry, AssistantTextEntry]
    assert result.messages[1].reasoning == "because"


async def test_tool_round_trip_and_raw():
    agent, provider = make([call("add", {"a": 2, "b": 3}), text("5")], tools=[add])
    result = await Runner.run(agent, "2+3")
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.messages[2].content == "5"
    assert result.entries[2].raw == 5
    assert [m.role for m in provider.calls[1]] == ["user", "assistant", "tool"]


async def test_tool_event_instances_for_one_tool_run():
    agent, _ = make([call("add", {"a": 1, "b": 1}), text("2")], tools=[add])
    evs = await collect(Runner.stream(agent, "x"))
    assert [type(e) for e in evs if isinstance(e, events.ToolEvent)] == [
        events.ToolCallStarted,
        events.ToolCallCompleted,
    ]
    assert isinstance(evs[0], events.RunStarted) and isinstance(evs[-1], events.RunCompleted)


async def test_system_prompt_from_instructions_fragments_and_extra():
    agent, provider = make([text("ok")], instructions="BASE")
    seen_turns = []

    @agent.instruction
    def frag(ctx):
        seen_turns.append(ctx.turn)
        return "FRAG"

    await Runner.run(agent, "hi", extra_instructions="EXTRA")
    assert provider.calls[0][0].content == "BASE\n\nFRAG\n\nEXTRA"
    assert seen_turns == [0]


async def test_with_instructions_and_clone_copy_semantics():
    base = Agent(name="a", instructions="B")
    early = base.clone()
    base.instruction(lambda ctx: "F1")
    late = base.clone()
    extended = base.with_instructions(lambda ctx: "F2")
    from lovia.run_context import RunContext

    ctx = RunContext(context=None, entries=[], agent=base)
    assert await early.render_system_prompt(ctx) == "B"
    assert await late.render_system_prompt(ctx) == "B\n\nF1"
    assert await extended.render_system_prompt(ctx) == "B\n\nF1\n\nF2"
    assert await base.render_system_prompt(ctx) == "B\n\nF1"


async def test_async_instructions_callable():
    async def instructions(ctx):
        return f"deps={ctx.deps}"

    agent, provider = make([text("ok")], instructions=instructions)
    await Runner.run(agent, "hi", context=42)
    assert provider.calls[0][0].content == "deps=42"


async def test_session_second_run_sees_history_and_hooks():
    session = InMemorySession()
    hooks = AgentHooks()
    captured = {}

    @hooks.on(events.RunCompleted)
    def done(ev, ctx):
        captured["entries"] = ev.result.entries
        captured["roles"] = [m.role for m in ctx.messages]

    agent, provider = make([text("one"), text("two")], instructions="sys", hooks=hooks)
    await Runner.run(agent, "first", session=session, session_id="s")
    await Runner.run(agent, "second", session=session, session_id="s")
    assert [m.role for m in provider.calls[1]] == ["system", "user", "assistant", "user"]
    assert [e.content for e in captured["entries"]] == ["second", "two"]
    assert captured["roles"] == ["system", "user", "assistant", "user", "assistant"]
    assert len(session._segments["s"]) == 2


def test_session_requires_session_id():
    agent, _ = make([])
    with pytest.raises(UserError, match="session_id is required when session is provided"):
        Runner.stream(agent, "x", session=InMemorySession())


async def test_message_list_input_any_roles():
    agent, provider = make([text("ok")])
    await Runner.run(agent, [system("caller"), user("u")])
    assert [m.role for m in provider.calls[0]] == ["system", "user"]


async def test_max_turns_exceeded_after_two_model_calls(caplog):
    @tool
    async def loop() -> str:
        return "again"

    agent, provider = make([call("loop", {})] * 5, tools=[loop])
    caplog.set_level(logging.INFO, logger="lovia.runtime.loop")
    with pytest.raises(MaxTurnsExceeded, match="max_turns=2"):
        await Runner.run(agent, "x", max_turns=2)
    assert len(provider.calls) == 2
    msgs = [r.getMessage() for r in caplog.records]
    assert sum(m.startswith("run.interrupted:") for m in msgs) == 1
    assert not any(m.startswith("run.max_turns:") for m in msgs)
    assert sum(m.startswith("model.start:") for m in msgs) == 2
    assert any(m.startswith("model.done:") and "tokens=" in m and "dur=" in m for m in msgs)


async def test_empty_output_warns(caplog):
    agent, _ = make([text("")])
    with caplog.at_level(logging.WARNING, logger="lovia.runtime.loop"):
        result = await Runner.run(agent, "x")
    assert result.output == ""
    assert any(r.getMessage().startswith("run.empty_output:") for r in caplog.records)


async def test_budget_tool_calls_trips_on_third():
    agent, _ = make([call("add", {"a": 1, "b": 1})] * 3 + [text("x")], tools=[add])
    with pytest.raises(BudgetExceeded, match="tool call count 3 exceeds budget 2"):
        await Runner.run(agent, "x", budget=RunBudget(max_tool_calls=2))


async def test_budget_output_tokens_trips_after_model_call():
    from lovia.messages import AssistantTurn

    big = AssistantTurn("long", usage=Usage(1, 50))
    agent, provider = make([big])
    with pytest.raises(BudgetExceeded, match="output tokens 50 exceeds budget 10"):
        await Runner.run(agent, "x", budget=RunBudget(max_output_tokens=10))
    assert len(provider.calls) == 1


def test_budget_messages_and_elapsed():
    b = RunBudget(max_seconds=0.005)
    b.check(Usage())
    import time

    time.sleep(0.02)
    with pytest.raises(BudgetExceeded, match="elapsed"):
        b.check(Usage())
    with pytest.raises(BudgetExceeded, match="input tokens 5 exceeds budget 4"):
        RunBudget(max_input_tokens=4).check(Usage(5))
    with pytest.raises(BudgetExceeded, match="total tokens 3 exceeds budget 2"):
        RunBudget(max_total_tokens=2).check(Usage(1, 2))


async def test_last_input_tokens_and_usage_sum():
    from lovia.messages import AssistantTurn, ToolCall

    turns = [
        AssistantTurn(None, [ToolCall("c", "add", '{"a":1,"b":2}')], usage=Usage(10, 1)),
        AssistantTurn("done", usage=Usage(25, 1)),
    ]
    agent, _ = make(turns, tools=[add])
    result = await Runner.run(agent, "x")
    assert result.usage.input_tokens == 35 and result.last_input_tokens == 25


async def test_guardrails_input_and_output():
    def banned(messages, ctx):
        return "banned word" if "bad" in messages[-1].text else None

    agent, provider = make([text("ok")], input_guardrails=[banned])
    with pytest.raises(GuardrailTripped, match="input guardrail: banned word"):
        await Runner.run(agent, "bad stuff")
    assert provider.calls == []

    async def reject_all(output, ctx):
        return True

    agent, _ = make([text("ok")], output_guardrails=[reject_all])
    with pytest.raises(GuardrailTripped, match="output guardrail rejected the value"):
        await Runner.run(agent, "x")


async def test_guardrail_trip_emits_run_failed_once():
    agent, _ = make([text("ok")], input_guardrails=[lambda m, c: True])
    evs = await collect(Runner.stream(agent, "x"))
    assert [type(e) for e in evs] == [events.RunStarted, events.RunFailed]


async def test_hooks_order_and_raising_handler(caplog):
    hooks = AgentHooks()
    seen = []

    @hooks.on_any
    def any_(ev, ctx):
        seen.append(("any", type(ev).__name__))

    @hooks.on(events.RunEvent)
    def boom(ev, ctx):
        raise RuntimeError("hook broke")

    @hooks.on((events.TurnStarted, events.TurnEnded))
    async def turns(ev, ctx):
        seen.append(("turn", ev.turn))

    agent, _ = make([text("ok")], hooks=hooks)
    with caplog.at_level(logging.WARNING, logger="lovia.hooks"):
        result = await Runner.run(agent, "x")
    assert result.output == "ok"
    assert ("turn", 1) in seen and ("any", "RunCompleted") in seen
    warnings = [r for r in caplog.records if r.getMessage().startswith("hook.error:")]
    assert warnings and all(r.exc_info for r in warnings)


async def test_stream_events_match_hook_order():
    hooks = AgentHooks()
    hooked = []
    hooks.on_any(lambda ev, ctx: hooked.append(ev))
    agent, _ = make([call("add", {"a": 1, "b": 2}), text("3")], tools=[add], hooks=hooks)
    streamed = await collect(Runner.stream(agent, "x"))
    assert [id(e) for e in streamed] == [id(e) for e in hooked]


async def test_ctx_turn_inside_first_tool_is_one():
    seen = []
    from lovia.run_context import RunContext

    probe_tool = tool(_probe_fn(seen, RunContext))
    agent, _ = make([call("probe", {}), text("done")], tools=[probe_tool])
    await Runner.run(agent, "x")
    assert seen == [1]


def _probe_fn(seen, RunContext):
    async def probe(ctx: RunContext) -> str:
        seen.append(ctx.turn)
        return "ok"

    return probe


async def test_mailbox_steering_delivered_next_turn():
    mailbox = Mailbox()

    @tool
    async def work() -> str:
        mailbox.push("also do Y")
        token = mailbox.push("withdrawn")
        assert mailbox.remove(token)
        return "did X"

    agent, provider = make([call("work", {}), text("ok")], tools=[work])
    evs = await collect(Runner.stream(agent, "do X", mailbox=mailbox))
    roles = [m.role for m in provider.calls[1]]
    assert roles == ["user", "assistant", "tool", "user"]
    injected = [e for e in evs if isinstance(e, events.UserMessageInjected)]
    assert [(e.content, e.turn) for e in injected] == [("also do Y", 2)]
    result = evs[-1].result
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "user", "assistant"]


async def test_injected_messages_carry_their_push_tokens():
    """Two identical messages are told apart by token, and a withdrawn one's token is never
    reported: a host maps each delivery back to the push it made without matching text."""
    mailbox = Mailbox()
    pushed: list[int] = []

    @tool
    async def work() -> str:
        pushed.append(mailbox.push("same"))
        assert mailbox.remove(mailbox.push("same"))
        pushed.append(mailbox.push("same"))
        return "did X"

    agent, _ = make([call("work", {}), text("ok")], tools=[work])
    evs = await collect(Runner.stream(agent, "do X", mailbox=mailbox))
    injected = [e for e in evs if isinstance(e, events.UserMessageInjected)]
    assert [(e.content, e.token) for e in injected] == [("same", pushed[0]), ("same", pushed[1])]
    assert pushed == [1, 3]


def test_mailbox_take_drains_with_tokens():
    box = Mailbox()
    a, b = box.push("a"), box.push("b")
    assert box.take() == [(a, "a"), (b, "b")] and not box and box.take() == []


async def test_mailbox_push_after_last_drain_stays_queued():
    mailbox = Mailbox()
    hooks = AgentHooks()

    @hooks.on(events.MessageCompleted)
    def late(ev, ctx):
        ctx.mailbox.push("late")

    agent, _ = make([text("ok")], hooks=hooks)
    await Runner.run(agent, "x", mailbox=mailbox)
    assert mailbox.drain() == ["late"]


def test_mailbox_fifo_tokens_and_falsy():
    box = Mailbox()
    assert not box
    a, b, c = box.push("a"), box.push("b"), box.push("c")
    assert (a, b, c) == (1, 2, 3) and box
    assert box.remove(b) and not box.remove(b)
    assert box.drain() == ["a", "c"] and box.drain() == []
    assert not box.remove(a)


async def test_cancel_before_first_turn_is_interrupted():
    token = CancelToken()
    token.cancel("stop now")
    agent, provider = make([text("never")])
    from lovia.exceptions import RunCancelled

    with pytest.raises(RunCancelled, match="stop now"):
        await Runner.run(agent, "x", cancel_token=token)
    assert provider.calls == []


async def test_cancel_mid_tool_finishes_tool_then_stops():
    started = asyncio.Event()
    finished = []

    @tool
    async def slow() -> str:
        started.set()
        await asyncio.sleep(0.05)
        finished.append(True)
        return "done"

    agent, provider = make([call("slow", {}), text("never")], tools=[slow])
    handle = Runner.stream(agent, "x")
    evs = []

    async def consume():
        async for ev in handle:
            evs.append(ev)

    task = asyncio.create_task(consume())
    await started.wait()
    handle.cancel("user stop")
    await task
    from lovia.exceptions import RunCancelled

    with pytest.raises(RunCancelled, match="user stop"):
        await handle.result()
    assert finished == [True] and len(provider.calls) == 1
    assert isinstance(evs[-1], events.RunFailed)
    assert any(isinstance(e, events.ToolCallCompleted) for e in evs)


async def test_setup_failure_ends_stream_with_one_run_failed():
    agent = Agent(name="nomodel")
    evs = await collect(handle := Runner.stream(agent, "x"))
    assert [type(e) for e in evs] == [events.RunFailed]
    with pytest.raises(UserError, match="has no model configured"):
        await handle.result()


async def test_tool_name_conflict_is_setup_failure():
    dup = tool(name="add")(lambda a: a)
    agent, _ = make([text("x")], tools=[add, dup])
    evs = await collect(handle := Runner.stream(agent, "x"))
    assert [type(e) for e in evs] == [events.RunFailed]
    with pytest.raises(UserError, match="Tool name conflict for 'add' from agent.tools."):
        await handle.result()


async def test_model_list_rejected():
    agent = Agent(name="a", model=["x", "y"])
    with pytest.raises(UserError, match="model no longer accepts a list"):
        await Runner.run(agent, "x")


async def test_run_sync_and_inside_loop():
    agent, _ = make([text("ok")])
    with pytest.raises(UserError, match="cannot be called from a running event loop"):
        Runner.run_sync(agent, "x")


def test_run_sync_outside_loop():
    agent, _ = make([text("ok")])
    assert Runner.run_sync(agent, "x").output == "ok"
    agent2, _ = make([text("ok2")])
    assert agent2.run_sync("x").output == "ok2"


async def test_agent_wrappers():
    agent, _ = make([text("a"), text("b")])
    assert (await agent.run("x")).output == "a"
    assert (await agent.stream("y")).output == "b"


async def test_noop_policy_passes_transcript():
    agent, provider = make([text("ok")], context_policy=NoopContextPolicy())
    await Runner.run(agent, "x")
    assert len(provider.calls) == 1
