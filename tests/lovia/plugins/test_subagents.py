"""Subagents: spawn / wait / send / cancel, delivery paths, lifecycles and the run_child seam."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

import lovia
from lovia import (
    Agent,
    InMemorySession,
    RunBudget,
    RunCancelled,
    RunContext,
    Runner,
    Subagents,
    UserError,
    events,
    tool,
)
from lovia.messages import Usage
from lovia.plugins import ChildSpec, SubagentReport
from lovia.plugins.subagents import BOUNDED_INSTRUCTIONS, DETACHED_INSTRUCTIONS
from lovia.runtime.result import RunResult
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.tracing import InMemoryTracer
from lovia.transcript import InputEntry, ModelDelta, ToolResultEntry, TranscriptEntry

# --------------------------------------------------------------------------- helpers


class GatedProvider:
    """Holds every model call until ``gate`` is set, then delegates to ``inner``."""

    name = "gated"
    model = None
    supports_json_schema = False

    def __init__(self, inner: ScriptedProvider, gate: asyncio.Event) -> None:
        self.inner = inner
        self.gate = gate
        self.entered = 0

    async def stream(self, entries: list[TranscriptEntry], **kw: Any) -> AsyncIterator[ModelDelta]:
        self.entered += 1
        await self.gate.wait()
        async for delta in self.inner.stream(entries, **kw):
            yield delta


def gated_child(name: str = "slow", reply: str = "x") -> tuple[Agent[Any], asyncio.Event]:
    gate = asyncio.Event()
    return Agent(name=name, model=GatedProvider(ScriptedProvider([text(reply)]), gate)), gate


def child(script: list[Any], name: str = "researcher", **kw: Any) -> Agent[Any]:
    return Agent(name=name, model=ScriptedProvider(script), **kw)


def parent(script: list[Any], plugin: Subagents, **kw: Any) -> tuple[Agent[Any], ScriptedProvider]:
    provider = ScriptedProvider(script)
    return Agent(name=kw.pop("name", "parent"), model=provider, plugins=[plugin], **kw), provider


def result_of(entries: list[TranscriptEntry], call_id: str) -> str:
    for entry in entries:
        if isinstance(entry, ToolResultEntry) and entry.call_id == call_id:
            return entry.output
    raise AssertionError(f"no tool result for {call_id}")


def user_texts(messages: list[Any]) -> list[str]:
    return [m.text for m in messages if m.role == "user"]


async def wait_until(predicate: Any, seconds: float = 5.0) -> None:
    for _ in range(int(seconds / 0.005)):
        if predicate():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("condition never became true")


@tool
async def barrier(ctx: RunContext[Any]) -> str:
    """Return once something is queued in the run's mailbox."""
    await wait_until(lambda: bool(ctx.mailbox))
    return "ok"


def spawn(prompt: str, cid: str = "c_spawn", **extra: Any) -> tuple[str, dict[str, Any], str]:
    return ("spawn_subagent", {"prompt": prompt, **extra}, cid)


# --------------------------------------------------------------------------- construction


def test_exported_names():
    assert lovia.Subagents is Subagents
    assert "Subagents" in lovia.__all__
    import lovia.plugins as plugins

    for name in ("ChildSpec", "DeliverFn", "RunChildFn", "SubagentReport", "Subagents"):
        assert name in plugins.__all__ and hasattr(plugins, name)


def test_children_need_unique_names():
    with pytest.raises(UserError, match="Subagents requires every child agent to have a name"):
        Subagents([Agent(name="")])
    with pytest.raises(UserError, match="Subagents got two child agents named 'a'"):
        Subagents([Agent(name="a"), Agent(name="a")])
    single = Subagents(Agent(name="solo"))
    assert single._catalog and list(single._catalog) == ["solo"]


async def test_setup_without_arguments_and_tool_schemas():
    inst = await Subagents([Agent(name="b"), Agent(name="a")]).setup()
    tools = {t.name: t for t in inst.tools}
    assert list(tools) == [
        "spawn_subagent",
        "wait_subagents",
        "send_to_subagent",
        "cancel_subagent",
    ]
    spawn_schema = tools["spawn_subagent"].parameters
    assert spawn_schema["properties"]["agent"]["enum"] == ["a", "b"]
    assert sorted(spawn_schema["required"]) == ["agent", "prompt"]
    assert spawn_schema["additionalProperties"] is False
    wait_props = tools["wait_subagents"].parameters["properties"]
    assert wait_props["timeout_seconds"] == {
        "type": "integer",
        "default": 60,
        "description": wait_props["timeout_seconds"]["description"],
    }
    assert wait_props["ids"]["default"] is None
    assert tools["send_to_subagent"].parameters["required"] == ["id", "message"]
    assert tools["cancel_subagent"].parameters["required"] == ["id"]
    await inst.aclose()

    one = await Subagents(Agent(name="solo")).setup()
    schema = one.tools[0].parameters
    assert schema["required"] == ["prompt"] and schema["properties"]["agent"]["enum"] == ["solo"]
    clone = await Subagents().setup()
    assert "agent" not in clone.tools[0].parameters["properties"]
    assert clone.tools[0].parameters["required"] == ["prompt"]


async def test_instructions_per_mode():
    async def deliver(report: SubagentReport) -> None:
        return None

    bounded = (await Subagents().setup()).instructions
    detached = (await Subagents(deliver=deliver).setup()).instructions
    assert bounded == BOUNDED_INSTRUCTIONS and detached == DETACHED_INSTRUCTIONS
    for text_ in (bounded, detached):
        assert text_.startswith("## Background subagents")
        for name in ("spawn_subagent", "wait_subagents", "send_to_subagent", "cancel_subagent"):
            assert name in text_
        assert "standalone" in text_ and "denied automatically" in text_
    assert "IMPORTANT: never finish your reply while subagents are still running" in bounded
    assert "IMPORTANT" not in detached and "may finish your reply" in detached
    assert (await Subagents(instructions="").setup()).instructions is None
    assert (await Subagents(instructions="Use helpers.").setup()).instructions == "Use helpers."


# --------------------------------------------------------------------------- delivery paths


async def test_spawn_and_wait_in_one_turn_returns_report_once_and_folds_usage():
    plugin = Subagents(child([text("tides go in and out")]))
    agent, provider = parent(
        [batch(spawn("research tides"), ("wait_subagents", {}, "c_wait")), text("final")], plugin
    )
    result = await Runner.run(agent, "go")
    assert result.output == "final"
    spawned = result_of(result.entries, "c_spawn")
    assert spawned.startswith("Subagent t1 (researcher) started in the background; ")
    waited = result_of(result.entries, "c_wait")
    assert waited == "[subagent t1: done] agent=researcher elapsed=0s\ntides go in and out"
    # withdrawn from the mailbox: the next model call carries no [subagent message
    assert not any("[subagent" in t for t in user_texts(provider.calls[1]))
    assert not any(
        isinstance(e, InputEntry) and "[subagent" in str(e.content) for e in result.entries
    )
    # 2 parent turns x 2 tokens + the child's 2 tokens
    assert result.usage.total_tokens == 6


async def test_report_without_wait_arrives_as_one_user_message_next_turn():
    plugin = Subagents(child([text("findings!")]))
    agent, provider = parent(
        [batch(spawn("research"), ("barrier", {}, "c_bar")), text("done")],
        plugin,
        tools=[barrier],
    )
    seen: list[Any] = []
    handle = Runner.stream(agent, "go")
    async for event in handle:
        if isinstance(event, events.UserMessageInjected):
            seen.append(event)
    result = await handle.result()
    assert result.output == "done"
    reports = [t for t in user_texts(provider.calls[1]) if "[subagent" in t]
    assert reports == ["[subagent t1: done] agent=researcher elapsed=0s\nfindings!"]
    assert len(seen) == 1 and seen[0].content == reports[0] and seen[0].turn == 2


async def test_wait_after_delivery_says_already_delivered_then_all_reported():
    plugin = Subagents(child([text("findings!")]))
    agent, _ = parent(
        [
            batch(spawn("research"), ("barrier", {}, "c_bar")),
            call("wait_subagents", {}, call_id="c_w1"),
            call("wait_subagents", {"ids": ["t1"]}, call_id="c_w2"),
            text("done"),
        ],
        plugin,
        tools=[barrier],
    )
    result = await Runner.run(agent, "go")
    assert result_of(result.entries, "c_w1") == (
        "t1 finished; its report was already delivered as a message."
    )
    assert result_of(result.entries, "c_w2") == (
        "All targeted subagents already finished and were reported."
    )


async def test_wait_edge_cases():
    slow, gate = gated_child()
    plugin = Subagents(slow)
    agent, _ = parent(
        [
            call("wait_subagents", {}, call_id="c_none"),
            call("spawn_subagent", {"prompt": "slow work"}, call_id="c_spawn"),
            call("wait_subagents", {"ids": ["zzz", "t1", "yyy"]}, call_id="c_unknown"),
            call("wait_subagents", {"timeout_seconds": 0}, call_id="c_timeout"),
            call("wait_subagents", {"timeout_seconds": -5}, call_id="c_negative"),
            text("bye"),
        ],
        plugin,
    )
    result = await Runner.run(agent, "go")
    assert result_of(result.entries, "c_none") == "No subagents have been spawned."
    assert result_of(result.entries, "c_unknown") == "Unknown subagent id(s) zzz, yyy (known: t1)."
    timed_out = result_of(result.entries, "c_timeout")
    assert timed_out.startswith("Timed out; still running: t1 slow (0s). ")
    assert result_of(result.entries, "c_negative").startswith("Timed out; still running: t1 slow")
    assert not gate.is_set()


async def test_wait_returns_first_finisher_and_lists_the_rest():
    slow, _gate = gated_child("slow")
    fast = child([text("quick answer")], name="fast")
    plugin = Subagents([slow, fast])
    agent, _ = parent(
        [
            batch(
                spawn("one", "c_s1", agent="slow"),
                spawn("two", "c_s2", agent="fast"),
                ("wait_subagents", {"timeout_seconds": 5}, "c_wait"),
            ),
            call("cancel_subagent", {"id": "t1"}, call_id="c_cancel"),
            text("done"),
        ],
        plugin,
    )
    result = await Runner.run(agent, "go")
    waited = result_of(result.entries, "c_wait")
    assert waited == (
        "[subagent t2: done] agent=fast elapsed=0s\nquick answer\n\nStill running: t1 slow (0s)."
    )


async def test_wait_stops_when_the_parent_run_is_cancelled():
    slow, _gate = gated_child()
    agent, _ = parent(
        [batch(spawn("p"), ("wait_subagents", {"timeout_seconds": 30}, "c_wait")), text("x")],
        Subagents(slow),
    )
    handle = Runner.stream(agent, "go")
    outputs: dict[str, str] = {}
    before = asyncio.all_tasks()
    async for event in handle:
        if isinstance(event, events.ToolCallStarted) and event.call.name == "wait_subagents":
            asyncio.get_running_loop().call_later(0.05, handle.cancel, "user stop")
        if isinstance(event, events.ToolCallCompleted):
            outputs[event.call.id] = event.output
    with pytest.raises(RunCancelled):
        await handle.result()
    assert outputs["c_wait"] == "The run is being cancelled; stopped waiting."
    await asyncio.sleep(0)
    assert not {t for t in asyncio.all_tasks() - before if not t.done()}


# --------------------------------------------------------------------------- spawn results


async def test_spawn_refusals():
    slow, _gate = gated_child("slow")
    plugin = Subagents([slow, child([], name="coder")], max_concurrent=1)
    agent, _ = parent(
        [
            batch(
                spawn("   ", "c_blank", agent="slow"),
                spawn("p", "c_unknown", agent="zzz"),
                spawn("p", "c_missing"),
                spawn("one", "c_ok", agent="slow"),
                spawn("two", "c_full", agent="coder"),
            ),
            text("done"),
        ],
        plugin,
    )
    result = await Runner.run(agent, "go")
    assert result_of(result.entries, "c_blank") == "Nothing spawned: the prompt was empty."
    assert result_of(result.entries, "c_unknown") == (
        "unknown subagent 'zzz' (available: coder, slow)"
    )
    assert "available: coder, slow" in result_of(result.entries, "c_missing")
    assert result_of(result.entries, "c_ok").startswith(
        "Subagent t1 (slow) started in the background;"
    )
    assert result_of(result.entries, "c_full").startswith(
        "At capacity (1 subagents running: t1 slow (0s)). "
    )


async def test_ids_restart_per_run():
    plugin = Subagents(child([text("a"), text("b")]))
    for _ in range(2):
        agent, _ = parent(
            [batch(spawn("p"), ("wait_subagents", {}, "c_wait")), text("done")], plugin
        )
        result = await Runner.run(agent, "go")
        assert result_of(result.entries, "c_wait").startswith("[subagent t1: done]")


async def test_children_run_concurrently():
    both = asyncio.Barrier(2)

    @tool
    async def meet() -> str:
        """Wait for the other child."""
        await asyncio.wait_for(both.wait(), timeout=5)
        return "met"

    def worker(name: str) -> Agent[Any]:
        return child([call("meet", {}), text(f"{name} done")], name=name, tools=[meet])

    plugin = Subagents([worker("a"), worker("b")])
    agent, _ = parent(
        [
            batch(
                spawn("x", "c1", agent="a"),
                spawn("y", "c2", agent="b"),
                ("wait_subagents", {"timeout_seconds": 10}, "c_w1"),
            ),
            call("wait_subagents", {"timeout_seconds": 10}, call_id="c_w2"),
            text("done"),
        ],
        plugin,
    )
    result = await asyncio.wait_for(Runner.run(agent, "go"), timeout=10)
    collected = result_of(result.entries, "c_w1") + result_of(result.entries, "c_w2")
    assert "a done" in collected and "b done" in collected
    assert "Timed out" not in collected


# --------------------------------------------------------------------------- cancel and teardown


async def test_cancel_subagent_and_no_report():
    gate = asyncio.Event()

    @tool
    async def nap() -> str:
        """Park until the gate opens."""
        await asyncio.wait_for(gate.wait(), timeout=5)
        return "napped"

    @tool
    async def release() -> str:
        """Open the gate."""
        gate.set()
        return "released"

    napper = child([call("nap", {}), text("never sent")], name="napper", tools=[nap])
    agent, provider = parent(
        [
            call("spawn_subagent", {"prompt": "nap"}, call_id="c_spawn"),
            batch(("cancel_subagent", {"id": "t1"}, "c_cancel"), ("release", {}, "c_rel")),
            call("wait_subagents", {}, call_id="c_wait"),
            batch(
                ("cancel_subagent", {"id": "t1"}, "c_again"),
                ("cancel_subagent", {"id": "t9"}, "c_unknown"),
            ),
            text("done"),
        ],
        Subagents(napper),
        tools=[release],
    )
    result = await Runner.run(agent, "go")
    assert result_of(result.entries, "c_cancel").startswith("Subagent t1 asked to stop; ")
    assert result_of(result.entries, "c_wait") == "t1 was cancelled; no report."
    assert result_of(result.entries, "c_again") == "Subagent t1 already finished."
    assert result_of(result.entries, "c_unknown") == "No subagent 't9' (known: t1)."
    assert not any("[subagent" in t for call_ in provider.calls for t in user_texts(call_))
    assert napper.model.script  # the child never made its second model call


async def test_stopping_child_shows_in_summary():
    gate = asyncio.Event()

    @tool
    async def nap() -> str:
        """Park until the gate opens."""
        await asyncio.wait_for(gate.wait(), timeout=5)
        return "napped"

    napper = child([call("nap", {}), text("never")], name="napper", tools=[nap])
    agent, provider = parent(
        [
            call("spawn_subagent", {"prompt": "nap"}, call_id="c_spawn"),
            call("cancel_subagent", {"id": "t1"}, call_id="c_cancel"),
            call("send_to_subagent", {"id": "t1", "message": "hurry"}, call_id="c_send"),
            call("wait_subagents", {"timeout_seconds": 0}, call_id="c_wait"),
            text("bye"),
        ],
        Subagents(napper),
    )
    result = await Runner.run(agent, "go")
    assert result_of(result.entries, "c_send").startswith("Subagent t1 is stopping; ")
    assert result_of(result.entries, "c_wait").startswith(
        "Timed out; still running: t1 napper (0s) (stopping). "
    )
    reminder = [t for t in user_texts(provider.calls[2]) if "Background subagents" in t]
    assert reminder and "t1 napper (0s) (stopping)" in reminder[0]


async def test_bounded_run_end_cancels_children_without_leaking_tasks():
    slow, gate = gated_child()
    gated = slow.model

    @tool
    async def until_parked() -> str:
        """Return once the child is parked inside its model call."""
        await wait_until(lambda: gated.entered > 0)
        return "parked"

    plugin = Subagents(slow)
    agent, _ = parent(
        [call("spawn_subagent", {"prompt": "p"}), call("until_parked", {}), text("bye")],
        plugin,
        tools=[until_parked],
    )
    before = asyncio.all_tasks()
    result = await asyncio.wait_for(Runner.run(agent, "go"), timeout=5)
    assert result.output == "bye"
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set()
    assert gated.entered == 1 and gated.inner.calls == []  # parked, then cancelled
    assert not gate.is_set() and not plugin._detached


async def test_bounded_teardown_after_a_failed_run_also_cancels():
    slow, _gate = gated_child()
    agent, _ = parent([call("spawn_subagent", {"prompt": "p"})], Subagents(slow))
    before = asyncio.all_tasks()
    with pytest.raises(AssertionError, match="ran out"):
        await Runner.run(agent, "go")
    await asyncio.sleep(0)
    assert asyncio.all_tasks() - before == set()


# --------------------------------------------------------------------------- report text


async def test_failure_report():
    doomed = child([call("missing_tool", {})], name="doomed")
    agent, _ = parent(
        [batch(spawn("fail"), ("wait_subagents", {}, "c_wait")), text("done")],
        Subagents(doomed, max_turns=1),
    )
    result = await Runner.run(agent, "go")
    waited = result_of(result.entries, "c_wait")
    first, second = waited.split("\n", 1)
    assert first == "[subagent t1: failed] agent=doomed elapsed=0s"
    assert second.startswith("MaxTurnsExceeded: Run exceeded max_turns=1")


async def test_report_body_truncation_and_non_string_output():
    body = "H" + "x" * 498 + "T"
    agent, _ = parent(
        [batch(spawn("p"), ("wait_subagents", {}, "c_wait")), text("done")],
        Subagents(child([text(body)]), max_result_chars=100),
    )
    result = await Runner.run(agent, "go")
    waited = result_of(result.entries, "c_wait")
    expected_body = body[:66] + "\n… [400 chars truncated] …\n" + body[-34:]
    assert waited == "[subagent t1: done] agent=researcher elapsed=0s\n" + expected_body

    async def structured(spec: ChildSpec) -> RunResult:
        return RunResult(
            output={"n": 1}, entries=[], final_agent=spec.agent, usage=Usage(), turns=1
        )

    async def empty(spec: ChildSpec) -> RunResult:
        return RunResult(output=None, entries=[], final_agent=spec.agent, usage=Usage(), turns=1)

    for run_child, expected in ((structured, "{'n': 1}"), (empty, "")):
        agent, _ = parent(
            [batch(spawn("p"), ("wait_subagents", {}, "c_wait")), text("done")],
            Subagents(child([]), run_child=run_child, max_result_chars=None),
        )
        result = await Runner.run(agent, "go")
        assert result_of(result.entries, "c_wait") == (
            f"[subagent t1: done] agent=researcher elapsed=0s\n{expected}"
        )


# --------------------------------------------------------------------------- self-clone


async def test_self_clone_child():
    provider = ScriptedProvider(
        [
            batch(spawn("sub work"), ("wait_subagents", {}, "c_wait")),
            text("child answer"),  # popped by the clone
            text("parent final"),
        ]
    )
    agent = Agent(name="bot", model=provider, plugins=[Subagents()])
    result = await Runner.run(agent, "go")
    assert result.output == "parent final"
    assert result_of(result.entries, "c_spawn").startswith("Subagent t1 (bot-sub) started")
    waited = result_of(result.entries, "c_wait")
    assert waited == "[subagent t1: done] agent=bot-sub elapsed=0s\nchild answer"
    child_call = provider.calls[1]
    assert [(m.role, m.text) for m in child_call] == [("user", "sub work")]
    # the clone has no Subagents tools: the plugin was stripped
    parent_tools = {t["function"]["name"] for t in provider.requests[0]["tools"]}
    child_tools = {t["function"]["name"] for t in provider.requests[1]["tools"] or []}
    assert "spawn_subagent" in parent_tools
    assert not child_tools & {"spawn_subagent", "wait_subagents"}


async def test_self_clone_keeps_instructions_and_tools_but_not_handoffs():
    @tool
    async def lookup() -> str:
        """Look something up."""
        return "found"

    other = Agent(name="other")
    provider = ScriptedProvider(
        [
            batch(spawn("task"), ("wait_subagents", {}, "c_wait")),
            text("child"),
            text("parent"),
        ]
    )
    agent = Agent(
        name="bot",
        instructions="Be terse.",
        model=provider,
        tools=[lookup],
        handoffs=[other],
        plugins=[Subagents()],
    )
    await Runner.run(agent, "go")
    child_call = provider.calls[1]
    assert child_call[0].role == "system" and child_call[0].text == "Be terse."
    names = {t["function"]["name"] for t in provider.requests[1]["tools"]}
    assert "lookup" in names
    assert not any(n.startswith("transfer_to_") or "subagent" in n for n in names)


# --------------------------------------------------------------------------- injector


async def test_status_injector_while_children_run():
    slow, _gate = gated_child()
    agent, provider = parent(
        [call("spawn_subagent", {"prompt": "p"}, call_id="c_spawn"), text("bye")],
        Subagents(slow),
    )
    result = await Runner.run(agent, "go")
    assert "## Background subagents" in provider.calls[0][0].text
    assert not any("Background subagents running" in t for t in user_texts(provider.calls[0]))
    reminders = [t for t in user_texts(provider.calls[1]) if "Background subagents running" in t]
    assert reminders == [
        "<system-reminder>\nBackground subagents running: t1 slow (0s).\n"
        "Do not finish your reply while they run — wait_subagents or cancel_subagent first."
        "\n</system-reminder>"
    ]
    # injected into the view only
    assert not any(
        isinstance(e, InputEntry) and "system-reminder" in str(e.content) for e in result.entries
    )


async def test_status_injector_detached_and_idle():
    async def deliver(report: SubagentReport) -> None:
        return None

    plugin = Subagents(child([]), deliver=deliver)
    inst = await plugin.setup()
    ctx = RunContext(context=None, entries=[], agent=Agent(name="p"))
    assert inst.view_injectors[0](ctx) is None

    slow, gate = gated_child()
    agent, provider = parent(
        [call("spawn_subagent", {"prompt": "p"}), text("bye")], Subagents(slow, deliver=deliver)
    )
    await Runner.run(agent, "go")
    reminders = [t for t in user_texts(provider.calls[1]) if "Background subagents running" in t]
    assert reminders == [
        "<system-reminder>\nBackground subagents running: t1 slow (0s).\n</system-reminder>"
    ]
    gate.set()


# --------------------------------------------------------------------------- detached mode


async def test_detached_child_outlives_run_and_is_delivered():
    slow, gate = gated_child(reply="late news")
    reports: list[SubagentReport] = []
    delivered = asyncio.Event()

    async def deliver(report: SubagentReport) -> None:
        reports.append(report)
        delivered.set()

    plugin = Subagents(slow, deliver=deliver)
    agent, provider = parent([call("spawn_subagent", {"prompt": "p"}), text("bye")], plugin)
    result = await Runner.run(agent, "go", session=InMemorySession(), session_id="s1")
    assert result.output == "bye"
    assert "may finish your reply" in provider.calls[0][0].text
    assert not reports and len(plugin._detached) == 1
    gate.set()
    await asyncio.wait_for(delivered.wait(), timeout=5)
    (report,) = reports
    assert (report.id, report.agent, report.prompt, report.session_id) == ("t1", "slow", "p", "s1")
    assert report.error is None and report.result is not None
    assert report.result.output == "late news"
    assert report.text == "[subagent t1: done] agent=slow elapsed=0s\nlate news"
    await asyncio.sleep(0)
    assert not plugin._detached


async def test_detached_reports_skip_the_mailbox_and_deliver_errors_are_logged(caplog):
    calls = 0

    async def deliver(report: SubagentReport) -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("host gone")

    plugin = Subagents(child([text("r")]), deliver=deliver)
    agent, provider = parent(
        [
            batch(spawn("p"), ("wait_subagents", {}, "c_wait")),
            text("done"),
        ],
        plugin,
    )
    with caplog.at_level(logging.ERROR, logger="lovia.plugins.subagents"):
        result = await Runner.run(agent, "go")
    assert calls == 1
    assert result_of(result.entries, "c_wait") == (
        "t1 finished; its report was already delivered as a message."
    )
    assert not any("[subagent" in t for t in user_texts(provider.calls[1]))
    assert any("deliver_failed" in r.getMessage() for r in caplog.records)


async def test_detached_failure_report_carries_the_error():
    reports: list[SubagentReport] = []

    async def deliver(report: SubagentReport) -> None:
        reports.append(report)

    plugin = Subagents(child([]), deliver=deliver)
    agent, _ = parent([batch(spawn("p"), ("wait_subagents", {}, "c_wait")), text("done")], plugin)
    await Runner.run(agent, "go")
    (report,) = reports
    assert report.result is None and isinstance(report.error, AssertionError)
    assert report.text.startswith("[subagent t1: failed] agent=researcher elapsed=0s\n")
    assert "AssertionError: ScriptedProvider ran out" in report.text


# --------------------------------------------------------------------------- run_child seam


async def test_run_child_override_receives_the_spec():
    specs: list[ChildSpec] = []
    budget = RunBudget(max_tool_calls=3)

    async def run_child(spec: ChildSpec) -> RunResult:
        specs.append(spec)
        return RunResult(
            output="from override", entries=[], final_agent=spec.agent, usage=Usage(), turns=1
        )

    target = child([])
    plugin = Subagents(target, run_child=run_child, max_turns=7, budget=budget)
    agent, _ = parent(
        [
            batch(spawn("delegated", "c1"), spawn("again", "c2"), ("wait_subagents", {}, "c_w")),
            call("wait_subagents", {}, call_id="c_w2"),
            text("done"),
        ],
        plugin,
    )
    result = await Runner.run(agent, "go", session=InMemorySession(), session_id="sx")
    assert "from override" in result_of(result.entries, "c_w")
    first, second = specs
    assert (first.id, first.prompt, first.parent_session_id, first.max_turns) == (
        "t1",
        "delegated",
        "sx",
        7,
    )
    assert first.agent is target and second.id == "t2"
    assert (
        first.budget is not None
        and first.budget is not budget
        and first.budget is not second.budget
    )
    assert first.budget.max_tool_calls == 3
    assert first.mailbox is not second.mailbox and not first.token.is_cancelled


async def test_run_child_cancelled_outcome_is_silent():
    async def run_child(spec: ChildSpec) -> RunResult:
        raise RunCancelled("stopped elsewhere")

    agent, provider = parent(
        [batch(spawn("p"), ("wait_subagents", {}, "c_wait")), text("done")],
        Subagents(child([]), run_child=run_child),
    )
    result = await Runner.run(agent, "go")
    assert result_of(result.entries, "c_wait") == "t1 was cancelled; no report."
    assert not any("[subagent" in t for t in user_texts(provider.calls[1]))


async def test_run_child_sees_the_token_trip_on_cancel():
    tripped = asyncio.Event()

    async def run_child(spec: ChildSpec) -> RunResult:
        await wait_until(lambda: spec.token.is_cancelled)
        tripped.set()
        raise RunCancelled("ok")

    agent, _ = parent(
        [
            call("spawn_subagent", {"prompt": "p"}),
            call("cancel_subagent", {"id": "t1"}, call_id="c_cancel"),
            call("wait_subagents", {"timeout_seconds": 5}, call_id="c_wait"),
            text("done"),
        ],
        Subagents(child([]), run_child=run_child),
    )
    result = await Runner.run(agent, "go")
    assert tripped.is_set()
    assert result_of(result.entries, "c_wait") == "t1 was cancelled; no report."


# --------------------------------------------------------------------------- send_to_subagent


async def test_send_to_subagent_reaches_the_childs_next_turn():
    gate = asyncio.Event()

    @tool
    async def nap() -> str:
        """Park until the gate opens."""
        await asyncio.wait_for(gate.wait(), timeout=5)
        return "napped"

    @tool
    async def release() -> str:
        """Open the gate."""
        gate.set()
        return "released"

    child_provider = ScriptedProvider([call("nap", {}), text("adjusted")])
    worker = Agent(name="worker", model=child_provider, tools=[nap])
    agent, _ = parent(
        [
            call("spawn_subagent", {"prompt": "work"}, call_id="c_spawn"),
            batch(
                ("send_to_subagent", {"id": "t1", "message": "  "}, "c_blank"),
                ("send_to_subagent", {"id": "t7", "message": "hi"}, "c_unknown"),
                ("send_to_subagent", {"id": "t1", "message": "use metric units"}, "c_send"),
            ),
            batch(("release", {}, "c_rel"), ("wait_subagents", {"timeout_seconds": 5}, "c_wait")),
            call("send_to_subagent", {"id": "t1", "message": "more"}, call_id="c_late"),
            text("done"),
        ],
        Subagents(worker),
        tools=[release],
    )
    result = await Runner.run(agent, "go")
    assert result_of(result.entries, "c_blank") == "Nothing sent: the message was empty."
    assert result_of(result.entries, "c_unknown") == "No subagent 't7' (known: t1)."
    assert result_of(result.entries, "c_send").startswith("Delivered to t1; ")
    assert result_of(result.entries, "c_wait").endswith("\nadjusted")
    assert result_of(result.entries, "c_late").startswith("Subagent t1 already finished; ")
    second_child_call = child_provider.calls[1]
    assert user_texts(second_child_call) == ["work", "use metric units"]


async def test_send_with_no_spawns_lists_none():
    agent, _ = parent(
        [
            batch(
                ("send_to_subagent", {"id": "t1", "message": "hi"}, "c_send"),
                ("cancel_subagent", {"id": "t1"}, "c_cancel"),
            ),
            text("done"),
        ],
        Subagents(child([])),
    )
    result = await Runner.run(agent, "go")
    assert result_of(result.entries, "c_send") == "No subagent 't1' (known: none)."
    assert result_of(result.entries, "c_cancel") == "No subagent 't1' (known: none)."


# --------------------------------------------------------------------------- inheritance


async def test_child_inherits_deps_tracer_and_is_denied_approvals():
    seen: list[Any] = []

    @tool(needs_approval=True)
    async def risky(ctx: RunContext[Any]) -> str:
        """Needs a human."""
        return "did it"

    @tool
    async def peek(ctx: RunContext[Any]) -> str:
        """Read the deps."""
        seen.append(ctx.deps)
        return "peeked"

    worker = child(
        [call("peek", {}), call("risky", {}, call_id="c_risky"), text("gave up")],
        name="worker",
        tools=[peek, risky],
    )
    tracer = InMemoryTracer()
    agent, _ = parent(
        [batch(spawn("p"), ("wait_subagents", {"timeout_seconds": 5}, "c_wait")), text("done")],
        Subagents(worker),
    )
    result = await Runner.run(agent, "go", context={"user": "ada"}, tracer=tracer)
    assert seen == [{"user": "ada"}]
    assert result_of(result.entries, "c_wait").endswith("\ngave up")
    runs = [s.attrs["agent"] for s in tracer.spans if s.name == "run"]
    assert runs == ["parent", "worker"]
    # 2 parent turns + 3 child turns, 2 tokens each
    assert result.usage.total_tokens == 10


async def test_child_usage_folds_even_when_it_fails():
    doomed = child([call("missing_tool", {}), call("missing_tool", {})], name="doomed")
    agent, _ = parent(
        [batch(spawn("p"), ("wait_subagents", {}, "c_wait")), text("done")],
        Subagents(doomed, max_turns=2),
    )
    result = await Runner.run(agent, "go")
    assert "[subagent t1: failed]" in result_of(result.entries, "c_wait")
    assert result.usage.total_tokens == 4 + 4


async def test_child_budget_is_enforced_per_spawn():
    worker = child(
        [call("missing_tool", {}), text("a"), call("missing_tool", {}), text("b")], name="w"
    )
    agent, _ = parent(
        [
            batch(spawn("one", "c1"), ("wait_subagents", {}, "c_w1")),
            batch(spawn("two", "c2"), ("wait_subagents", {"ids": ["t2"]}, "c_w2")),
            text("done"),
        ],
        Subagents(worker, budget=RunBudget(max_tool_calls=1)),
    )
    result = await Runner.run(agent, "go")
    # each spawn gets a fresh copy, so the second child is not over budget
    assert result_of(result.entries, "c_w1").endswith("\na")
    assert result_of(result.entries, "c_w2").endswith("\nb")


async def test_wait_arguments_are_coerced_leniently():
    from lovia.plugins.subagents import _arg_ids, _arg_seconds

    assert _arg_ids(None) is None and _arg_ids([]) is None and _arg_ids(" ") is None
    assert _arg_ids("t1") == ["t1"] and _arg_ids(["t1", " t1 ", "t2"]) == ["t1", "t2"]
    assert _arg_seconds("2.5", 60) == 2.5 and _arg_seconds(True, 60) == 60
    assert _arg_seconds("soon", 60) == 60 and _arg_seconds(float("nan"), 60) == 60

    slow, _gate = gated_child()
    agent, _ = parent(
        [
            call("spawn_subagent", {"prompt": "p"}),
            call("wait_subagents", {"ids": "t1", "timeout_seconds": "0"}, call_id="c_wait"),
            text("bye"),
        ],
        Subagents(slow),
    )
    result = await Runner.run(agent, "go")
    assert result_of(result.entries, "c_wait").startswith("Timed out; still running: t1 slow")


# --------------------------------------------------------------------------- restore seam


async def test_restore_takes_children_back_and_reports_only_the_undelivered_ones():
    from lovia.plugins.subagents import RestoredChild

    ran: list[ChildSpec] = []

    async def run_child(spec: ChildSpec) -> RunResult:
        ran.append(spec)
        return RunResult(
            output=f"report of {spec.id}",
            entries=[],
            final_agent=spec.agent,
            usage=Usage(),
            turns=1,
        )

    async def restore(ctx: RunContext[Any]) -> list[RestoredChild]:
        assert ctx.session_id == "sr"
        return [
            RestoredChild(id="t1", agent="researcher", prompt="old", call_id="c1", delivered=True),
            RestoredChild(id="t3", agent="researcher", prompt="again", call_id="c3"),
        ]

    plugin = Subagents(child([]), run_child=run_child, restore=restore)
    agent, provider = parent(
        [
            batch(spawn("fresh", "c4"), ("wait_subagents", {"ids": ["t1", "t3"]}, "c_w")),
            call("wait_subagents", {"ids": ["t4"]}, call_id="c_w2"),
            text("done"),
        ],
        plugin,
    )
    result = await Runner.run(agent, "go", session=InMemorySession(), session_id="sr")
    assert [(s.id, s.prompt, s.call_id, s.restored) for s in ran] == [
        ("t3", "again", "c3", True),
        ("t4", "fresh", "c4", False),  # new ids continue after the restored ones
    ]
    waited = result_of(result.entries, "c_w")
    assert "report of t3" in waited and "report of t1" not in waited
    everything = "\n".join(user_texts(provider.calls[-1])) + result_of(result.entries, "c_w2")
    assert everything.count("report of t4") == 1 and "report of t1" not in everything


def test_supervised_instructions_say_approvals_reach_the_user():
    text_ = Subagents(approvals_reach_user=True)._instructions() or ""
    assert "shown to the user" in text_ and "denied" not in text_
    assert "denied automatically" in BOUNDED_INSTRUCTIONS
