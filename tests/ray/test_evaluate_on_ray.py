"""evaluate() with the Ray executor gives the in-process Report for the examples' suite."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from lovia.eval import evaluate
from lovia.executor.ray_cluster import RayExecutor

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def without_timings(report) -> dict:
    data = report.to_dict()
    for case in data["cases"]:
        for sample in case["samples"]:
            sample.pop("latency")
    return data


@pytest.fixture
def eval_suite(monkeypatch):
    monkeypatch.delenv("LOVIA_MODEL", raising=False)
    monkeypatch.syspath_prepend(str(EXAMPLES))  # the cluster's nodes have it on PYTHONPATH too
    module = importlib.import_module("09_eval_suite")
    yield module
    sys.modules.pop("09_eval_suite", None)


async def test_the_ray_report_equals_the_in_process_report(ray_cluster, eval_suite):
    here = await evaluate(eval_suite.build_agent, eval_suite.suite())
    executor = RayExecutor(ray_cluster.address)
    try:
        there = await evaluate(eval_suite.build_agent, eval_suite.suite(), executor=executor)
    finally:
        executor.shutdown()
    assert without_timings(there) == without_timings(here)
    assert str(there).startswith("eval: 2/3 cases passed (67%)")
    assert [c.name for c in there.cases] == ["converts", "two turns", "answers in USD only"]


async def test_fail_fast_on_ray_stops_after_the_first_failing_case(ray_cluster, eval_suite):
    cases = list(reversed(eval_suite.suite()))
    executor = RayExecutor(ray_cluster.address)
    try:
        report = await evaluate(eval_suite.build_agent, cases, fail_fast=True, executor=executor)
    finally:
        executor.shutdown()
    assert [c.name for c in report.cases] == ["answers in USD only"]
