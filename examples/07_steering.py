"""Steering: push a message while the agent works; it arrives at the next turn start."""

import asyncio

from lovia import Agent, Mailbox, Runner, events, model_from_env, tool
from lovia.testing import ScriptedProvider, call, text

mailbox = Mailbox()


@tool
async def draft_email(to: str, body: str) -> str:
    """Draft an email."""
    # Simulate the user typing while the tool runs.
    mailbox.push("Please also CC my manager.")
    return f"draft to {to}: {body}"


def build_agent() -> Agent:
    model = model_from_env(required=False) or ScriptedProvider(
        [
            call("draft_email", {"to": "team@example.com", "body": "Meeting moved to 3pm."}),
            text("Drafted, and I will CC your manager as asked."),
        ]
    )
    return Agent(name="assistant", model=model, tools=[draft_email])


async def main() -> None:
    handle = Runner.stream(build_agent(), "Tell the team the meeting moved.", mailbox=mailbox)
    async for ev in handle:
        if isinstance(ev, events.UserMessageInjected):
            print(f"[steer delivered at turn {ev.turn}] {ev.content}")
    print((await handle).output)


if __name__ == "__main__":
    asyncio.run(main())
