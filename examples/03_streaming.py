"""Streaming: iterate a run's events as they happen, then await the result."""

import asyncio

from lovia import Agent, Runner, events, model_from_env, tool
from lovia.testing import ScriptedProvider, call, text


@tool
async def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


def build_agent() -> Agent:
    model = model_from_env(required=False) or ScriptedProvider(
        [call("word_count", {"text": "to be or not to be"}), text("That line has 6 words.")]
    )
    return Agent(name="counter", model=model, tools=[word_count])


async def main() -> None:
    handle = Runner.stream(build_agent(), "How many words in 'to be or not to be'?")
    async for ev in handle:
        if isinstance(ev, events.TextDelta):
            print(ev.delta, end="", flush=True)
        elif isinstance(ev, events.ToolCallStarted):
            print(f"[calling {ev.call.name}({ev.call.arguments})]")
        elif isinstance(ev, events.ToolCallCompleted):
            print(f"[{ev.call.name} -> {ev.output}]")
    result = await handle
    print(f"\n({result.turns} turns, {result.usage.total_tokens} tokens)")


if __name__ == "__main__":
    asyncio.run(main())
