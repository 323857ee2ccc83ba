"""Human in the loop: a tool that needs approval pauses the stream until you decide."""

import asyncio

from lovia import Agent, Runner, events, model_from_env, tool
from lovia.testing import ScriptedProvider, call, text


@tool(needs_approval=lambda args, ctx: args["amount"] > 100)
async def refund(order_id: str, amount: float) -> str:
    """Refund an order."""
    return f"refunded {amount:.2f} on {order_id}"


def build_agent() -> Agent:
    model = model_from_env(required=False) or ScriptedProvider(
        [call("refund", {"order_id": "A-17", "amount": 250.0}), text("The refund went through.")]
    )
    return Agent(name="support", model=model, tools=[refund])


async def main(decide=lambda call: input(f"Allow {call.name} {call.arguments}? [y/N] ") == "y"):
    handle = Runner.stream(build_agent(), "Please refund order A-17 (250 EUR).")
    async for ev in handle:
        if isinstance(ev, events.ApprovalRequired):
            ev.approve() if decide(ev.call) else ev.reject()
        elif isinstance(ev, events.ToolCallCompleted):
            print(f"[{ev.call.name}] {ev.output}")
    print((await handle).output)


if __name__ == "__main__":
    asyncio.run(main())
