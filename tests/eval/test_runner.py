"""Case and evaluate(), driven by scripted agents."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from lovia import Agent, RunContext, RunResult, Usage, tool, user
from lovia.eval import Case, contains, equals, evaluate, matches, tool_called
from lovia.messages import system
from lovia.testing import ScriptedProvider, call, text


def echo(*replies: str, name: str = "echo") -> Agent[None]:
    return Agent(name=name, model=ScriptedProvider([text(r) for r in replies]))


# --------------------------------------------------------------------------- Case


def test_case_names():
    assert Case("What is 2+2?").name == "What is 2+2?"
    long = Case("word " * 30)
    assert len(long.name) == 48 and long.name.endswith("…")
    assert long.name == ("word " * 30)[:47] + "…"
    assert len(Case("x" * 48).name) == 48 and not Case("x" * 48).name.endswith("…")
    assert Case("a\n b\tc").name == "a b c"
    assert Case([]).name == "case"
    assert Case("   ").name == "case"
    assert Case([system("rules"), user("hi  there"), user("second")]).name == "hi there"
    assert Case("input", name="my-case").name == "my-case"


def test_case_defaults_and_validation():
    case = Case("x")
    assert (case.checks, case.samples, case.pass_threshold, case.max_turns) == ((), 1, 1.0, 50)
    assert case.context is None and case.output_type is None and case.model is None
    assert case.timeout is None and case.metadata == {}
    for kwargs in (
        {"samples": 0},
        {"pass_threshold": 1.5},
        {"pass_threshold": -0.1},
        {"timeout": 0},
        {"timeout": -1.0},
    ):
        with pytest.raises(ValueError):
            Case("x", **kwargs)


# --------------------------------------------------------------------------- evaluate


async def test_single_passing_case_records_the_sample():
    report = await evaluate(
        lambda: echo("Paris is the capital of France."),
        Case("Capital of France?", checks=[contains("Paris"), contains("France")]),
    )
    assert report.passed and report.pass_rate == 1.0
    (case,) = report.cases
    assert case.name == "Capital of France?"
    (sample,) = case.samples
    assert sample.passed and sample.error is None
    assert sample.output == "Paris is the capital of France."
    assert sample.turns == 1
    assert sample.usage == Usage(input_tokens=1, output_tokens=1)
    assert sample.latency > 0 and sample.cost is None
    assert [c.name for c in sample.checks] == ["contains('Paris')", "contains('France')"]


async def test_failing_check_fails_case_and_report():
    report = await evaluate(lambda: echo("London."), [Case("q", checks=[contains("Paris")])])
    assert not report.passed and report.pass_rate == 0.0
    assert report.cases[0].samples[0].checks[0].reason == "not found in output: London."


async def test_sampling_calls_the_factory_per_sample_and_applies_the_threshold():
    replies = iter(["Paris", "Paris", "Lyon"])
    made: list[Agent[Any]] = []

    def factory() -> Agent[None]:
        agent = echo(next(replies))
        made.append(agent)
        return agent

    report = await evaluate(
        factory, Case("q", checks=[contains("Paris")], samples=3, pass_threshold=0.6)
    )
    assert report.passed and len(made) == 3 and len({id(a) for a in made}) == 3
    assert report.cases[0].pass_rate == pytest.approx(2 / 3)
    assert [s.output for s in report.cases[0].samples] == ["Paris", "Paris", "Lyon"]

    replies = iter(["Paris", "Paris", "Lyon"])
    strict = await evaluate(factory, Case("q", checks=[contains("Paris")], samples=3))
    assert not strict.passed


async def test_samples_of_a_case_run_sequentially():
    active = 0
    peak = 0

    @tool
    async def work() -> str:
        """Do some work."""
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.01)
        active -= 1
        return "ok"

    def factory() -> Agent[None]:
        return Agent(
            name="w", model=ScriptedProvider([call("work", {}), text("done")]), tools=[work]
        )

    report = await evaluate(factory, Case("q", samples=4, checks=[contains("done")]))
    assert report.passed and peak == 1


async def test_cases_run_concurrently_up_to_the_limit_and_keep_their_order():
    active = 0
    peak = 0

    @tool
    async def work() -> str:
        """Do some work."""
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        return "ok"

    def factory() -> Agent[None]:
        return Agent(name="w", model=ScriptedProvider([call("work", {}), text("hi")]), tools=[work])

    cases = [Case(f"q{i}", checks=[contains("hi")]) for i in range(10)]
    report = await evaluate(factory, cases, concurrency=3)
    assert [c.name for c in report.cases] == [f"q{i}" for i in range(10)]
    assert report.passed and peak == 3


async def test_run_errors_are_sample_data():
    scripts = iter([[], [text("hi")]])
    report = await evaluate(
        lambda: Agent(name="e", model=ScriptedProvider(next(scripts))),
        [Case("boom", checks=[contains("x")]), Case("ok", checks=[contains("hi")])],
        concurrency=1,
    )
    broken, fine = report.cases
    assert not report.passed and fine.passed
    sample = broken.samples[0]
    assert sample.error == "AssertionError: ScriptedProvider ran out of canned responses"
    assert sample.checks == [] and sample.output is None and sample.latency > 0


async def test_max_turns_is_forwarded_and_partial_usage_is_kept():
    @tool
    async def ping() -> str:
        """Ping."""
        return "pong"

    def factory() -> Agent[None]:
        return Agent(
            name="loop",
            model=ScriptedProvider([call("ping", {}), call("ping", {}), text("hi")]),
            tools=[ping],
        )

    report = await evaluate(factory, Case("q", max_turns=1, checks=[contains("hi")]))
    sample = report.cases[0].samples[0]
    assert sample.error is not None and sample.error.startswith("MaxTurnsExceeded: ")
    assert sample.checks == []
    assert sample.usage.total_tokens == 2  # the one turn that ran


async def test_factory_errors_are_recorded():
    def factory() -> Agent[None]:
        raise RuntimeError("no agent today")

    report = await evaluate(factory, Case("q"))
    assert report.cases[0].samples[0].error == "RuntimeError: no agent today"


async def test_timeout_is_recorded_as_error():
    @tool
    async def slow() -> str:
        """Sleep."""
        await asyncio.sleep(5)
        return "done"

    def factory() -> Agent[None]:
        return Agent(
            name="s", model=ScriptedProvider([call("slow", {}), text("done")]), tools=[slow]
        )

    report = await evaluate(factory, Case("q", checks=[contains("done")], timeout=0.05))
    sample = report.cases[0].samples[0]
    assert sample.error == "timeout: sample exceeded 0.05s"
    assert sample.checks == [] and not report.passed
    assert 0.05 <= sample.latency < 2


async def test_a_timeout_error_raised_inside_the_run_is_not_the_case_timeout():
    class Exploding:
        name = "exploding"
        model = None
        supports_json_schema = False

        async def stream(self, entries: Any, **kw: Any) -> Any:
            raise TimeoutError("upstream timed out")
            yield  # pragma: no cover

    agent = Agent(name="a", model=Exploding(), retry=None)
    report = await evaluate(agent, Case("q", timeout=30))
    assert report.cases[0].samples[0].error == "TimeoutError: upstream timed out"


async def test_fail_fast_stops_after_the_first_failing_case():
    ran: list[str] = []

    def factory() -> Agent[None]:
        ran.append("run")
        return echo("nope")

    cases = [
        Case("a", checks=[contains("nope")], samples=2),
        Case("b", checks=[contains("yes")], samples=2),
        Case("c", checks=[contains("nope")]),
    ]
    report = await evaluate(factory, cases, fail_fast=True)
    assert [c.name for c in report.cases] == ["a", "b"]
    assert len(ran) == 4  # only executed samples built an agent


async def test_structured_output_and_tools():
    @tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    class Answer(BaseModel):
        value: int

    def factory() -> Agent[None]:
        return Agent(
            name="calc",
            model=ScriptedProvider([call("add", {"a": 2, "b": 3}), text('{"value": 5}')]),
            tools=[add],
        )

    report = await evaluate(
        factory,
        Case(
            "2+3?",
            checks=[tool_called("add"), matches({"value": 5}), equals(Answer(value=5))],
            output_type=Answer,
        ),
    )
    assert report.passed, str(report)
    assert report.cases[0].samples[0].turns == 2


async def test_case_model_and_metadata():
    seen: list[Any] = []

    def deps_check(result: RunResult) -> bool:
        seen.append(result.final_agent.model)
        return True

    tutor = Agent(name="tutor")  # no model of its own
    provider = ScriptedProvider([text("2 + 3 = 5.")])
    report = await evaluate(
        tutor,
        Case(
            "What is 2 + 3?",
            checks=[contains("5"), deps_check],
            model=provider,
            metadata={"suite": "smoke"},
        ),
    )
    assert report.passed and seen == [provider]
    assert report.cases[0].metadata == {"suite": "smoke"}
    assert tutor.model is None  # the agent itself was not modified


async def test_context_is_forwarded():
    seen: list[Any] = []

    @tool
    async def whoami(ctx: RunContext[Any]) -> str:
        """Who is asking."""
        seen.append(ctx.deps)
        return "ok"

    def factory() -> Agent[None]:
        return Agent(
            name="a", model=ScriptedProvider([call("whoami", {}), text("k")]), tools=[whoami]
        )

    await evaluate(factory, Case("q", context={"user": "ada"}))
    assert seen == [{"user": "ada"}]


async def test_price():
    def price(usage: Usage) -> float:
        return usage.total_tokens * 0.5

    report = await evaluate(lambda: echo("hi"), Case("q", checks=[contains("hi")]), price=price)
    assert report.cases[0].samples[0].cost == pytest.approx(1.0)

    def broken(usage: Usage) -> float:
        raise RuntimeError("no table")

    report = await evaluate(lambda: echo("hi"), Case("q", checks=[contains("hi")]), price=broken)
    assert report.cases[0].samples[0].cost is None and report.passed


async def test_checks_run_concurrently_and_keep_their_order():
    both = asyncio.Barrier(2)

    async def first(result: RunResult) -> bool:
        await asyncio.wait_for(both.wait(), 2)
        return True

    async def second(result: RunResult) -> bool:
        await asyncio.wait_for(both.wait(), 2)
        return True

    report = await evaluate(echo("x"), Case("q", checks=[first, second]))
    assert [c.name for c in report.cases[0].samples[0].checks] == ["first", "second"]
    assert report.passed


async def test_single_case_instance_empty_suite_and_validation():
    assert (await evaluate(echo("hello"), Case("q", checks=[contains("hello")]))).passed
    empty = await evaluate(echo(), [])
    assert empty.passed and empty.cases == [] and empty.pass_rate == 1.0
    with pytest.raises(ValueError):
        await evaluate(echo(), [], concurrency=0)
    with pytest.raises(ValueError):
        await evaluate(echo(), [], concurrency=-2, fail_fast=True)
