"""The default policy as the run loop drives it: defaults, recall, reactive overflow, sessions."""

import json

import pytest
from context_helpers import FakeSummarizer, WindowProvider, out

from lovia import (
    Agent,
    Compaction,
    ContextOverflowError,
    ContextPolicy,
    FileResultStore,
    InMemoryCheckpointer,
    InMemoryResultStore,
    InMemorySession,
    ResultStore,
    Runner,
    events,
    tool,
)
from lovia.checkpointer import CheckpointOptions
from lovia.context import (
    CompactionState,
    ContextResult,
    NoopContextPolicy,
    OffloadToolResults,
    default_policy,
)
from lovia.context.state import SCRATCH_KEY, result_digest
from lovia.messages import AssistantTurn, ToolCall, Usage
from lovia.run_context import RunContext
from lovia.testing import ScriptedProvider, call, text
from lovia.tools import make_recall_tool, recall_tool_result
from lovia.tools.recall import RECALL_PARAMETERS
from lovia.transcript import InputEntry, ToolResultEntry, entries_to_messages

BIG = 40_000


@tool
async def fetch(n: int) -> str:
    """Fetch a big page."""
    return f"page {n}:" + "p" * BIG


def turn(name, args, call_id, *, input_tokens=0):
    """A scripted tool call whose usage does not feed calibration (input 0)."""
    return AssistantTurn(
        content=None,
        tool_calls=[ToolCall(call_id, name, json.dumps(args))],
        usage=Usage(input_tokens=input_tokens, output_tokens=1),
    )


def answer(content="done"):
    return AssistantTurn(content=content, usage=Usage(input_tokens=0, output_tokens=1))


def view_chars(entries):
    return sum(len(m.content or "") for m in entries_to_messages(entries))


class OverflowingProvider(ScriptedProvider):
    """Raises ContextOverflowError (before any output) when the view is over ``limit`` chars."""

    def __init__(self, script, *, limit, reported_window=None):
        super().__init__(script)
        self.limit = limit
        self.reported_window = reported_window
        self.overflows = 0

    async def stream(self, entries, *, tools=None, response_format=None, settings=None):
        if view_chars(entries) > self.limit:
            self.overflows += 1
            raise ContextOverflowError("prompt is too long", reported_window=self.reported_window)
        async for d in super().stream(
            entries, tools=tools, response_format=response_format, settings=settings
        ):
            yield d


class Spy(Compaction):
    """Compaction that records the requests the loop sends it."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.requests = []

    async def compact(self, req):
        self.requests.append(
            (req.overflow, req.last_input_tokens, [t.name for t in req.tools], req.session_id)
        )
        return await super().compact(req)


# --------------------------------------------------------------------------- defaults


def test_default_agent_uses_a_fresh_compaction():
    a, b = Agent(name="a"), Agent(name="b")
    assert isinstance(a.context_policy, Compaction)
    assert a.context_policy is not b.context_policy
    assert isinstance(default_policy(), Compaction)
    assert isinstance(a.context_policy, ContextPolicy)


def test_top_level_exports():
    import lovia
    import lovia.context

    for name in ("Compaction", "ContextPolicy", "FileResultStore", "InMemoryResultStore"):
        assert name in lovia.__all__
    assert "ResultStore" in lovia.__all__
    assert lovia.Compaction is Compaction and lovia.ResultStore is ResultStore
    assert lovia.FileResultStore is FileResultStore
    assert lovia.InMemoryResultStore is InMemoryResultStore
    for name in [
        "ClearToolResults",
        "CompactionRequest",
        "CompactionState",
        "Compaction",
        "ContextPolicy",
        "ContextResult",
        "FileResultStore",
        "InMemoryResultStore",
        "LLMSummarizer",
        "NoopContextPolicy",
        "OffloadRecord",
        "OffloadToolResults",
        "REQUIRED_SECTIONS",
        "ResultStore",
        "SUMMARY_SYSTEM_PROMPT",
        "SUMMARY_WRAPPER",
        "Stage",
        "StageContext",
        "SummarizeHistory",
        "Summarizer",
        "SummaryState",
        "TokenBudget",
        "TokenCounter",
        "clear_marker",
        "offload_marker",
        "render_view",
        "summary_entry",
        "transcript_to_text",
    ]:
        assert name in lovia.context.__all__
        assert getattr(lovia.context, name) is not None


async def test_default_policy_without_window_sends_the_transcript_itself():
    provider = ScriptedProvider([call("fetch", {"n": 1}), text("ok")])
    agent = Agent(name="a", model=provider, tools=[fetch])
    evs = [e async for e in Runner.stream(agent, "go")]
    assert not any(isinstance(e, events.ContextCompacted) for e in evs)
    assert len(provider.calls[1][2].content) > BIG


async def test_recall_tool_is_injected_and_a_user_tool_wins():
    provider = ScriptedProvider([text("ok")])
    await Runner.run(Agent(name="a", model=provider, tools=[fetch]), "go")
    names = [t["function"]["name"] for t in provider.requests[0]["tools"]]
    assert names == ["fetch", "recall_tool_result"]

    @tool(name="recall_tool_result")
    async def mine(ref: str) -> str:
        """My own recall."""
        return "mine"

    provider = ScriptedProvider([text("ok")])
    await Runner.run(Agent(name="a", model=provider, tools=[mine]), "go")
    [schema] = provider.requests[0]["tools"]
    assert schema["function"]["description"] == "My own recall."
    provider = ScriptedProvider([text("ok")])
    await Runner.run(Agent(name="a", model=provider, context_policy=NoopContextPolicy()), "go")
    assert provider.requests[0]["tools"] is None


# --------------------------------------------------------------------------- recall


def test_recall_tool_schema():
    t = make_recall_tool(None)
    assert t.name == "recall_tool_result" == recall_tool_result.name
    assert t.parameters == RECALL_PARAMETERS
    assert t.parameters["required"] == ["ref"]
    assert t.parameters["additionalProperties"] is False
    assert t.parameters["properties"]["ref"]["type"] == "string"


async def test_recall_resolution_order():
    entries = [
        InputEntry(role="user", content="go"),
        ToolResultEntry(call_id="c1", output="first"),
        ToolResultEntry(call_id="c1", output="second"),
        ToolResultEntry(call_id="c2", output="other"),
    ]
    ctx = RunContext(context=None, entries=entries, agent=Agent(name="a"))
    t = make_recall_tool(None)
    assert await t.invoke({"ref": "c1"}, ctx) == "second"
    assert await t.invoke({"ref": result_digest("other")}, ctx) == "other"
    assert await t.invoke({"ref": "nope"}, ctx) == "No tool result found for reference 'nope'."
    store = InMemoryResultStore()
    await store.put("c2", "from store")
    assert await make_recall_tool(store).invoke({"ref": "c2"}, ctx) == "from store"

    class Broken:
        async def put(self, key, content):
            pass

        async def get(self, key):
            raise OSError("down")

    assert await make_recall_tool(Broken()).invoke({"ref": "c1"}, ctx) == "second"


async def test_recall_is_dispatched_through_the_runner():
    provider = WindowProvider(
        [
            turn("fetch", {"n": 1}, "c1"),
            turn("fetch", {"n": 2}, "c2"),
            turn("fetch", {"n": 3}, "c3"),
            turn("recall_tool_result", {"ref": "c1"}, "r1"),
            answer(),
        ],
        window=30_000,
    )
    store = InMemoryResultStore()
    agent = Agent(
        name="a",
        model=provider,
        tools=[fetch],
        context_policy=Compaction(
            reserve_output_tokens=0, store=store, stages=[OffloadToolResults(keep_last=1)]
        ),
    )
    result = await Runner.run(agent, "go")
    recalled = [e for e in result.entries if isinstance(e, ToolResultEntry)][-1]
    assert recalled.call_id == "r1" and recalled.output == "page 1:" + "p" * BIG
    # the model saw a marker for c1 that names the digest, and the store holds the page
    seen = provider.calls[3]
    tool_msgs = {m.tool_call_id: m.content for m in seen if m.role == "tool"}
    assert "trimmed to a preview" in tool_msgs["c1"]
    assert await store.get(result_digest("page 1:" + "p" * BIG)) is not None
    # compaction never touches the transcript or the result
    assert all(len(e.output) > BIG for e in result.entries[1:7] if isinstance(e, ToolResultEntry))


# --------------------------------------------------------------------------- proactive


async def test_proactive_compaction_emits_an_event_and_keeps_the_transcript():
    provider = WindowProvider(
        [turn("fetch", {"n": i}, f"c{i}") for i in range(4)] + [answer()], window=40_000
    )
    policy = Spy(reserve_output_tokens=0, compact_to=0.55, summarizer=FakeSummarizer())
    agent = Agent(
        name="a", instructions="Be brief.", model=provider, tools=[fetch], context_policy=policy
    )
    evs = [e async for e in Runner.stream(agent, "go")]
    compacted = [e for e in evs if isinstance(e, events.ContextCompacted)]
    assert compacted and compacted[0].notice.reason == "offload"
    assert compacted[0].notice.reactive is False
    assert compacted[0].notice.detail[0].startswith("context was ")
    assert len(compacted[0].entries_before) == len(compacted[0].entries_after)
    result = evs[-1].result
    assert sum(len(e.output) for e in result.entries if isinstance(e, ToolResultEntry)) > 4 * BIG
    # every call saw the system prompt first, and the policy saw the active tools
    assert all(c[0].role == "system" for c in provider.calls)
    assert policy.requests[0][2] == ["fetch", "recall_tool_result"]
    assert max(view_chars(v) for v in provider._views) < 3 * BIG


async def test_window_probe_runs_once_and_only_for_an_unset_window():
    class Probing(ScriptedProvider):
        probes = 0

        async def discover_context_window(self):
            type(self).probes += 1
            return None

    for policy, expected in (
        (Compaction(), 1),
        (Compaction(context_window=50_000), 0),
        (NoopContextPolicy(), 0),
    ):
        Probing.probes = 0
        provider = Probing([call("fetch", {"n": 1}), text("ok")])
        agent = Agent(name="a", model=provider, tools=[fetch], context_policy=policy)
        await Runner.run(agent, "go")
        assert Probing.probes == expected


# --------------------------------------------------------------------------- reactive


async def test_reactive_overflow_compacts_and_retries_once():
    provider = OverflowingProvider(
        [turn("fetch", {"n": i}, f"c{i}") for i in range(3)] + [answer()], limit=3 * BIG
    )
    policy = Spy()
    agent = Agent(name="a", model=provider, tools=[fetch], context_policy=policy)
    evs = [e async for e in Runner.stream(agent, "go")]
    assert isinstance(evs[-1], events.RunCompleted) and evs[-1].result.output == "done"
    reactive = [e for e in evs if isinstance(e, events.ContextCompacted)]
    assert len(reactive) == 1 and reactive[0].notice.reactive is True
    assert reactive[0].notice.reason.startswith("reactive_")
    assert provider.overflows == 1
    # the retry's request saw overflow=True and no stale input-token count
    overflow_reqs = [r for r in policy.requests if r[0]]
    assert overflow_reqs == [(True, None, ["fetch", "recall_tool_result"], None)]


async def test_overflow_reported_window_is_learned_and_persisted_in_the_checkpoint():
    provider = OverflowingProvider(
        [turn("fetch", {"n": i}, f"c{i}") for i in range(3)] + [answer()],
        limit=3 * BIG,
        reported_window=20_000,
    )
    checkpointer = InMemoryCheckpointer()
    agent = Agent(name="a", model=provider, tools=[fetch], context_policy=Compaction())
    await Runner.run(
        agent, "go", checkpoint=CheckpointOptions(checkpointer=checkpointer, run_id="r1")
    )
    snap = await checkpointer.load("r1")
    state = CompactionState.load(snap.context_state)
    assert state.learned_windows == {"\x00": 20_000}
    assert state.offloaded or state.cleared


async def test_unhelpful_reactive_compaction_re_raises_the_overflow():
    provider = OverflowingProvider([answer()], limit=100)
    agent = Agent(name="a", model=provider, context_policy=Compaction())
    with pytest.raises(ContextOverflowError):
        await Runner.run(agent, "x" * 500)
    assert provider.overflows == 1

    class Doomed:
        calls = 0

        async def compact(self, req):
            type(self).calls += 1
            return ContextResult(
                entries=req.entries, changed=True, compacted=True, tokens_after=100
            )

    provider = OverflowingProvider([answer()], limit=100)
    agent = Agent(name="a", model=provider, context_policy=Doomed())
    with pytest.raises(ContextOverflowError):
        await Runner.run(agent, "x" * 500)
    assert Doomed.calls == 2 and provider.overflows == 1  # the doomed retry was never sent


async def test_reactive_summary_failure_re_raises_and_persists_the_failure():
    s = FakeSummarizer(fail=True)
    provider = OverflowingProvider([answer()], limit=1000)
    checkpointer = InMemoryCheckpointer()
    agent = Agent(name="a", model=provider, context_policy=Compaction(summarizer=s))
    history = [{"role": "user", "content": "x" * 3000} for _ in range(3)]
    from lovia.messages import Message

    with pytest.raises(ContextOverflowError):
        await Runner.run(
            agent,
            [Message(**m) for m in history],
            checkpoint=CheckpointOptions(checkpointer=checkpointer, run_id="r"),
        )
    snap = await checkpointer.load("r")
    assert CompactionState.load(snap.context_state).summary_failures == 1
    assert len(s.calls) == 1


# --------------------------------------------------------------------------- sessions


async def test_session_meta_carries_state_to_the_next_run():
    session = InMemorySession()
    script = [turn("fetch", {"n": i}, f"c{i}") for i in range(4)] + [answer("one")]
    provider = WindowProvider(script, window=40_000)
    agent = Agent(
        name="a",
        model=provider,
        tools=[fetch],
        context_policy=Compaction(reserve_output_tokens=0, summarizer=FakeSummarizer(fail=True)),
    )
    await Runner.run(agent, "go", session=session, session_id="s")
    [seg] = await session.segments("s")
    assert SCRATCH_KEY in seg.meta["context_state"]
    assert seg.meta["context_notice"]["reason"] == "offload"
    # the session stores the full outputs, never markers or summaries
    outputs = [e.output for e in seg.entries if isinstance(e, ToolResultEntry)]
    assert all(len(o) > BIG for o in outputs)
    decided = CompactionState.load(seg.meta["context_state"]).offloaded

    # a new agent (fresh policy instance, no in-process cache) resumes the decisions
    provider2 = WindowProvider([answer("two")], window=40_000)
    spy = Spy(reserve_output_tokens=0)
    agent2 = Agent(name="a", model=provider2, tools=[fetch], context_policy=spy)
    evs = [e async for e in Runner.stream(agent2, "again", session=session, session_id="s")]
    assert not any(isinstance(e, events.ContextCompacted) for e in evs)
    tool_msgs = {m.tool_call_id: m.content for m in provider2.calls[0] if m.role == "tool"}
    for cid in decided:
        assert "trimmed to a preview" in tool_msgs[cid]
    assert spy.requests[0][3] == "s"


async def test_in_process_cache_carries_state_without_session_meta():
    class MetaLess(InMemorySession):
        async def append(self, session_id, entries, *, run_id=None, meta=None):
            return await super().append(session_id, entries, run_id=run_id, meta=None)

    session = MetaLess()
    policy = Compaction(reserve_output_tokens=0, summarizer=FakeSummarizer(fail=True))
    provider = WindowProvider(
        [turn("fetch", {"n": i}, f"c{i}") for i in range(4)] + [answer("one"), answer("two")],
        window=40_000,
    )
    agent = Agent(name="a", model=provider, tools=[fetch], context_policy=policy)
    await Runner.run(agent, "go", session=session, session_id="s")
    assert (await session.segments("s"))[0].meta is None
    evs = [e async for e in Runner.stream(agent, "again", session=session, session_id="s")]
    assert not any(isinstance(e, events.ContextCompacted) for e in evs)
    last = {m.tool_call_id: m.content for m in provider.calls[-1] if m.role == "tool"}
    assert any("trimmed to a preview" in c for c in last.values())


def test_out_helper_is_a_tool_result():
    assert isinstance(out("c", "x"), ToolResultEntry)


async def test_summaries_never_reach_the_session():
    session = InMemorySession()
    s = FakeSummarizer()
    provider = WindowProvider(
        [turn("fetch", {"n": i}, f"c{i}") for i in range(6)] + [answer()], window=30_000
    )
    agent = Agent(
        name="a",
        model=provider,
        tools=[fetch],
        context_policy=Compaction(reserve_output_tokens=0, summarizer=s),
    )
    result = await Runner.run(agent, "go", session=session, session_id="s")
    assert s.calls  # a summary was made ...
    assert any("<context_summary>" in (m.content or "") for m in provider.calls[-1])
    [seg] = await session.segments("s")
    assert seg.entries == result.entries  # ... but the session holds the real transcript
    assert not any("<context_summary>" in str(getattr(e, "content", "")) for e in seg.entries)


async def test_resumed_run_replays_checkpointed_decisions():
    checkpointer = InMemoryCheckpointer()
    options = CheckpointOptions(checkpointer=checkpointer, run_id="run-1")
    # the script runs out after four tool turns: the run fails with a checkpoint behind it
    provider = WindowProvider([turn("fetch", {"n": i}, f"c{i}") for i in range(4)], window=40_000)
    policy = Compaction(reserve_output_tokens=0, summarizer=FakeSummarizer(fail=True))
    agent = Agent(name="a", model=provider, tools=[fetch], context_policy=policy)
    with pytest.raises(AssertionError, match="ran out of canned responses"):
        await Runner.run(agent, "go", checkpoint=options)
    snap = await checkpointer.load("run-1")
    assert CompactionState.load(snap.context_state).offloaded

    provider2 = WindowProvider([answer("resumed")], window=40_000)
    agent2 = Agent(
        name="a",
        model=provider2,
        tools=[fetch],
        context_policy=Compaction(reserve_output_tokens=0, summarizer=FakeSummarizer(fail=True)),
    )
    evs = [e async for e in Runner.stream(agent2, "ignored", checkpoint=options)]
    assert evs[-1].result.output == "resumed"
    assert not any(isinstance(e, events.ContextCompacted) for e in evs)
    tool_msgs = [m.content for m in provider2.calls[0] if m.role == "tool"]
    assert any("trimmed to a preview" in c for c in tool_msgs)


# --------------------------------------------------------------------------- usage


async def test_summary_calls_count_in_the_runs_usage():
    """The user pays for the summaries a compaction asks for: they are in RunResult.usage
    and on the ContextCompacted event, next to the turns' own usage."""
    from lovia.context import LLMSummarizer

    summary_usage = Usage(input_tokens=700, output_tokens=90, cache_read_tokens=300)
    summaries = ScriptedProvider(
        [AssistantTurn(content=f"summary {i}", usage=summary_usage) for i in range(8)]
    )
    summarizer = LLMSummarizer(summaries, required_sections=None)
    script = [turn("fetch", {"n": i}, f"c{i}", input_tokens=0) for i in range(6)] + [answer()]
    provider = WindowProvider(script, window=30_000)
    agent = Agent(
        name="a",
        model=provider,
        tools=[fetch],
        context_policy=Compaction(reserve_output_tokens=0, summarizer=summarizer),
    )
    stream = Runner.stream(agent, "go")
    evs = [e async for e in stream]
    result = evs[-1].result
    made = len(summaries.calls)
    assert made >= 1
    turns = len(provider.calls)
    assert result.usage == Usage(
        input_tokens=700 * made,
        output_tokens=turns + 90 * made,
        cache_read_tokens=300 * made,
    )
    compacted = [e for e in evs if isinstance(e, events.ContextCompacted) and e.usage]
    assert sum(e.usage.input_tokens for e in compacted) == 700 * made
