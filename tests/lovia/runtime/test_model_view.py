"""The loop tells providers which part of a call's entries repeats next turn, and whose it is."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from lovia import Agent, InMemorySession, Runner, tool
from lovia.model_view import ModelView, conversation_of, stable_count, was_rewritten
from lovia.plugins.base import Plugin, PluginInstance
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import InputEntry, ModelDelta, TranscriptEntry


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class Seen(ScriptedProvider):
    """Keeps the very sequence objects the loop passed."""

    def __init__(self, script: list[Any]) -> None:
        super().__init__(script)
        self.seen: list[Sequence[TranscriptEntry]] = []

    async def stream(
        self, entries: Sequence[TranscriptEntry], **kw: Any
    ) -> AsyncIterator[ModelDelta]:
        self.seen.append(entries)
        async for delta in super().stream(entries, **kw):
            yield delta


class Reminder:
    name = "reminder"

    async def setup(self, ctx: Any) -> PluginInstance:
        turn = iter(range(100))
        return PluginInstance(
            view_injectors=[
                lambda ctx: [InputEntry(role="user", content=f"<reminder {next(turn)}>")]
            ]
        )


async def test_injected_reminders_lie_after_the_stable_part() -> None:
    provider = Seen([call("add", {"a": 1, "b": 2}), text("3")])
    reminder: Plugin = Reminder()
    agent = Agent(name="a", model=provider, tools=[add], plugins=[reminder])
    await Runner.run(agent, "sum", session=InMemorySession(), session_id="s-1")
    first, second = provider.seen
    assert isinstance(first, ModelView)
    assert stable_count(first) == len(first) - 1
    assert first[-1] == InputEntry(role="user", content="<reminder 0>")
    # the next call repeats the first call's stable part, not its reminder
    assert list(second[: stable_count(first)]) == list(first[: stable_count(first)])
    assert InputEntry(role="user", content="<reminder 0>") not in second
    assert second[-1] == InputEntry(role="user", content="<reminder 1>")
    assert conversation_of(first) == conversation_of(second) == "s-1"
    assert not was_rewritten(first)


async def test_without_session_one_run_keeps_one_conversation_id() -> None:
    provider = Seen([call("add", {"a": 1, "b": 2}), text("3")])
    await Runner.run(Agent(name="a", model=provider, tools=[add]), "sum")
    first, second = provider.seen
    assert stable_count(first) == len(first)
    key = conversation_of(first)
    assert key and key == conversation_of(second)
    provider2 = Seen([text("x")])
    await Runner.run(Agent(name="a", model=provider2), "again")
    assert conversation_of(provider2.seen[0]) not in (None, key)


def test_plain_sequences_get_neutral_answers() -> None:
    entries = [InputEntry(role="user", content="hi")]
    assert stable_count(entries) == 1
    assert conversation_of(entries) is None
    assert not was_rewritten(entries)
    view = ModelView(entries, stable=5)
    assert stable_count(view) == 1 and view == entries
