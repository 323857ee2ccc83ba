import pytest

from lovia import Agent, InMemorySession, Runner, events, tool
from lovia.checkpointer import CheckpointOptions, RunHead, RunSnapshot
from lovia.exceptions import ProviderError, UserError
from lovia.messages import Usage
from lovia.runtime.checkpoint import CheckpointWriter, error_payload
from lovia.runtime.resume import normalize_replayed_entries, reachable_agents
from lovia.stores import InMemoryCheckpointer
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import AssistantTextEntry, InputEntry, ToolCallEntry, ToolResultEntry


def make(name, script, **kw):
    provider = ScriptedProvider(script)
    return Agent(name=name, model=provider, **kw), provider


class Failing(ScriptedProvider):
    async def stream(self, entries, **kw):
        raise ProviderError("upstream down", retryable=True)
        yield  # pragma: no cover


def test_checkpoint_options_validation():
    cp = InMemoryCheckpointer()
    with pytest.raises(UserError, match="if_run_exists"):
        CheckpointOptions(checkpointer=cp, run_id="r", if_run_exists="bogus")
    with pytest.raises(UserError, match="checkpoint run_id must be a non-empty string"):
        CheckpointOptions(checkpointer=cp, run_id="")
    with pytest.raises(UserError, match="requires both checkpointer and run_id"):
        CheckpointOptions()
    with pytest.raises(UserError, match="checkpoint run_id is required with checkpointer"):
        CheckpointOptions(checkpointer=cp)
    snap = RunSnapshot("r1", "a", [], Usage(), 0)
    with pytest.raises(UserError, match="does not match"):
        CheckpointOptions(run_id="r2", resume_from=snap)
    with pytest.raises(UserError, match="delete_on_success"):
        CheckpointOptions(resume_from=snap, delete_on_success=True)
    assert CheckpointOptions(resume_from=snap).resolved_run_id == "r1"


def test_run_head_and_snapshot_json_round_trip():
    head = RunHead(
        "a", Usage(1, 2, 3, 4), 2, "interrupted", error={"type": "X"}, context_state={"k": [1]}
    )
    again = RunHead.from_json(head.to_json())
    assert again.usage.cache_write_tokens == 4 and again.context_state == {"k": [1]}
    snap = RunSnapshot.from_parts(
        "r", [InputEntry("user", "ü"), ToolCallEntry("c", "f", "{}")], head
    )
    back = RunSnapshot.from_json(snap.to_json())
    assert back.entries == snap.entries and back.status == "interrupted" and "ü" in snap.to_json()
    with pytest.raises(ValueError):
        RunHead.from_dict({"usage": {}})


def test_classify_and_error_payload():
    import asyncio

    from lovia.exceptions import BudgetExceeded, MaxTurnsExceeded, RunCancelled

    c = CheckpointWriter.classify
    for exc in (
        RunCancelled(),
        asyncio.CancelledError(),
        MaxTurnsExceeded(),
        BudgetExceeded(),
        TimeoutError(),
        ConnectionError(),
        ProviderError("x"),
    ):
        assert c(exc) == "interrupted"
    assert c(ProviderError("x", retryable=False)) == "failed"
    assert c(ValueError()) == "failed"
    assert error_payload(ValueError("v")) == {"type": "ValueError", "message": "v"}


async def test_provider_failure_turn_one_rolls_back_turn():
    cp = InMemoryCheckpointer()
    agent = Agent(name="a", model=Failing([]), retry=None)
    with pytest.raises(ProviderError):
        await Runner.run(agent, "x", checkpoint=CheckpointOptions(checkpointer=cp, run_id="r"))
    snap = await cp.load("r")
    assert snap.status == "interrupted" and snap.turns == 0
    assert snap.error["type"] == "ProviderError"
    assert [type(e) for e in snap.entries] == [InputEntry]


async def test_resume_snapshot_plus_one_reply():
    snap = RunSnapshot(
        "r",
        "a",
        [InputEntry("user", "q"), ToolCallEntry("c1", "f", "{}"), ToolResultEntry("c1", "r")],
        Usage(5, 5),
        1,
    )
    agent, provider = make("a", [text("answer")])
    result = await Runner.run(
        agent, "new input ignored", checkpoint=CheckpointOptions(resume_from=snap)
    )
    assert len(result.entries) == 4 and result.output == "answer"
    assert result.usage.input_tokens == 6 and result.turns == 2
    assert [m.role for m in provider.calls[0]] == ["user", "assistant", "tool"]


async def test_resume_drains_pending_calls_with_restored_turn():
    seen = []

    async def f(ctx: "RunContext") -> str:
        seen.append(ctx.turn)
        return "ran"

    from lovia.run_context import RunContext

    f.__annotations__["ctx"] = RunContext
    snap = RunSnapshot(
        "r", "a", [InputEntry("user", "q"), ToolCallEntry("c1", "f", "{}")], Usage(), 3
    )
    agent, provider = make("a", [text("done")], tools=[tool(f)])
    evs = [
        e async for e in Runner.stream(agent, "x", checkpoint=CheckpointOptions(resume_from=snap))
    ]
    assert seen == [3]
    turns = [e.turn for e in evs if isinstance(e, events.TurnStarted)]
    assert turns == [3, 4]
    assert evs[-1].result.turns == 4


async def test_completed_run_replays_without_model_and_heals_session():
    cp = InMemoryCheckpointer()
    session = InMemorySession()
    opts = CheckpointOptions(checkpointer=cp, run_id="r1")
    agent, provider = make("a", [text("first answer")])
    await Runner.run(agent, "q", checkpoint=opts)  # no session: completed in checkpoint only
    hooks_called = []
    from lovia import AgentHooks

    hooks = AgentHooks()
    hooks.on_any(lambda ev, ctx: hooks_called.append(ev))
    agent2, provider2 = make("a", [], hooks=hooks)
    evs = [
        e
        async for e in Runner.stream(
            agent2, "other", checkpoint=opts, session=session, session_id="s"
        )
    ]
    assert [type(e) for e in evs] == [events.RunStarted, events.RunCompleted]
    assert evs[-1].result.output == "first answer" and evs[-1].result.finish_reason is None
    assert provider2.calls == [] and hooks_called == []
    assert [s.run_id for s in await session.segments("s")] == ["r1"]


async def test_if_run_exists_policies():
    cp = InMemoryCheckpointer()
    agent, _ = make("a", [text("one")])
    await Runner.run(agent, "q", checkpoint=CheckpointOptions(checkpointer=cp, run_id="r"))
    with pytest.raises(
        UserError, match=r"A run already exists for run_id='r' \(status='completed'\)"
    ):
        await Runner.run(
            agent,
            "q",
            checkpoint=CheckpointOptions(checkpointer=cp, run_id="r", if_run_exists="fail"),
        )
    agent2, p2 = make("a", [text("two")])
    r = await Runner.run(
        agent2,
        "q",
        checkpoint=CheckpointOptions(checkpointer=cp, run_id="r", if_run_exists="restart"),
    )
    assert r.output == "two" and len(p2.calls) == 1
    handle = Runner.stream(
        agent2,
        "q",
        checkpoint=CheckpointOptions(
            checkpointer=cp, run_id="missing", if_run_exists="resume_only"
        ),
    )
    with pytest.raises(UserError, match="No snapshot found for run_id='missing'"):
        await handle


async def test_resume_after_handoff_uses_recorded_agent():
    cp = InMemoryCheckpointer()
    opts = CheckpointOptions(checkpointer=cp, run_id="r")
    beta = Agent(name="beta", model=Failing([]), retry=None, instructions="B")
    alpha, _ = make("alpha", [call("transfer_to_beta", {})], handoffs=[beta], retry=None)
    with pytest.raises(ProviderError):
        await Runner.run(alpha, "x", checkpoint=opts)
    snap = await cp.load("r")
    assert snap.agent_name == "beta" and snap.status == "interrupted"
    beta.model = ScriptedProvider([text("beta answers")])
    result = await Runner.run(alpha, "ignored", checkpoint=opts)
    assert result.output == "beta answers" and result.final_agent is beta
    assert beta.model.calls[0][0].content == "B"


async def test_resume_unknown_agent_is_user_error():
    snap = RunSnapshot("r9", "ghost", [InputEntry("user", "q")], Usage(), 1)
    agent, _ = make("a", [])
    with pytest.raises(UserError, match="last active on agent 'ghost'"):
        await Runner.run(agent, "x", checkpoint=CheckpointOptions(resume_from=snap))


async def test_resume_finishes_answer_already_checkpointed():
    snap = RunSnapshot(
        "r", "a", [InputEntry("user", "q"), AssistantTextEntry("done already")], Usage(1, 1), 1
    )
    agent, provider = make("a", [])
    session = InMemorySession()
    result = await Runner.run(
        agent, "x", checkpoint=CheckpointOptions(resume_from=snap), session=session, session_id="s"
    )
    assert result.output == "done already" and provider.calls == []
    assert len((await session.segments("s"))[0].entries) == 2


async def test_session_append_after_final_checkpoint_write():
    order = []

    class CP(InMemoryCheckpointer):
        async def append(self, run_id, entries, head):
            order.append(("cp", head.status))
            await super().append(run_id, entries, head)

    class S(InMemorySession):
        async def append(self, session_id, entries, **kw):
            order.append(("session", kw.get("run_id")))
            return await super().append(session_id, entries, **kw)

    agent, _ = make("a", [text("ok")])
    await Runner.run(
        agent,
        "q",
        checkpoint=CheckpointOptions(checkpointer=CP(), run_id="r"),
        session=S(),
        session_id="s",
    )
    assert order[-2:] == [("cp", "completed"), ("session", "r")]


async def test_delete_on_success_removes_checkpoint():
    cp = InMemoryCheckpointer()
    agent, _ = make("a", [text("ok")])
    await Runner.run(
        agent,
        "q",
        checkpoint=CheckpointOptions(checkpointer=cp, run_id="r", delete_on_success=True),
    )
    assert await cp.load("r") is None


async def test_in_memory_checkpointer_freezes_state():
    cp = InMemoryCheckpointer()
    state = {"k": [1]}
    await cp.append("r", [InputEntry("user", "x")], RunHead("a", Usage(), 0, context_state=state))
    state["k"].append(2)
    snap = await cp.load("r")
    assert snap.context_state == {"k": [1]}
    snap.entries.append(InputEntry("user", "y"))
    assert len((await cp.load("r")).entries) == 1
    await cp.delete("r")
    await cp.delete("r")
    assert await cp.load("r") is None


def test_normalize_replayed_entries():
    entries = [
        ToolCallEntry("c1", "f", "[1]"),
        ToolResultEntry("c1", "x"),
        ToolCallEntry("c2", "f", "["),
    ]
    out = normalize_replayed_entries(entries)
    assert out[0].arguments == '{"_raw": "[1]"}' and out[2].arguments == "["
    assert normalize_replayed_entries(out) == out


def test_reachable_agents_cycle_safe():
    a, b = Agent(name="a"), Agent(name="b")
    a.handoffs = [b]
    b.handoffs = [a]
    assert set(reachable_agents(a)) == {"a", "b"}


async def test_context_state_carried_from_session_meta():
    seen = []

    class Policy:
        async def compact(self, req):
            from lovia.context import ContextResult

            seen.append(dict(req.scratch))
            req.scratch["count"] = req.scratch.get("count", 0) + 1
            return ContextResult(entries=req.entries)

    session = InMemorySession()
    agent, _ = make("a", [text("1"), text("2")], context_policy=Policy())
    await Runner.run(agent, "q", session=session, session_id="s")
    await Runner.run(agent, "q", session=session, session_id="s")
    assert seen == [{}, {"count": 1}]
    segs = await session.segments("s")
    assert segs[1].meta == {"context_state": {"count": 2}}
