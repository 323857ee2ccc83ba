"""HumanChannel and ask_human: ordering, answers, cancellation, closure, validation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lovia import Agent, Runner
from lovia.events import ToolCallCompleted
from lovia.exceptions import InvalidToolArguments, ToolError
from lovia.run_context import RunContext
from lovia.testing import ScriptedProvider, call, text
from lovia.tools import HumanChannel, HumanQuestion, QuestionOption, ask_human


def ctx() -> RunContext[Any]:
    return RunContext(context=None, entries=[], agent=Agent(name="t"), session_id="s1", run_id="r1")


async def next_question(channel: HumanChannel) -> HumanQuestion:
    async for q in channel.questions():
        return q
    raise AssertionError("feed ended")


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


class TestChannel:
    async def test_answer_flow_and_no_ghosts(self) -> None:
        ch = HumanChannel()
        task = asyncio.create_task(ch.ask(HumanQuestion(question="Proceed?")))
        q = await next_question(ch)
        assert q.question == "Proceed?" and [p.id for p in ch.pending] == [q.id]
        ch.answer(q.id, "yes")
        assert await task == "yes"
        assert ch.pending == [] and ch._futures == {}
        ch.answer(q.id, "again")  # resolved: no-op
        ch.answer("unknown", "x")

    async def test_order_and_skipping_resolved(self) -> None:
        ch = HumanChannel()
        tasks = [asyncio.create_task(ch.ask(HumanQuestion(question=f"q{i}"))) for i in range(3)]
        await settle()
        ch.answer(ch.pending[1].id, "skip me")
        seen: list[str] = []

        async def consume() -> None:
            async for q in ch.questions():
                seen.append(q.question)
                ch.answer(q.id, q.question.upper())

        consumer = asyncio.create_task(consume())
        assert await asyncio.gather(*tasks) == ["Q0", "skip me", "Q2"]
        assert seen == ["q0", "q2"]
        ch.close()
        await asyncio.wait_for(consumer, 1)

    async def test_cancel_raises_tool_error(self) -> None:
        ch = HumanChannel()
        task = asyncio.create_task(ch.ask(HumanQuestion(question="?")))
        q = await next_question(ch)
        ch.cancel(q.id, "user went away")
        with pytest.raises(ToolError, match="^user went away$"):
            await task
        assert ch.pending == []
        ch.cancel(q.id)  # no-op

    async def test_external_cancellation_leaves_no_ghost(self) -> None:
        ch = HumanChannel()
        task = asyncio.create_task(ch.ask(HumanQuestion(question="?")))
        await settle()
        assert len(ch.pending) == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert ch.pending == [] and ch._futures == {}

    async def test_timeout_leaves_no_ghost(self) -> None:
        ch = HumanChannel()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(ch.ask(HumanQuestion(question="?")), 0.05)
        assert ch.pending == []

    async def test_close(self) -> None:
        ch = HumanChannel()
        task = asyncio.create_task(ch.ask(HumanQuestion(question="?")))
        got: list[str] = []

        async def consume() -> None:
            async for q in ch.questions():
                got.append(q.id)

        consumer = asyncio.create_task(consume())
        await settle()
        ch.close("shutting down")
        ch.close("again")
        with pytest.raises(ToolError, match="^shutting down$"):
            await task
        await asyncio.wait_for(consumer, 1)
        assert len(got) == 1
        with pytest.raises(ToolError, match="^human channel is closed$"):
            await ch.ask(HumanQuestion(question="late"))
        feed = [q async for q in ch.questions()]  # started after close: ends at once
        assert feed == []


class TestTool:
    async def test_ask_human_returns_the_answer(self) -> None:
        ch = HumanChannel()
        t = ask_human(ch)
        assert t.name == "ask_human" and t.parallel is False
        assert t.parameters["required"] == ["question"]
        task = asyncio.create_task(
            t.invoke(
                {
                    "question": "Which DB?",
                    "options": [{"label": "sqlite"}, {"label": "postgres", "description": "big"}],
                    "multi_select": True,
                },
                ctx(),
            )
        )
        q = await next_question(ch)
        assert (q.session_id, q.run_id, q.multi_select) == ("s1", "r1", True)
        assert [o.label for o in q.options] == ["sqlite", "postgres"]
        ch.answer(q.id, "sqlite\npostgres")
        assert await task == "sqlite\npostgres"

    async def test_multi_select_forced_off_without_options(self) -> None:
        ch = HumanChannel()
        task = asyncio.create_task(
            ask_human(ch, name="ask").invoke({"question": "?", "multi_select": True}, ctx())
        )
        q = await next_question(ch)
        assert q.multi_select is False and q.options == []
        ch.answer(q.id, "ok")
        await task

    @pytest.mark.parametrize(
        ("options", "match"),
        [
            ([{"label": "a"}, {"label": "a"}], "duplicate option labels: 'a'"),
            ([{"label": "only"}], "options"),
            ([{"label": str(i)} for i in range(5)], "options"),
            ([{"label": ""}, {"label": "b"}], "label"),
            ([{"label": "a\nb"}, {"label": "c"}], "single line"),
            ([{"label": "a", "description": "x\ry"}, {"label": "c"}], "single line"),
            ([{"label": "a", "extra": 1}, {"label": "b"}], "extra"),
        ],
    )
    async def test_invalid_options_create_no_question(
        self, options: list[dict[str, Any]], match: str
    ) -> None:
        ch = HumanChannel()
        with pytest.raises(InvalidToolArguments, match=match):
            await ask_human(ch).invoke({"question": "?", "options": options}, ctx())
        assert ch.pending == []

    def test_option_model(self) -> None:
        assert QuestionOption(label="x").description == ""
        with pytest.raises(ValueError):
            QuestionOption(label="")

    async def test_closed_channel_is_a_tool_error_in_a_run(self) -> None:
        ch = HumanChannel()
        ch.close()
        provider = ScriptedProvider(
            [call("ask_human", {"question": "?"}, call_id="q"), text("fine")]
        )
        agent = Agent(name="a", model=provider, tools=[ask_human(ch)])
        handle = Runner.stream(agent, "go")
        outputs = {}
        async for ev in handle:
            if isinstance(ev, ToolCallCompleted):
                outputs[ev.call.id] = ev.output
        assert (await handle.result()).output == "fine"
        assert outputs["q"] == "Tool error: human channel is closed"

    async def test_answered_inside_a_run(self) -> None:
        ch = HumanChannel()
        provider = ScriptedProvider(
            [call("ask_human", {"question": "Name?"}, call_id="q"), text("thanks")]
        )
        agent = Agent(name="a", model=provider, tools=[ask_human(ch)])

        async def host() -> None:
            async for q in ch.questions():
                ch.answer(q.id, "Ada")

        hosting = asyncio.create_task(host())
        handle = Runner.stream(agent, "go")
        outputs = {}
        async for ev in handle:
            if isinstance(ev, ToolCallCompleted):
                outputs[ev.call.id] = ev.output
        await handle.result()
        ch.close()
        await hosting
        assert outputs["q"] == "Ada"
