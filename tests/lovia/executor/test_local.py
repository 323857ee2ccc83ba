"""The in-process executor and evaluate()'s executor seam (no Ray needed)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from lovia import Agent
from lovia.eval import Case, contains, evaluate
from lovia.executor import InProcessExecutor, Job, JobOutcome
from lovia.testing import ScriptedProvider, text


async def double(x: int) -> int:
    await asyncio.sleep(0.05 * (5 - x))
    return 2 * x


async def boom() -> int:
    raise RuntimeError("nope")


async def test_outcomes_come_in_completion_order_with_errors_kept():
    executor = InProcessExecutor(concurrency=6)
    jobs = [Job(str(i), double, (i,)) for i in range(5)] + [Job("bad", boom)]
    outcomes = [o async for o in executor.run(jobs)]
    values = {o.key: o.value for o in outcomes if o.ok}
    assert values == {str(i): 2 * i for i in range(5)}
    [bad] = [o for o in outcomes if not o.ok]
    assert bad.key == "bad" and bad.error == "RuntimeError: nope" and bad.attempts == 1
    assert [o.key for o in outcomes if o.ok] == ["4", "3", "2", "1", "0"]  # the fastest first


async def test_closing_the_outcomes_cancels_the_rest():
    started: list[int] = []

    async def slow(i: int) -> int:
        started.append(i)
        await asyncio.sleep(30)
        return i

    executor = InProcessExecutor(concurrency=2)
    gen = executor.run([Job(str(i), slow, (i,)) for i in range(4)])
    task = asyncio.ensure_future(gen.__anext__())
    await asyncio.sleep(0.05)
    assert executor.running() == 2
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await gen.aclose()
    assert sorted(started) == [0, 1] and executor.running() == 0


def test_concurrency_is_validated():
    with pytest.raises(ValueError):
        InProcessExecutor(concurrency=0)


def agent() -> Agent:
    return Agent(name="a", model=ScriptedProvider([text("hello")], record=False))


async def test_evaluate_with_an_explicit_executor_matches_the_default():
    cases = [Case("hi", [contains("hello")], name=f"c{i}", samples=2) for i in range(3)]
    default = await evaluate(agent, cases)
    explicit = await evaluate(agent, cases, executor=InProcessExecutor(concurrency=2))

    def strip(report):
        return [(c["name"], [s["output"] for s in c["samples"]]) for c in report.to_dict()["cases"]]

    assert strip(explicit) == strip(default) and explicit.passed


async def test_an_executor_failure_fails_the_case_samples():
    class Broken:
        def share(self, value):
            return value

        def running(self) -> int:
            return 0

        async def run(self, jobs):
            for job in jobs:
                yield JobOutcome(job.key, error="worker lost", attempts=4, lost=True)

    report = await evaluate(agent, [Case("hi", name="x", samples=2)], executor=Broken())
    [case] = report.cases
    assert [s.error for s in case.samples] == ["executor: worker lost"] * 2 and not report.passed


def test_lovia_eval_and_the_cli_work_without_ray():
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "import asyncio, lovia, lovia.eval\n"
        "from lovia.eval import Case, evaluate\n"
        "from lovia.testing import ScriptedProvider, text\n"
        "a = lambda: lovia.Agent(name='a', model=ScriptedProvider([text('ok')]))\n"
        "print(asyncio.run(evaluate(a, Case('hi'))).passed)\n"
        "from lovia.cli import main\n"
        "sys.exit(main(['batch', '/dev/null', '--ray']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "True"
    assert proc.returncode == 2
    assert "Ray is not installed" in proc.stderr and "pip install 'ray>=2.40,<3'" in proc.stderr
