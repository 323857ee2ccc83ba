"""``Case`` and ``evaluate()``: run an agent over cases, sample by sample, and check the runs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from lovia.agent import Agent
from lovia.eval.checks import Check, run_check
from lovia.eval.report import CaseResult, Report, SampleResult
from lovia.messages import Message, Usage

if TYPE_CHECKING:
    from lovia.executor.base import Executor
    from lovia.providers.base import Provider

AgentSource: TypeAlias = Agent[Any] | Callable[[], Agent[Any]]
"""The agent under test, or a factory called once per sample (fresh state every run)."""

_NAME_LIMIT = 48


def _first_user_text(messages: list[Message]) -> str:
    for message in messages:
        if message.role == "user":
            return message.text
    return ""


def _derive_name(value: str | list[Message]) -> str:
    raw = value if isinstance(value, str) else _first_user_text(value)
    name = " ".join(raw.split())
    if not name:
        return "case"
    if len(name) > _NAME_LIMIT:
        return name[: _NAME_LIMIT - 1] + "…"
    return name


@dataclass
class Case:
    """One input, the checks its runs must pass, and how many runs (``samples``) to make."""

    input: str | list[Message]
    checks: Sequence[Check] = ()
    name: str = ""
    samples: int = 1
    pass_threshold: float = 1.0
    context: Any = None
    output_type: Any = None
    model: str | Provider | None = None
    max_turns: int = 50
    timeout: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.samples < 1:
            raise ValueError(f"samples must be >= 1, got {self.samples}")
        if not 0.0 <= self.pass_threshold <= 1.0:
            raise ValueError(f"pass_threshold must be in [0, 1], got {self.pass_threshold}")
        if self.timeout is not None and self.timeout <= 0:
            raise ValueError(f"timeout must be > 0 seconds, got {self.timeout}")
        if not self.name:
            self.name = _derive_name(self.input)


def _resolve(source: AgentSource) -> Agent[Any]:
    if isinstance(source, Agent):
        return source
    agent = source()
    if not isinstance(agent, Agent):
        raise TypeError(f"the agent factory returned {type(agent).__name__}, not an Agent")
    return agent


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


async def _run_sample(
    source: AgentSource, case: Case, price: Callable[[Usage], float] | None
) -> SampleResult:
    from lovia.runner import Runner

    sample = SampleResult()
    usage = Usage()  # folds in the run's usage whether it completes or fails
    start = time.monotonic()
    result = None
    try:
        agent = _resolve(source)
        if case.model is not None:
            agent = agent.clone(model=case.model)
        run = Runner.run(
            agent,
            case.input,
            context=case.context,
            output_type=case.output_type,
            max_turns=case.max_turns,
            _parent_usage=usage,
        )
        if case.timeout is None:
            result = await run
        else:
            scope = asyncio.timeout(case.timeout)
            try:
                async with scope:
                    result = await run
            except TimeoutError as exc:
                if scope.expired():
                    raise _SampleTimeout(case.timeout) from exc
                raise
    except _SampleTimeout as exc:
        sample.error = f"timeout: sample exceeded {exc.seconds}s"
    except Exception as exc:
        sample.error = _error_text(exc)
    finally:
        sample.latency = time.monotonic() - start
    if result is not None:
        sample.output = result.output
        sample.turns = result.turns
        sample.usage = result.usage.clone()
        sample.checks = list(await asyncio.gather(*(run_check(c, result) for c in case.checks)))
    else:
        sample.usage = usage
    if price is not None:
        try:
            sample.cost = float(price(sample.usage))
        except Exception:
            sample.cost = None
    return sample


class _SampleTimeout(Exception):
    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.seconds = seconds


async def _run_case(
    source: AgentSource, case: Case, price: Callable[[Usage], float] | None
) -> CaseResult:
    samples = [await _run_sample(source, case, price) for _ in range(case.samples)]
    return CaseResult(
        name=case.name,
        samples=samples,
        pass_threshold=case.pass_threshold,
        metadata=dict(case.metadata),
    )


async def evaluate(
    agent: AgentSource,
    cases: Case | Iterable[Case],
    *,
    concurrency: int = 4,
    fail_fast: bool = False,
    price: Callable[[Usage], float] | None = None,
    executor: Executor | None = None,
) -> Report:
    """Run every case's samples and checks; the report keeps the cases' order.

    Cases run concurrently (at most ``concurrency`` at a time); a case's samples run one after
    another. ``fail_fast`` runs cases strictly in order and stops after the first failing one.
    A run that raises or times out is recorded on its sample, never raised.

    ``executor`` decides where the cases run (see :mod:`lovia.executor`): ``None`` is this
    process; a :class:`~lovia.executor.RayExecutor` sends each case to a Ray cluster, and then
    the executor's own limits apply instead of ``concurrency``. The agent, cases and ``price``
    must pickle for that.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    suite = [cases] if isinstance(cases, Case) else list(cases)
    if executor is not None:
        return await _evaluate_on(executor, agent, suite, fail_fast, price)
    if fail_fast:
        done: list[CaseResult] = []
        for case in suite:
            outcome = await _run_case(agent, case, price)
            done.append(outcome)
            if not outcome.passed:
                break
        return Report(cases=done)
    gate = asyncio.Semaphore(concurrency)

    async def bounded(case: Case) -> CaseResult:
        async with gate:
            return await _run_case(agent, case, price)

    return Report(cases=list(await asyncio.gather(*(bounded(c) for c in suite))))


async def _evaluate_on(
    executor: Executor,
    source: AgentSource,
    suite: list[Case],
    fail_fast: bool,
    price: Callable[[Usage], float] | None,
) -> Report:
    from lovia.executor.base import Job

    def job(index: int, case: Case) -> Job[CaseResult]:
        return Job(str(index), _run_case, (source, case, price))

    if fail_fast:
        done: list[CaseResult] = []
        for index, case in enumerate(suite):
            async for outcome in executor.run([job(index, case)]):
                done.append(_case_result(case, outcome.value, outcome.error))
            if not done[-1].passed:
                break
        return Report(cases=done)
    results: dict[int, CaseResult] = {}
    async for outcome in executor.run([job(i, c) for i, c in enumerate(suite)]):
        index = int(outcome.key)
        results[index] = _case_result(suite[index], outcome.value, outcome.error)
    return Report(cases=[results[i] for i in range(len(suite))])


def _case_result(case: Case, value: CaseResult | None, error: str | None) -> CaseResult:
    """The executor's result, or the case with every sample failed by the executor's error."""
    if value is not None:
        return value
    return CaseResult(
        name=case.name,
        samples=[SampleResult(error=f"executor: {error}") for _ in range(case.samples)],
        pass_threshold=case.pass_threshold,
        metadata=dict(case.metadata),
    )


__all__ = ["AgentSource", "Case", "evaluate"]
