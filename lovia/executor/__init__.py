"""Executors: where batches of independent jobs run (in-process, or on a Ray cluster)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lovia._lazy import lazy_exports

if TYPE_CHECKING:
    from lovia.executor.base import Executor, Job, JobOutcome
    from lovia.executor.local import InProcessExecutor
    from lovia.executor.ray_cluster import RayExecutor

_LAZY: dict[str, str] = {
    "Executor": "lovia.executor.base",
    "Job": "lovia.executor.base",
    "JobOutcome": "lovia.executor.base",
    "InProcessExecutor": "lovia.executor.local",
    "RayExecutor": "lovia.executor.ray_cluster",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)

__all__ = ["Executor", "InProcessExecutor", "Job", "JobOutcome", "RayExecutor"]
