"""Wall time of a batch in-process vs on a two-node local Ray cluster (not a test).

    .venv/bin/python bench/batch_bench.py [--tasks 200] [--delay 1.0] [--slots 8]

Every task is one model answer that takes ``--delay`` seconds (a fake OpenAI-compatible
server on 127.0.0.1) over a small local directory shipped to the worker, so the ideal wall
time is ``tasks * delay / slots``. The in-process executor runs ``--slots`` tasks at a time;
the Ray cluster gets two nodes of ``slots / 4`` CPUs each and every task reserves half a CPU,
which also gives ``--slots`` tasks at a time. A warm-up batch of ``--slots`` tasks starts the
Ray worker processes first (reported separately: it is paid once per cluster).

Per-task overhead = (wall - ideal) * slots / tasks: what each task costs beyond its model
time (tree set-up, agent, results). Ray's extra is its overhead minus the in-process one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lovia.executor.local import InProcessExecutor  # noqa: E402
from lovia.executor.ray_cluster import RayExecutor  # noqa: E402
from lovia_server.batch.runner import BatchOptions, run_batch  # noqa: E402
from lovia_server.batch.task import BatchTask, TaskSource  # noqa: E402
from tests.support.batch_model import TaskModel  # noqa: E402
from tests.support.ray_cluster import LocalRayCluster  # noqa: E402


def make_tasks(project: Path, count: int, prefix: str) -> list[BatchTask]:
    return [
        BatchTask(
            id=f"{prefix}{i:03d}",
            prompt=f"reply done {i}",
            source=TaskSource(path=str(project)),
            model="openai:fake-model",
        )
        for i in range(count)
    ]


async def timed(tasks: list[BatchTask], results: Path, executor) -> tuple[float, list[float]]:
    options = BatchOptions(sandbox=False, transcripts="none")
    start = time.perf_counter()
    tally = await run_batch(tasks, results, executor=executor, options=options)
    wall = time.perf_counter() - start
    done = tally.statuses["done"]
    assert done == len(tasks), f"only {done} of {len(tasks)} tasks finished: {tally.statuses}"
    return wall, [r.duration for r in tally.results]


def line(name: str, wall: float, durations: list[float], ideal: float, slots: int) -> str:
    overhead = (wall - ideal) * slots / len(durations)
    return (
        f"{name:<22} wall {wall:7.1f}s  ideal {ideal:6.1f}s  task median "
        f"{statistics.median(durations):5.2f}s  overhead/task {overhead:5.2f}s"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--delay", type=float, default=1.0)
    parser.add_argument("--slots", type=int, default=8)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="batch-bench-"))
    project = work / "project"
    project.mkdir()
    (project / "README.md").write_text("# bench\n")
    (project / "main.py").write_text("print('hello')\n" * 50)
    ideal = args.tasks * args.delay / args.slots
    print(f"load before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    with TaskModel(delay=args.delay) as model:
        os.environ.update(model.env())
        here = await timed(
            make_tasks(project, args.tasks, "local"),
            work / "local.jsonl",
            InProcessExecutor(concurrency=args.slots),
        )
        print(line(f"in-process (conc. {args.slots})", *here, ideal, args.slots), flush=True)
        cpus = max(args.slots // 4, 1)
        with LocalRayCluster(cpus=(cpus, cpus)) as cluster:
            executor = RayExecutor(
                cluster.address, runtime_env={"env_vars": model.env()}, num_cpus=0.5
            )
            warm = await timed(
                make_tasks(project, args.slots, "warm"), work / "warm.jsonl", executor
            )
            print(f"ray warm-up ({args.slots} tasks, starts the workers): {warm[0]:.1f}s")
            ray = await timed(make_tasks(project, args.tasks, "ray"), work / "ray.jsonl", executor)
            print(line("ray (2 nodes)", *ray, ideal, args.slots))
            executor.shutdown()
        extra = (ray[0] - here[0]) * args.slots / args.tasks
        print(f"Ray adds {extra:+.2f}s per task over the in-process executor")
    print(f"load after: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    asyncio.run(main())
