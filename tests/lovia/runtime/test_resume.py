"""Checkpointed runs on real SQLite files: save points, finalisation order, resume and replay."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    Handoff,
    RunCancelled,
    RunContext,
    RunHead,
    Runner,
    SQLiteCheckpointer,
    SQLiteSession,
    UserError,
    tool,
)
from lovia import events as ev
from lovia.context.policy import CompactionRequest, ContextResult
from lovia.messages import AssistantTurn
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)

SID = "chat"


@dataclass
class Stores:
    path: Path
    session: SQLiteSession
    checkpointer: SQLiteCheckpointer
    ops: list[str] = field(default_factory=list)

    def options(self, run_id: str = "run-1", **kw: Any) -> CheckpointOptions:
        return CheckpointOptions(checkpointer=self.checkpointer, run_id=run_id, **kw)

    def run_kwargs(self, run_id: str = "run-1", **kw: Any) -> dict[str, Any]:
        return {
            "session": self.session,
            "session_id": SID,
            "checkpoint": self.options(run_id, **kw),
        }


class RecordingSession(SQLiteSession):
    ops: list[str]

    async def append(self, session_id: str, entries: list[TranscriptEntry], **kw: Any) -> str:
        self.ops.append("session.append")
        return await super().append(session_id, entries, **kw)


class RecordingCheckpointer(SQLiteCheckpointer):
    ops: list[str]
    saves: list[tuple[list[TranscriptEntry], RunHead]]

    async def append(self, run_id: str, entries: list[TranscriptEntry], head: RunHead) -> None:
        await super().append(run_id, entries, head)
        self.ops.append(f"checkpoint.{head.status}")
        self.saves.append((list(entries), head))

    async def delete(self, run_id: str) -> None:
        await super().delete(run_id)
        self.ops.append("checkpoint.delete")


async def open_stores(path: Path) -> Stores:
    ops: list[str] = []
    session = RecordingSession(path)
    checkpointer = RecordingCheckpointer(path)
    session.ops = checkpointer.ops = ops
    checkpointer.saves = []
    return Stores(path, session, checkpointer, ops)


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[Stores]:
    s = await open_stores(tmp_path / "state.db")
    yield s
    await s.session.aclose()
    await s.checkpointer.aclose()


@pytest.fixture
async def reference(tmp_path: Path) -> AsyncIterator[Stores]:
    """A second database for an uninterrupted run of the same script."""
    s = await open_stores(tmp_path / "reference.db")
    yield s
    await s.session.aclose()
    await s.checkpointer.aclose()


def model_turns(entries: Sequence[TranscriptEntry]) -> int:
    """How many model outputs a run's entries hold (to continue a script after a resume)."""
    count, inside = 0, False
    for e in entries:
        is_model = not isinstance(e, (InputEntry, ToolResultEntry))
        count += is_model and not inside
        inside = is_model
    return count


async def remaining(stores: Stores, script: list[AssistantTurn], run_id: str = "run-1") -> Any:
    snap = await stores.checkpointer.load(run_id)
    done = model_turns(snap.entries) if snap is not None else 0
    return ScriptedProvider(script[done:])


async def drive(handle: Any) -> list[ev.Event]:
    return [event async for event in handle]


# ------------------------------------------------------------------ tools used below


@dataclass
class Ledger:
    """Counts every tool execution: started and finished."""

    started: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)


def counting_tools(ledger: Ledger, *, stop_on: str | None = None) -> list[Any]:
    @tool
    async def step(name: str, ctx: RunContext[Any]) -> str:
        """Do one step."""
        ledger.started.append(name)
        ledger.finished.append(name)
        if name == stop_on:
            ctx.cancel_token.cancel("host shutdown")
        return f"did {name}"

    return [step]


THREE_STEPS: list[AssistantTurn] = [
    call("step", {"name": "a"}, call_id="c1"),
    call("step", {"name": "b"}, call_id="c2"),
    call("step", {"name": "c"}, call_id="c3"),
    text("all done"),
]


def writer(model: Any, tools: list[Any], **kw: Any) -> Agent[Any]:
    return Agent(name="writer", instructions="You write.", model=model, tools=tools, **kw)


async def interrupt_three_steps(stores: Stores, ledger: Ledger, *, stop_on: str, **kw: Any) -> None:
    """Run THREE_STEPS until the step named ``stop_on`` cancels the run."""
    with pytest.raises(RunCancelled):
        await Runner.run(
            writer(ScriptedProvider(THREE_STEPS), counting_tools(ledger, stop_on=stop_on)),
            "go",
            **kw,
            **stores.run_kwargs(),
        )


# ------------------------------------------------------------------ save points and ordering


async def test_saves_follow_the_model_output_and_every_tool_result(stores: Stores) -> None:
    await Runner.run(
        writer(ScriptedProvider(THREE_STEPS), counting_tools(Ledger())),
        "go",
        **stores.run_kwargs(),
    )
    deltas = [[type(e).__name__ for e in entries] for entries, _ in stores.checkpointer.saves]
    model, result, end = ["ToolCallEntry"], ["ToolResultEntry"], []
    assert deltas == [
        ["InputEntry", "ToolCallEntry"],
        result,
        end,
        model,
        result,
        end,
        model,
        result,
        end,
        ["AssistantTextEntry"],
        end,
        end,
    ]
    statuses = [head.status for _, head in stores.checkpointer.saves]
    assert statuses == ["running"] * 11 + ["completed"]


async def test_batch_deltas_carry_the_scripted_call_ids(stores: Stores) -> None:
    ledger = Ledger()
    script = [
        batch(("step", {"name": "1"}), ("step", {"name": "2"}), ("step", {"name": "3"})),
        text("ok"),
    ]
    await Runner.run(
        writer(ScriptedProvider(script), counting_tools(ledger)), "go", **stores.run_kwargs()
    )
    ids = {
        e.call_id
        for entries, _ in stores.checkpointer.saves
        for e in entries
        if isinstance(e, ToolCallEntry)
    }
    assert ids == {"call_0_step", "call_1_step", "call_2_step"}


@pytest.mark.parametrize("delete_on_success", [False, True])
async def test_session_append_comes_strictly_after_the_final_checkpoint_write(
    stores: Stores, delete_on_success: bool
) -> None:
    agent = writer(ScriptedProvider(THREE_STEPS), counting_tools(Ledger()))
    await Runner.run(agent, "go", **stores.run_kwargs(delete_on_success=delete_on_success))
    final = "checkpoint.delete" if delete_on_success else "checkpoint.completed"
    assert stores.ops[-2:] == [final, "session.append"]
    assert stores.ops.count("session.append") == 1


async def test_many_concurrent_runs_share_one_session_file(stores: Stores) -> None:
    ledger = Ledger()

    async def one(n: int) -> Any:
        script = [call("step", {"name": f"{n}"}, call_id=f"c{n}"), text(f"answer {n}")]
        return await Runner.run(
            writer(ScriptedProvider(script), counting_tools(ledger)),
            f"question {n}",
            session=stores.session,
            session_id=f"chat-{n % 3}",
            checkpoint=stores.options(f"run-{n}"),
        )

    results = await asyncio.gather(*(one(n) for n in range(24)))
    assert [r.output for r in results] == [f"answer {n}" for n in range(24)]
    again = await asyncio.gather(*(one(n) for n in range(24)))  # re-issued: replayed, no dupes
    assert [r.output for r in again] == [f"answer {n}" for n in range(24)]
    assert sorted(ledger.finished, key=int) == [str(n) for n in range(24)]
    for k in range(3):
        segments = await stores.session.segments(f"chat-{k}")
        assert sorted(s.run_id for s in segments) == sorted(
            f"run-{n}" for n in range(24) if n % 3 == k
        )
        for seg in segments:
            n = seg.run_id.removeprefix("run-")
            assert seg.entries[0] == InputEntry("user", f"question {n}")
            assert seg.entries[-1] == AssistantTextEntry(f"answer {n}")
            assert len(seg.entries) == 4


# ------------------------------------------------------------------ completed runs


async def test_a_completed_run_replays_without_calling_the_model(stores: Stores) -> None:
    ledger = Ledger()
    first = await Runner.run(
        writer(ScriptedProvider(THREE_STEPS), counting_tools(ledger)), "go", **stores.run_kwargs()
    )
    empty = ScriptedProvider([])
    events = await drive(
        Runner.stream(writer(empty, counting_tools(ledger)), "other input", **stores.run_kwargs())
    )
    assert [type(e).__name__ for e in events] == ["RunStarted", "RunCompleted"]
    replayed = events[-1].result  # type: ignore[attr-defined]
    assert replayed.output == first.output == "all done"
    assert replayed.entries == first.entries and replayed.usage == first.usage
    assert empty.calls == [] and ledger.finished == ["a", "b", "c"]
    assert len(await stores.session.segments(SID)) == 1


class CrashingSession(SQLiteSession):
    async def append(self, session_id: str, entries: list[TranscriptEntry], **kw: Any) -> str:
        raise ConnectionError("process died before the session append")


async def test_replay_heals_a_missing_session_append(stores: Stores) -> None:
    ledger = Ledger()
    async with CrashingSession(stores.path) as crashing:
        with pytest.raises(ConnectionError):
            await Runner.run(
                writer(ScriptedProvider(THREE_STEPS), counting_tools(ledger)),
                "go",
                session=crashing,
                session_id=SID,
                checkpoint=stores.options(),
            )
    assert await stores.session.segments(SID) == []
    snap = await stores.checkpointer.load("run-1")
    assert snap is not None and snap.status == "completed"
    result = await Runner.run(
        writer(ScriptedProvider([]), counting_tools(ledger)), "go", **stores.run_kwargs()
    )
    assert result.output == "all done"
    [segment] = await stores.session.segments(SID)
    assert segment.run_id == "run-1" and segment.entries == result.entries
    assert ledger.finished == ["a", "b", "c"]


# ------------------------------------------------------------------ interrupted runs


async def test_an_interrupted_run_resumes_where_it_stopped(
    stores: Stores, reference: Stores
) -> None:
    expected = await Runner.run(
        writer(ScriptedProvider(THREE_STEPS), counting_tools(Ledger())),
        "go",
        **reference.run_kwargs(),
    )
    ledger = Ledger()
    await interrupt_three_steps(stores, ledger, stop_on="b")
    snap = await stores.checkpointer.load("run-1")
    assert snap is not None and snap.status == "interrupted" and snap.turns == 2
    assert await stores.session.segments(SID) == []

    provider = await remaining(stores, THREE_STEPS)
    result = await Runner.run(
        writer(provider, counting_tools(ledger)), "ignored on resume", **stores.run_kwargs()
    )
    assert ledger.finished == ["a", "b", "c"]
    assert len(provider.calls) == 2
    assert result.entries == expected.entries
    assert result.usage == expected.usage and result.turns == expected.turns
    assert await stores.session.load(SID) == await reference.session.load(SID)


async def test_resume_reloads_history_from_the_session(stores: Stores) -> None:
    await Runner.run(
        writer(ScriptedProvider([text("earlier answer")]), []),
        "earlier question",
        **stores.run_kwargs("run-0"),
    )
    ledger = Ledger()
    await interrupt_three_steps(stores, ledger, stop_on="a")
    provider = await remaining(stores, THREE_STEPS)
    await Runner.run(writer(provider, counting_tools(ledger)), "go", **stores.run_kwargs())
    first_prompt = provider.calls[0]
    assert [m.role for m in first_prompt[:4]] == ["system", "user", "assistant", "user"]
    assert [m.text for m in first_prompt[1:4]] == ["earlier question", "earlier answer", "go"]
    assert [s.run_id for s in await stores.session.segments(SID)] == ["run-0", "run-1"]


def triage_and_specialist(
    triage_script: list[AssistantTurn],
    specialist_script: list[AssistantTurn],
    tools: list[Any],
    on_handoff: Any = None,
) -> tuple[Agent[Any], Agent[Any], ScriptedProvider]:
    specialist_model = ScriptedProvider(specialist_script)
    specialist = Agent(
        name="specialist",
        instructions="You are the specialist.",
        model=specialist_model,
        tools=tools,
    )
    triage = Agent(
        name="triage",
        instructions="You route.",
        model=ScriptedProvider(triage_script),
        handoffs=[Handoff(target=specialist, on_handoff=on_handoff)],
    )
    return triage, specialist, specialist_model


async def test_resume_after_a_handoff_continues_as_the_target_agent(stores: Stores) -> None:
    ledger = Ledger()
    specialist_script = [call("step", {"name": "s1"}), text("specialist answer")]
    triage, _, _ = triage_and_specialist(
        [call("transfer_to_specialist", {})],
        specialist_script,
        counting_tools(ledger, stop_on="s1"),
    )
    with pytest.raises(RunCancelled):
        await Runner.run(triage, "help", **stores.run_kwargs())
    snap = await stores.checkpointer.load("run-1")
    assert snap is not None and snap.agent_name == "specialist"

    triage, specialist, specialist_model = triage_and_specialist(
        [], specialist_script[1:], counting_tools(ledger)
    )
    result = await Runner.run(triage, "help", **stores.run_kwargs())
    assert result.output == "specialist answer"
    assert result.final_agent is specialist
    assert specialist_model.calls[0][0].text == "You are the specialist."
    assert ledger.finished == ["s1"]


async def test_a_handoff_saved_before_the_switch_is_completed_on_resume(stores: Stores) -> None:
    def stop(args: dict[str, Any], ctx: RunContext[Any]) -> None:
        ctx.cancel_token.cancel("shutdown during the handoff")

    triage, _, _ = triage_and_specialist(
        [call("transfer_to_specialist", {"reason": "needs depth"})], [], [], on_handoff=stop
    )
    with pytest.raises(RunCancelled):
        await Runner.run(triage, "help", **stores.run_kwargs())
    snap = await stores.checkpointer.load("run-1")
    assert snap is not None and snap.agent_name == "triage"
    assert isinstance(snap.entries[-1], ToolResultEntry)
    assert snap.entries[-1].output == "Transferred to specialist (needs depth)"

    triage, specialist, specialist_model = triage_and_specialist([], [text("on it")], [])
    events = await drive(Runner.stream(triage, "help", **stores.run_kwargs()))
    handoffs = [e for e in events if isinstance(e, ev.HandoffOccurred)]
    assert [(h.from_agent.name, h.to_agent.name) for h in handoffs] == [("triage", "specialist")]
    result = events[-1].result  # type: ignore[attr-defined]
    assert result.output == "on it" and result.final_agent is specialist
    assert specialist_model.calls[0][0].text == "You are the specialist."


# ------------------------------------------------------------------ parallel batches


@dataclass
class Gate:
    ledger: Ledger = field(default_factory=Ledger)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def tools(self) -> list[Any]:
        @tool
        async def fetch(name: str) -> str:
            """Fetch something; slow ones wait for the gate."""
            self.ledger.started.append(name)
            if name != "fast":
                await self.release.wait()
            self.ledger.finished.append(name)
            return f"fetched {name}"

        return [fetch]


BATCH: list[AssistantTurn] = [
    batch(
        ("fetch", {"name": "fast"}, "p1"),
        ("fetch", {"name": "slow1"}, "p2"),
        ("fetch", {"name": "slow2"}, "p3"),
    ),
    text("batch done"),
]


async def test_cancel_mid_batch_keeps_finished_calls_and_reruns_the_rest(stores: Stores) -> None:
    gate = Gate()
    handle = Runner.stream(
        writer(ScriptedProvider(BATCH), gate.tools()), "go", **stores.run_kwargs()
    )
    async for event in handle:
        if isinstance(event, ev.ToolCallCompleted) and event.call.id == "p1":
            handle.cancel("host shutdown")
    with pytest.raises(RunCancelled):
        await handle
    assert gate.ledger.finished == ["fast"]
    assert sorted(gate.ledger.started) == ["fast", "slow1", "slow2"]
    snap = await stores.checkpointer.load("run-1")
    assert snap is not None and snap.status == "interrupted"
    assert [e.call_id for e in snap.entries if isinstance(e, ToolResultEntry)] == ["p1"]

    gate2 = Gate()
    gate2.release.set()
    result = await Runner.run(
        writer(await remaining(stores, BATCH), gate2.tools()), "go", **stores.run_kwargs()
    )
    assert sorted(gate2.ledger.finished) == ["slow1", "slow2"]
    assert result.output == "batch done"
    results = [e for e in result.entries if isinstance(e, ToolResultEntry)]
    assert sorted(r.call_id for r in results) == ["p1", "p2", "p3"]


async def test_an_abandoned_stream_reruns_every_call_without_a_saved_result(stores: Stores) -> None:
    gate = Gate()
    handle = Runner.stream(
        writer(ScriptedProvider(BATCH), gate.tools()), "go", **stores.run_kwargs()
    )
    events = handle.__aiter__()
    async for event in events:
        if isinstance(event, ev.ToolCallCompleted) and event.call.id == "p1":
            break  # the consumer saw the result before the loop saved it
    await events.aclose()  # the host went away: no terminal save, the head still says running
    snap = await stores.checkpointer.load("run-1")
    assert snap is not None and snap.status == "running"

    gate2 = Gate()
    gate2.release.set()
    result = await Runner.run(
        writer(await remaining(stores, BATCH), gate2.tools()), "go", **stores.run_kwargs()
    )
    assert result.output == "batch done"
    # "fast" finished before the stream was closed, but its result was not saved yet:
    # at-least-once, every call without a checkpointed result runs again.
    assert sorted(gate2.ledger.finished) == ["fast", "slow1", "slow2"]
    assert [type(e).__name__ for e in result.entries].count("ToolResultEntry") == 3


# ------------------------------------------------------------------ approvals across a restart


def guarded_agent(model: Any, ledger: Ledger) -> Agent[Any]:
    @tool(needs_approval=True)
    async def deploy(target: str) -> str:
        """Deploy (needs approval)."""
        ledger.finished.append(target)
        return f"deployed {target}"

    return writer(model, [deploy])


APPROVAL: list[AssistantTurn] = [call("deploy", {"target": "prod"}, call_id="d1"), text("shipped")]


async def approve_all(handle: Any, asked: list[str], *, approve: bool = True) -> Any:
    async for event in handle:
        if isinstance(event, ev.ApprovalRequired):
            asked.append(event.call.id)
            event.approve() if approve else event.reject()
    return await handle


async def test_a_run_closed_while_waiting_for_approval_asks_again_on_resume(
    stores: Stores,
) -> None:
    ledger = Ledger()
    handle = Runner.stream(
        guarded_agent(ScriptedProvider(APPROVAL), ledger), "ship it", **stores.run_kwargs()
    )
    events = handle.__aiter__()
    async for event in events:
        if isinstance(event, ev.ApprovalRequired):
            break
    await events.aclose()
    asked: list[str] = []
    result = await approve_all(
        Runner.stream(
            guarded_agent(await remaining(stores, APPROVAL), ledger),
            "ship it",
            **stores.run_kwargs(),
        ),
        asked,
    )
    assert asked == ["d1"]
    assert ledger.finished == ["prod"] and result.output == "shipped"


async def test_a_run_cancelled_while_waiting_for_approval_asks_again_on_resume(
    stores: Stores,
) -> None:
    ledger = Ledger()
    handle = Runner.stream(
        guarded_agent(ScriptedProvider(APPROVAL), ledger), "ship it", **stores.run_kwargs()
    )
    async for event in handle:
        if isinstance(event, ev.ApprovalRequired):
            handle.cancel("server shutdown")
    with pytest.raises(RunCancelled):
        await handle
    snap = await stores.checkpointer.load("run-1")
    assert snap is not None and snap.status == "interrupted"
    assert not any(isinstance(e, ToolResultEntry) for e in snap.entries)

    asked: list[str] = []
    result = await approve_all(
        Runner.stream(
            guarded_agent(await remaining(stores, APPROVAL), ledger),
            "ship it",
            **stores.run_kwargs(),
        ),
        asked,
    )
    assert asked == ["d1"] and ledger.finished == ["prod"] and result.output == "shipped"


async def test_a_resumed_approval_can_be_denied(stores: Stores) -> None:
    ledger = Ledger()
    handle = Runner.stream(
        guarded_agent(ScriptedProvider(APPROVAL), ledger), "ship it", **stores.run_kwargs()
    )
    async for event in handle:
        if isinstance(event, ev.ApprovalRequired):
            handle.cancel()
    with pytest.raises(RunCancelled):
        await handle
    asked: list[str] = []
    result = await approve_all(
        Runner.stream(
            guarded_agent(await remaining(stores, APPROVAL), ledger),
            "ship it",
            **stores.run_kwargs(),
        ),
        asked,
        approve=False,
    )
    assert asked == ["d1"] and ledger.finished == []
    denied = [e for e in result.entries if isinstance(e, ToolResultEntry)]
    assert [d.output for d in denied] == ["Tool deploy was not approved."]


# ------------------------------------------------------------------ policies and bad input


async def test_resume_only_with_an_unknown_run_fails_when_driven(stores: Stores) -> None:
    handle = Runner.stream(
        writer(ScriptedProvider([text("x")]), []),
        "go",
        **stores.run_kwargs("nope", if_run_exists="resume_only"),
    )
    with pytest.raises(UserError) as info:
        await handle
    assert "No snapshot found for run_id='nope'" in str(info.value)
    assert info.value.hint
    assert await stores.checkpointer.load("nope") is None
    assert await stores.session.segments(SID) == []


async def test_a_snapshot_whose_agent_is_gone_is_refused_and_kept(stores: Stores) -> None:
    await interrupt_three_steps(stores, Ledger(), stop_on="a")
    renamed = Agent(name="editor", model=ScriptedProvider([]))
    with pytest.raises(UserError) as info:
        await Runner.run(renamed, "go", **stores.run_kwargs())
    assert "last active on agent 'writer'" in str(info.value)
    assert info.value.hint and "restart" in info.value.hint
    snap = await stores.checkpointer.load("run-1")
    assert snap is not None and snap.status == "interrupted" and len(snap.entries) == 3


async def test_fail_policy_refuses_an_existing_run_and_restart_starts_over(
    stores: Stores,
) -> None:
    ledger = Ledger()
    await interrupt_three_steps(stores, ledger, stop_on="a")
    with pytest.raises(UserError, match="already exists"):
        await Runner.run(
            writer(ScriptedProvider([]), []), "go", **stores.run_kwargs(if_run_exists="fail")
        )
    result = await Runner.run(
        writer(ScriptedProvider(THREE_STEPS), counting_tools(ledger)),
        "again",
        **stores.run_kwargs(if_run_exists="restart"),
    )
    assert ledger.finished == ["a", "a", "b", "c"]
    assert result.entries[0] == InputEntry("user", "again")


async def test_a_completed_run_of_a_missing_agent_replays_with_the_entry_agent(
    stores: Stores, caplog: pytest.LogCaptureFixture
) -> None:
    await Runner.run(writer(ScriptedProvider([text("fine")]), []), "go", **stores.run_kwargs())
    other = Agent(name="other", model=ScriptedProvider([]))
    with caplog.at_level(logging.WARNING, logger="lovia.runtime.loop"):
        result = await Runner.run(other, "go", **stores.run_kwargs())
    assert result.output == "fine" and result.final_agent is other
    assert "not reachable" in caplog.text


# ------------------------------------------------------------------ compaction state


class CountingPolicy:
    """Keeps a per-conversation counter in the sticky compaction state."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    async def compact(self, req: CompactionRequest) -> ContextResult:
        self.seen.append(int(req.scratch.get("calls", 0)))
        req.scratch["calls"] = int(req.scratch.get("calls", 0)) + 1
        req.scratch["nested"] = {"ids": ["c1", "c2"], "ratio": 1.25}
        return ContextResult(entries=req.entries)


async def test_context_state_round_trips_through_sqlite(stores: Stores) -> None:
    policy = CountingPolicy()
    await interrupt_three_steps(stores, Ledger(), stop_on="b", context_policy=policy)
    snap = await stores.checkpointer.load("run-1")
    assert snap is not None
    assert snap.context_state == {"calls": 2, "nested": {"ids": ["c1", "c2"], "ratio": 1.25}}

    resumed = CountingPolicy()
    await Runner.run(
        writer(await remaining(stores, THREE_STEPS), counting_tools(Ledger())),
        "go",
        context_policy=resumed,
        **stores.run_kwargs(),
    )
    assert resumed.seen == [2, 3]
    [segment] = await stores.session.segments(SID)
    assert segment.meta is not None and segment.meta["context_state"]["calls"] == 4

    follow_up = CountingPolicy()
    await Runner.run(
        writer(ScriptedProvider([text("next")]), []),
        "more",
        context_policy=follow_up,
        **stores.run_kwargs("run-2"),
    )
    assert follow_up.seen == [4]


# ------------------------------------------------------------------ cancellation mid-write


class SlowCheckpointer(SQLiteCheckpointer):
    """Saving a tool result takes a while; the store lets a started write finish."""

    writing: asyncio.Event
    slow = False

    async def append(self, run_id: str, entries: list[TranscriptEntry], head: RunHead) -> None:
        self.slow = bool(entries) and isinstance(entries[-1], ToolResultEntry)
        await super().append(run_id, entries, head)

    async def _write(self, job: Any) -> Any:
        async def slow_job(conn: Any) -> Any:
            if self.slow:
                self.writing.set()
                await asyncio.sleep(0.05)
            return await job(conn)

        return await super()._write(slow_job)


async def test_a_run_cancelled_mid_checkpoint_write_stores_each_entry_once(
    stores: Stores,
) -> None:
    async with SlowCheckpointer(stores.path) as slow:
        slow.writing = asyncio.Event()
        agent = writer(ScriptedProvider(THREE_STEPS), counting_tools(Ledger()))
        task = asyncio.create_task(
            Runner.run(
                agent,
                "go",
                session=stores.session,
                session_id=SID,
                checkpoint=CheckpointOptions(checkpointer=slow, run_id="run-1"),
            )
        )
        await slow.writing.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        snap = await slow.load("run-1")
    assert snap is not None and snap.status == "interrupted"
    assert [type(e).__name__ for e in snap.entries] == [
        "InputEntry",
        "ToolCallEntry",
        "ToolResultEntry",
    ]
    assert json.loads(json.dumps(snap.error))["type"] == "CancelledError"


async def test_resume_from_a_snapshot_object(stores: Stores) -> None:
    await interrupt_three_steps(stores, Ledger(), stop_on="c")
    snap = await stores.checkpointer.load("run-1")
    assert snap is not None
    result = await Runner.run(
        writer(ScriptedProvider([text("all done")]), []),
        "go",
        session=stores.session,
        session_id=SID,
        checkpoint=CheckpointOptions(
            checkpointer=stores.checkpointer, resume_from=snap, delete_on_success=True
        ),
    )
    assert result.output == "all done"
    assert await stores.checkpointer.load("run-1") is None
    assert isinstance((await stores.session.load(SID))[-1], AssistantTextEntry)
