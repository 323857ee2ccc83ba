"""A steer keeps the id ``lovia/steer`` gave it through the mailbox, by the mailbox token the
run loop reports with each delivery (``UserMessageInjected.token``), never by its text."""

from lovia import Agent, Runner, events, tool
from lovia.testing import ScriptedProvider, call, text
from lovia_server.host.run_controller import SteerQueue


async def test_identical_steers_are_reported_with_their_own_ids() -> None:
    steering = SteerQueue()
    ids: list[str] = []

    @tool
    async def work() -> str:
        "Queue messages while the run works."
        steering.mailbox.push("someone else's message")
        ids.append(steering.push("same"))
        withdrawn = steering.push("same")
        ids.append(steering.push("same"))
        assert steering.withdraw(withdrawn) and not steering.withdraw(withdrawn)
        return "done"

    agent = Agent(name="a", model=ScriptedProvider([call("work", {}), text("ok")]), tools=[work])
    handle = Runner.stream(agent, "go", mailbox=steering.mailbox)
    delivered = [
        (e.content, steering.delivered(e.token))
        async for e in handle
        if isinstance(e, events.UserMessageInjected)
    ]
    assert [content for content, _ in delivered] == ["someone else's message", "same", "same"]
    assert [message_id for _, message_id in delivered[1:]] == ids
    assert delivered[0][1] not in ids and delivered[0][1].startswith("u_")
    assert not steering.withdraw(ids[0])  # taken in: too late to withdraw


def test_a_delivery_without_a_token_gets_a_fresh_id() -> None:
    steering = SteerQueue()
    queued = steering.push("x")
    assert steering.delivered(None) != queued
    assert steering.withdraw(queued)
