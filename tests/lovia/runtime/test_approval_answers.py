"""An approval's answer travels with the decision to the approved call (``current_approval``):
what the approver said reaches the tool without a side table keyed by call id."""

import asyncio

from lovia import Agent, Runner, events, tool
from lovia.approvals import ApprovalChannel
from lovia.run_context import current_approval
from lovia.testing import ScriptedProvider, batch, text


def _seen_by(seen: dict[str, object]):
    @tool(needs_approval=True)
    async def edit(path: str) -> str:
        await asyncio.sleep(0)  # parallel siblings interleave here
        seen[path] = current_approval.get()
        return path

    @tool
    async def look(path: str) -> str:
        seen[path] = current_approval.get()
        return path

    return [edit, look]


async def test_each_approved_call_sees_its_own_answer_and_others_see_none():
    seen: dict[str, object] = {}
    script = [
        batch(
            ("edit", {"path": "a"}, "c1"),
            ("edit", {"path": "b"}, "c2"),
            ("edit", {"path": "c"}, "c3"),
            ("look", {"path": "d"}, "c4"),
        ),
        text("done"),
    ]
    agent = Agent(name="a", model=ScriptedProvider(script), tools=_seen_by(seen))
    answers = {"c1": {"text": "for a"}, "c2": {"text": "for b"}}
    async for ev in Runner.stream(agent, "go"):
        if isinstance(ev, events.ApprovalRequired):
            if ev.call.id in answers:
                ev.approve(answer=answers[ev.call.id])
            else:
                ev.approve()  # approved without an answer
    assert seen == {"a": answers["c1"], "b": answers["c2"], "c": None, "d": None}
    assert current_approval.get() is None


async def test_decision_is_the_loops_future_and_a_rejection_keeps_its_answer_from_the_tool():
    seen: dict[str, object] = {}
    agent = Agent(
        name="a",
        model=ScriptedProvider([batch(("edit", {"path": "a"}, "c1")), text("done")]),
        tools=_seen_by(seen),
    )
    decided: list[bool] = []
    async for ev in Runner.stream(agent, "go"):
        if isinstance(ev, events.ApprovalRequired):
            future = ev.decision()
            assert ev.decision() is future and not future.done()
            ev.reject("not now", answer={"why": "not now"})
            ev.approve(answer={"late": True})  # the first decision stands
            decided.append(await future)
        elif isinstance(ev, events.ToolCallCompleted):
            assert ev.is_error and "The user said: not now" in ev.output
    assert decided == [False] and seen == {}


async def test_the_channel_forgets_an_answer_with_its_call():
    channel = ApprovalChannel()
    future = channel.register("c1", scope="s")
    assert channel.answer("c1", scope="s") is None
    channel.approve("c1", scope="s", answer="reviewed")
    assert await future is True and channel.answer("c1", scope="s") == "reviewed"
    assert channel.answer("c1") is None  # another scope, another call
    channel.discard("c1", scope="s")
    assert channel.answer("c1", scope="s") is None
