import asyncio

import pytest
from pydantic import BaseModel

from lovia import Agent, AgentHooks, Runner, events, system, tool
from lovia.exceptions import OutputValidationError
from lovia.handoff import Handoff, _slug, agent_as_tool, build_handoff_tool
from lovia.output import DefaultOutputRepair, format_output_instructions, resolve_structured_output
from lovia.reliability import CancelToken, RunBudget
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.tracing import InMemoryTracer
from lovia.transcript import InputEntry, ToolResultEntry


def make(name, script, **kw):
    provider = ScriptedProvider(script)
    return Agent(name=name, model=provider, **kw), provider


# ------------------------------------------------------------------ handoff


def test_slug():
    assert _slug("Route Finder") == "route_finder"
    assert _slug("café") == "caf"
    assert _slug("") == "agent"
    assert _slug("日本").startswith("agent_") and len(_slug("日本")) == 14
    long = _slug("x" * 100, max_len=52)
    assert len(long) == 52 and long == _slug("x" * 100, max_len=52)


def test_handoff_tool_shape():
    target = Agent(name="Spanish")
    t = build_handoff_tool(Handoff(target))
    assert t.name == "transfer_to_spanish" and t.parallel is False and t._handoff
    assert "Spanish" in t.description
    assert t.parameters["properties"]["reason"]["type"] == "string"


async def test_handoff_swaps_only_system_entry_and_keeps_body():
    target, tprov = make("Spanish", [text("hola")], instructions="Habla español.")
    entry, eprov = make(
        "triage",
        [call("transfer_to_spanish", {"reason": "user spoke Spanish"})],
        instructions="Route.",
        handoffs=[target],
    )
    result = await Runner.run(entry, "hola amigo")
    assert result.output == "hola" and result.final_agent is target
    first = tprov.calls[0]
    assert [m.role for m in first] == ["system", "user", "assistant", "tool"]
    assert first[0].content == "Habla español."
    assert first[3].content == "Transferred to Spanish (user spoke Spanish)"
    assert [type(e).__name__ for e in result.entries][0] == "InputEntry"
    assert not any(isinstance(e, InputEntry) and e.role == "system" for e in result.entries)


async def test_handoff_from_systemless_agent_keeps_caller_system_message():
    target, tprov = make("beta", [text("done")], instructions="Target head")
    entry, _ = make("alpha", [call("transfer_to_beta", {})], handoffs=[target])
    await Runner.run(entry, [system("caller system"), InputEntry("user", "u")])  # type: ignore[list-item]
    roles = [m.role for m in tprov.calls[0]]
    assert roles[:3] == ["system", "system", "user"]
    assert tprov.calls[0][0].content == "Target head"
    assert tprov.calls[0][1].content == "caller system"


async def test_first_handoff_wins():
    alpha, _ = make("alpha", [text("from alpha")])
    beta, _ = make("beta", [])
    calls = []
    entry, _ = make(
        "entry",
        [batch(("transfer_to_alpha", {}, "h1"), ("transfer_to_beta", {}, "h2"))],
        handoffs=[alpha, Handoff(beta, on_handoff=lambda args, ctx: calls.append("beta"))],
    )
    result = await Runner.run(entry, "x")
    outs = {e.call_id: e.output for e in result.entries if isinstance(e, ToolResultEntry)}
    assert outs["h1"] == "Transferred to alpha"
    assert outs["h2"].startswith("Handoff not performed: this turn already transferred to 'alpha'.")
    assert calls == [] and result.output == "from alpha"


async def test_handoff_event_hooks_and_span():
    prev_hooks, next_hooks = AgentHooks(), AgentHooks()
    seen = []
    prev_hooks.on(events.HandoffOccurred)(lambda ev, ctx: seen.append("prev"))
    next_hooks.on(events.HandoffOccurred)(lambda ev, ctx: seen.append("next"))
    target, _ = make("beta", [text("ok")], hooks=next_hooks)
    entry, _ = make("alpha", [call("transfer_to_beta", {})], handoffs=[target], hooks=prev_hooks)
    tracer = InMemoryTracer()
    evs = [e async for e in Runner.stream(entry, "x", tracer=tracer)]
    ho = [e for e in evs if isinstance(e, events.HandoffOccurred)]
    assert ho[0].from_agent is entry and ho[0].to_agent is target
    assert seen == ["prev", "next"]
    names = [s.name for s in tracer.spans]
    assert names.count("handoff") == 1 and names[0] == "run"
    idx_turn_end = max(
        i for i, e in enumerate(evs) if isinstance(e, events.TurnEnded) and e.turn == 1
    )
    assert evs.index(ho[0]) > idx_turn_end


async def test_plugin_setup_once_per_agent_per_run():
    setups = []

    class P:
        def __init__(self, tag):
            self.name = "p"
            self.tag = tag

        async def setup(self):
            from lovia import PluginInstance

            setups.append(self.tag)
            return PluginInstance()

    b = Agent(name="b", plugins=[P("b")])
    a = Agent(name="a", plugins=[P("a")], handoffs=[b])
    b.handoffs = [a]
    a.model = ScriptedProvider([call("transfer_to_b", {}), text("end")])
    b.model = ScriptedProvider([call("transfer_to_a", {})])
    await Runner.run(a, "x")
    assert setups == ["a", "b"]


async def test_extra_instructions_reapplied_after_handoff():
    target, tprov = make("beta", [text("ok")], instructions="T")
    entry, _ = make("alpha", [call("transfer_to_beta", {})], handoffs=[target])
    await Runner.run(entry, "x", extra_instructions="EXTRA")
    assert tprov.calls[0][0].content == "T\n\nEXTRA"


# ------------------------------------------------------------------ agent as tool


async def test_agent_as_tool_usage_identity_and_errors():
    seen = {}

    async def probe_fn(ctx: "RunContext") -> str:
        seen["token"] = ctx.cancel_token
        seen["tracer"] = ctx._tracer
        seen["mailbox"] = ctx.mailbox
        seen["deps"] = ctx.deps
        return "probed"

    from lovia.run_context import RunContext

    probe_fn.__annotations__["ctx"] = RunContext
    child, _ = make(
        "helper", [call("probe", {}), text("child answer")], tools=[tool(probe_fn, name="probe")]
    )
    as_tool = agent_as_tool(child)
    assert as_tool.name == "ask_helper" and as_tool.parallel is True
    parent, _ = make("parent", [call("ask_helper", {"input": "q"}), text("final")], tools=[as_tool])
    token, tracer = CancelToken(), InMemoryTracer()
    from lovia import Mailbox

    mailbox = Mailbox()
    result = await Runner.run(
        parent, "x", cancel_token=token, tracer=tracer, mailbox=mailbox, context="D"
    )
    outs = [e.output for e in result.entries if isinstance(e, ToolResultEntry)]
    assert outs == ["child answer"]
    assert seen["token"] is token and seen["tracer"] is tracer and seen["deps"] == "D"
    assert seen["mailbox"] is not mailbox
    assert result.usage.input_tokens >= 3 and result.usage.output_tokens >= 3

    failing, _ = make("fails", [call("x", {}), call("x", {})])
    parent2, _ = make(
        "p2", [call("ask_fails", {"input": "q"}), text("ok")], tools=[failing.as_tool()]
    )
    r2 = await Runner.run(parent2, "x")
    err = [e for e in r2.entries if isinstance(e, ToolResultEntry)][0]
    assert err.is_error and err.output.startswith("Tool error:")


async def test_agent_as_tool_budget_copied_per_call():
    child, _ = make("c", [text("a"), text("b")])
    parent, _ = make(
        "p",
        [batch(("ask_c", {"input": "1"}), ("ask_c", {"input": "2"})), text("done")],
        tools=[child.as_tool(budget=RunBudget(max_total_tokens=2))],
    )
    result = await Runner.run(parent, "x")
    errors = [e for e in result.entries if isinstance(e, ToolResultEntry) and e.is_error]
    assert errors == []
    child2, _ = make("c", [text("a")])
    parent2, _ = make(
        "p",
        [call("ask_c", {"input": "1"}), text("done")],
        tools=[child2.as_tool(budget=RunBudget(max_total_tokens=1))],
    )
    r = await Runner.run(parent2, "x")
    out = [e.output for e in r.entries if isinstance(e, ToolResultEntry)][0]
    assert out == "Tool error: total tokens 2 exceeds budget 1"


# ------------------------------------------------------------------ structured output


class City(BaseModel):
    name: str
    population: int


async def test_structured_output_prompt_fallback():
    agent, provider = make(
        "a", [text('```json\n{"name": "Paris", "population": 2}\n```')], output_type=City
    )
    result = await Runner.run(agent, "x")
    assert result.output == City(name="Paris", population=2)
    sys_prompt = provider.calls[0][0].content
    assert sys_prompt.startswith("## Output format") and "JSON Schema" in sys_prompt
    assert provider.requests[0]["response_format"] is None


async def test_structured_output_native_when_supported():
    class Native(ScriptedProvider):
        supports_json_schema = True

    provider = Native([text('{"name": "Rome", "population": 3}')])
    agent = Agent(name="a", model=provider, output_type=City)
    result = await Runner.run(agent, "x")
    assert result.output.name == "Rome"
    rf = provider.requests[0]["response_format"]
    assert rf["type"] == "json_schema" and rf["json_schema"]["strict"] is True
    assert rf["json_schema"]["name"] == "output"
    assert not provider.calls[0] or provider.calls[0][0].role != "system"


async def test_repair_turn_then_success():
    agent, provider = make(
        "a", [text("not json"), text('{"name": "Oslo", "population": 1}')], output_type=City
    )
    result = await Runner.run(agent, "x")
    assert result.output.name == "Oslo" and result.turns == 2
    repair = provider.calls[1][-1]
    assert repair.role == "user" and "could not be parsed" in repair.content


async def test_repair_exhausted_raises_with_type_name():
    agent, _ = make("a", [text("nope"), text("still nope")], output_type=City)
    with pytest.raises(OutputValidationError) as info:
        await Runner.run(agent, "x")
    assert info.value.output_type_name == "City"
    agent2, _ = make("a", [text('{"name": 1}')], output_type=City, output_repair=False)
    with pytest.raises(OutputValidationError, match="Failed to parse output as City"):
        await Runner.run(agent2, "x")


async def test_output_type_override_str_forces_text():
    agent, _ = make("a", [text("plain")], output_type=City)
    result = await Runner.run(agent, "x", output_type=str)
    assert result.output == "plain"


def test_output_helpers():
    spec = resolve_structured_output(City, False)
    assert spec is not None and not spec.use_native
    assert resolve_structured_output(str, True) is None
    block = format_output_instructions(spec)
    assert '"population"' in block and "JSON Schema" in block
    exc = OutputValidationError("boom")
    prompt = DefaultOutputRepair().build_prompt(exc, 1)
    assert "boom" in prompt and "could not be parsed" in prompt
    assert DefaultOutputRepair().build_prompt(exc, 2) is None


# ------------------------------------------------------------------ approvals


@tool(needs_approval=True)
async def sensitive() -> str:
    return "secret done"


async def test_approval_approve_in_stream():
    agent, _ = make("a", [call("sensitive", {}), text("ok")], tools=[sensitive])
    out = []
    async for ev in Runner.stream(agent, "x"):
        if isinstance(ev, events.ApprovalRequired):
            ev.approve()
        if isinstance(ev, events.ToolCallCompleted):
            out.append(ev.output)
    assert out == ["secret done"]


async def test_approval_reject_and_undecided_deny():
    agent, _ = make("a", [call("sensitive", {}), text("ok")], tools=[sensitive])
    evs = []
    async for ev in Runner.stream(agent, "x"):
        evs.append(ev)
        if isinstance(ev, events.ApprovalRequired):
            ev.reject()
    done = [e for e in evs if isinstance(e, events.ToolCallCompleted)][0]
    assert done.output == "Tool sensitive was not approved." and done.is_error
    assert not any(isinstance(e, events.ToolCallStarted) for e in evs)
    agent2, _ = make("a", [call("sensitive", {}), text("ok")], tools=[sensitive])
    result = await Runner.run(agent2, "x")
    assert "not approved" in [e for e in result.entries if isinstance(e, ToolResultEntry)][0].output


@pytest.mark.parametrize(
    ("decision", "approved"),
    [("allow", True), (" ALLOW ", True), ("deny", False), ("ask", False), (True, True), (0, False)],
)
async def test_approval_handler_decisions(decision, approved):
    async def handler(call_, ctx):
        await asyncio.sleep(0)
        return decision

    agent, _ = make(
        "a", [call("sensitive", {}), text("ok")], tools=[sensitive], approval_handler=handler
    )
    result = await Runner.run(agent, "x")
    out = [e for e in result.entries if isinstance(e, ToolResultEntry)][0].output
    assert (out == "secret done") is approved


async def test_approval_handler_raising_denies_and_reports():
    def handler(call_, ctx):
        raise RuntimeError("handler broke")

    agent, _ = make(
        "a", [call("sensitive", {}), text("ok")], tools=[sensitive], approval_handler=handler
    )
    evs = [e async for e in Runner.stream(agent, "x")]
    assert any(isinstance(e, events.ToolCallFailed) for e in evs)
    assert "not approved" in [e for e in evs if isinstance(e, events.ToolCallCompleted)][0].output


async def test_approval_predicate_raising():
    def pred(args, ctx):
        raise ValueError("cannot decide")

    @tool(needs_approval=pred)
    async def guarded() -> str:
        return "x"

    agent, _ = make("a", [call("guarded", {}), text("ok")], tools=[guarded])
    result = await Runner.run(agent, "x")
    out = [e for e in result.entries if isinstance(e, ToolResultEntry)][0].output
    assert out == "Tool guarded was not approved (approval check failed)."


async def test_approval_predicate_sees_args():
    @tool(needs_approval=lambda args, ctx: args.get("path", "").startswith("/etc"))
    async def read(path: str) -> str:
        return "read " + path

    agent, _ = make(
        "a",
        [batch(("read", {"path": "a.txt"}), ("read", {"path": "/etc/x"})), text("ok")],
        tools=[read],
    )
    result = await Runner.run(agent, "x")
    outs = sorted(e.output for e in result.entries if isinstance(e, ToolResultEntry))
    assert outs == ["Tool read was not approved.", "read a.txt"]


async def test_approval_channel_scopes():
    from lovia.approvals import ApprovalChannel

    ch = ApprovalChannel()
    f1 = ch.register("c", scope="s1")
    assert ch.register("c", scope="s1") is f1
    f2 = ch.register("c", scope="s2")
    assert ch.is_pending("c", scope="s1")
    ch.release(scope="s1", decision=True)
    assert f1.result() is True and not f2.done()
    assert ch.resolve("c", False, scope="s2") and f2.result() is False
    assert not ch.resolve("c", True, scope="s2")
    ch.discard("c", scope="s2")
    assert not ch.is_pending("c", scope="s2")


async def test_rejection_message_reaches_model():
    agent, provider = make("a", [call("sensitive", {}), text("ok")], tools=[sensitive])
    async for ev in Runner.stream(agent, "x"):
        if isinstance(ev, events.ApprovalRequired):
            ev.reject("use the staging database instead")
    tool_msg = [m for m in provider.calls[1] if m.role == "tool"][0]
    assert tool_msg.content == (
        "Tool sensitive was not approved. The user said: use the staging database instead"
    )


async def test_message_completed_carries_turn_usage():
    from lovia.messages import AssistantTurn, Usage

    agent, _ = make("a", [AssistantTurn("hi", usage=Usage(7, 3))])
    evs = [e async for e in Runner.stream(agent, "x")]
    done = next(e for e in evs if isinstance(e, events.MessageCompleted))
    assert done.usage == Usage(7, 3)
