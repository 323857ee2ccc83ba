"""``run_batch``: settle every task of a task list once, through an executor, into a
results file that doubles as the resume point.

The driver side of a batch: it skips tasks the results file already settled, ships each
local directory once (``Executor.share``), reads agent files so workers need not see this
disk, sets up the shared rate limiter, then writes each result as it arrives. Interrupting
it (Ctrl-C, cancellation) cancels the outstanding tasks and keeps every line written so far.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from lovia.executor.base import Executor, Job, JobOutcome
from lovia.executor.local import InProcessExecutor
from lovia.executor.rate_limit import LocalRateLimiter, RateBuckets, RateLimit, RateLimiter
from lovia.messages import Usage
from lovia_server.batch.display import BatchTally, Progress
from lovia_server.batch.results import ResultsFile, TaskResult
from lovia_server.batch.task import BUILTIN_AGENT, BatchTask
from lovia_server.batch.task_workspace import is_denied, task_policy
from lovia_server.batch.tree import TreeError, pack
from lovia_server.batch.worker import AgentCode, WorkerOptions, run_task
from lovia_server.host.prices import price_for

T = TypeVar("T")

#: Provider settings forwarded to Ray workers when set here (``--env`` adds more).
FORWARDED_ENV = (
    "LOVIA_MODEL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
)


@dataclass
class BatchOptions:
    """How a batch runs. ``limits`` map ``"<provider>:<model>"`` keys (``openai:gpt-5``) to
    limits, ``default_limit`` covers the other keys; neither set means no limiter.
    ``rerun_failed`` runs tasks again whose recorded status is not ``done``."""

    model: str | None = None
    limits: Mapping[str, RateLimit] = field(default_factory=dict)
    default_limit: RateLimit | None = None
    rerun_failed: bool = False
    sandbox: bool | Literal["auto"] = "auto"
    transcripts: Literal["file", "inline", "none"] = "file"
    secrets: tuple[str, ...] = ()


def secret_values(names: Sequence[str] = FORWARDED_ENV) -> tuple[str, ...]:
    """Values of secret-looking variables, to redact from anything written."""
    picked = [os.environ.get(n, "") for n in names if "KEY" in n or "TOKEN" in n]
    return tuple(v for v in picked if len(v) >= 8)


def pending_tasks(
    tasks: Sequence[BatchTask], settled: Mapping[str, TaskResult], *, rerun_failed: bool
) -> list[BatchTask]:
    """The tasks a (resumed) batch still has to run."""
    todo = []
    for task in tasks:
        seen = settled.get(task.id)
        if seen is None or (rerun_failed and seen.status != "done"):
            todo.append(task)
    return todo


async def run_batch(
    tasks: Sequence[BatchTask],
    results: str | Path,
    *,
    executor: Executor | None = None,
    options: BatchOptions | None = None,
    progress: Progress | None = None,
) -> BatchTally:
    """Run every task not yet settled in ``results`` and append its result there."""
    opts = options or BatchOptions()
    runner = executor or InProcessExecutor(concurrency=4)
    file = ResultsFile(results)
    todo = pending_tasks(tasks, file.load(), rerun_failed=opts.rerun_failed)
    tally = BatchTally(total=len(tasks), skipped=len(tasks) - len(todo))
    limiter = _limiter(runner, opts)
    worker = WorkerOptions(
        model=opts.model,
        limiter=limiter,
        sandbox=opts.sandbox,
        transcripts=opts.transcripts != "none",
    )
    jobs, failed_early = _jobs(runner, todo, worker)
    redact = opts.secrets or secret_values()
    by_id = {task.id: task for task in todo}
    for result in failed_early:
        _record(file, tally, result, redact)
    outcomes = runner.run(jobs)
    try:
        async with contextlib.aclosing(outcomes):
            async for outcome in _with_ticks(outcomes, lambda: _tick(progress, tally, runner)):
                result = _settle(by_id[outcome.key], outcome, opts)
                _write_transcript(file.path, result, opts.transcripts, redact)
                _record(file, tally, result, redact)
                _tick(progress, tally, runner, force=True)
    finally:
        _close_limiter(limiter)
        if progress is not None:
            progress.close(tally)
    return tally


def _limiter(executor: Executor, opts: BatchOptions) -> RateLimiter | None:
    if not opts.limits and opts.default_limit is None:
        return None
    from lovia.executor.ray_cluster import RayExecutor

    if isinstance(executor, RayExecutor):
        from lovia.executor.ray_limiter import RayRateLimiter

        executor.connect()
        return RayRateLimiter.create(opts.limits, default=opts.default_limit)
    return LocalRateLimiter(RateBuckets(opts.limits, default=opts.default_limit))


def _close_limiter(limiter: RateLimiter | None) -> None:
    close = getattr(limiter, "close", None)
    if callable(close):
        with contextlib.suppress(Exception):
            close()


def _jobs(
    executor: Executor, todo: Sequence[BatchTask], worker: WorkerOptions
) -> tuple[list[Job[TaskResult]], list[TaskResult]]:
    """One job per task; tasks whose inputs cannot be read here fail without a job."""
    shipped: dict[str, Any] = {}
    codes: dict[str, AgentCode] = {}
    jobs: list[Job[TaskResult]] = []
    failed: list[TaskResult] = []
    for task in todo:
        stage = "workspace"
        try:
            packed = None
            if task.source.path is not None:
                if task.source.path not in shipped:
                    shipped[task.source.path] = executor.share(_pack(task.source.path, task))
                packed = shipped[task.source.path]
            code = None
            if task.agent != BUILTIN_AGENT:
                stage = "agent"
                if task.agent not in codes:
                    codes[task.agent] = _read_agent(task.agent)
                code = codes[task.agent]
        except (TreeError, OSError) as exc:
            error = f"{stage}: {exc}"
            failed.append(TaskResult(id=task.id, status="failed", error=error, attempts=0))
            continue
        jobs.append(Job(task.id, run_task, (task, packed, code, worker)))
    return jobs, failed


def _pack(path: str, task: BatchTask) -> bytes:
    """The task's local directory without the files its workspace denies (they would serve
    no purpose there: the agent can never read them)."""
    root = Path(path)
    if not root.is_dir():
        raise TreeError(f"source path {root} is not a directory")
    policy = task_policy(root, task.preset)
    return pack(root, lambda rel: is_denied(policy, root, rel))


def _read_agent(spec: str) -> AgentCode:
    path, _, attr = spec.rpartition(":")
    return AgentCode(path=path, source=Path(path).read_text(encoding="utf-8"), attr=attr)


def _settle(task: BatchTask, outcome: JobOutcome[TaskResult], opts: BatchOptions) -> TaskResult:
    """The worker's result with what only the driver knows: attempts, node and cost."""
    result = outcome.value
    if result is None:
        result = TaskResult(
            id=task.id,
            status="lost" if outcome.lost else "failed",
            error=outcome.error,
            model=task.model or opts.model,
        )
    result.attempts = outcome.attempts
    result.node = outcome.node
    price = price_for(result.model)
    if price is not None:
        u = result.usage
        result.cost = price.cost(
            Usage(u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens)
        )
    return result


def _write_transcript(
    results: Path,
    result: TaskResult,
    mode: Literal["file", "inline", "none"],
    redact: tuple[str, ...],
) -> None:
    """Move a transcript out of the result into ``<results stem>.transcripts/<id>.json``."""
    if mode != "file" or result.transcript is None:
        return
    folder = results.with_name(results.stem + ".transcripts")
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{result.id}.json"
    text = json.dumps(result.transcript, ensure_ascii=False)
    for secret in redact:
        text = text.replace(secret, "[redacted]")
    target.write_text(text, encoding="utf-8")
    result.transcript = str(target.relative_to(results.parent))


def _record(
    file: ResultsFile, tally: BatchTally, result: TaskResult, redact: tuple[str, ...]
) -> None:
    file.append(result, redact=redact)
    tally.add(result)


def _tick(
    progress: Progress | None, tally: BatchTally, executor: Executor, *, force: bool = False
) -> None:
    if progress is not None:
        progress.update(tally, executor.running(), force=force)


async def _with_ticks(
    outcomes: AsyncGenerator[T, None], tick: Callable[[], None], every: float = 0.5
) -> AsyncGenerator[T, None]:
    """Yield from ``outcomes`` and call ``tick`` at least every ``every`` seconds meanwhile."""
    pending: asyncio.Future[T] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(outcomes.__anext__())
            done, _ = await asyncio.wait({pending}, timeout=every)
            tick()
            if not done:
                continue
            try:
                value = pending.result()
            except StopAsyncIteration:
                return
            pending = None
            yield value
    finally:
        if pending is not None and not pending.done():
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending


__all__ = [
    "FORWARDED_ENV",
    "BatchOptions",
    "pending_tasks",
    "run_batch",
    "secret_values",
]
