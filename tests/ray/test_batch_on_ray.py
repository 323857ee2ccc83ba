"""Batches on a real two-node local Ray cluster, against the in-process executor."""

from __future__ import annotations

import asyncio
import json
import os
import signal

import pytest

from lovia.executor.local import InProcessExecutor
from lovia.executor.rate_limit import RateLimit
from lovia.executor.ray_cluster import RayExecutor
from lovia_server.batch.runner import BatchOptions, run_batch
from tests.support.batch_model import TaskModel
from tests.support.batch_tasks import comparable, git_tasks

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]


@pytest.fixture
def slow_model(monkeypatch, fresh_providers):
    with TaskModel(delay=0.4) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        yield server


def on_ray(cluster, model, **kwargs) -> RayExecutor:
    return RayExecutor(cluster.address, runtime_env={"env_vars": model.env()}, **kwargs)


def model_calls(model: TaskModel) -> int:
    return sum(1 for r in model.requests if r.method == "POST")


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_ray_results_equal_in_process_and_both_nodes_ran_tasks(
    tmp_path, ray_cluster, slow_model
):
    tasks = git_tasks(tmp_path / "repos", 20)
    here = await run_batch(tasks, tmp_path / "here.jsonl", executor=InProcessExecutor(8))
    assert here.statuses["done"] == 20
    ray_results = tmp_path / "ray.jsonl"
    tally = await run_batch(tasks, ray_results, executor=on_ray(ray_cluster, slow_model))
    assert tally.statuses["done"] == 20
    local_by_id = {r["id"]: comparable(r) for r in lines(tmp_path / "here.jsonl")}
    ray_by_id = {r["id"]: comparable(r) for r in lines(ray_results)}
    assert ray_by_id == local_by_id
    nodes = {r["node"] for r in lines(ray_results)}
    assert nodes == set(ray_cluster.alive_nodes())
    assert all(r["attempts"] == 1 for r in lines(ray_results))
    assert "sk-batch-test-secret" not in ray_results.read_text()


async def test_a_killed_worker_is_retried_and_every_task_finishes(
    tmp_path, ray_cluster, slow_model
):
    tasks = git_tasks(tmp_path / "repos", 20)
    executor = on_ray(ray_cluster, slow_model, max_retries=2)
    results = tmp_path / "results.jsonl"
    batch = asyncio.create_task(run_batch(tasks, results, executor=executor))
    victim = None
    for _ in range(600):
        placements = await executor.placements()
        if placements:
            victim = placements[0]
            break
        await asyncio.sleep(0.1)
    assert victim is not None, "no task started"
    os.kill(victim.pid, signal.SIGKILL)
    tally = await batch
    assert tally.statuses["done"] == 20
    by_id = {r["id"]: r for r in lines(results)}
    assert by_id[victim.key]["attempts"] >= 2
    retried = {k for k, r in by_id.items() if r["attempts"] > 1}
    assert victim.key in retried and tally.retried == len(retried)


async def test_the_shared_rate_limit_caps_the_model_servers_concurrency(
    tmp_path, ray_cluster, slow_model
):
    tasks = git_tasks(tmp_path / "repos", 20)
    options = BatchOptions(default_limit=RateLimit(max_concurrent=2))
    tally = await run_batch(
        tasks, tmp_path / "results.jsonl", executor=on_ray(ray_cluster, slow_model), options=options
    )
    assert tally.statuses["done"] == 20
    assert 1 <= slow_model.peak <= 2


async def test_a_429_with_retry_after_pauses_every_worker_of_the_cluster(
    tmp_path, ray_cluster, slow_model
):
    tasks = git_tasks(tmp_path / "repos", 8)
    slow_model.throttle_at = 2  # once the first tasks are under way
    slow_model.retry_after = "3"
    options = BatchOptions(default_limit=RateLimit(max_concurrent=8))
    tally = await run_batch(
        tasks, tmp_path / "results.jsonl", executor=on_ray(ray_cluster, slow_model), options=options
    )
    assert tally.statuses["done"] == 8
    throttled = slow_model.throttled_at
    assert throttled is not None
    # No worker starts a model call while the key is paused (a margin for the pause to land).
    during = [t - throttled for t in slow_model.started if 0.5 < t - throttled < 2.9]
    assert during == []
    assert any(t - throttled >= 2.9 for t in slow_model.started)


async def test_a_resumed_batch_skips_the_finished_tasks(tmp_path, ray_cluster, slow_model):
    tasks = git_tasks(tmp_path / "repos", 20)
    results = tmp_path / "results.jsonl"
    first = await run_batch(tasks[:6], results, executor=on_ray(ray_cluster, slow_model))
    assert first.statuses["done"] == 6
    import ray

    ray.shutdown()
    requests_before = model_calls(slow_model)
    second = await run_batch(tasks, results, executor=on_ray(ray_cluster, slow_model))
    assert second.skipped == 6 and second.statuses["done"] == 14
    assert model_calls(slow_model) - requests_before == 14 * 2
    assert sorted(r["id"] for r in lines(results)) == sorted(t.id for t in tasks)
