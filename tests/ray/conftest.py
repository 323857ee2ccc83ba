"""The Ray tests share one real local cluster per session: a head node and a second node,
each a ``ray start --block`` process with one CPU, started here and stopped at the end.

Without Ray (not installed, or a cluster that cannot start) the tests skip, except under
``LOVIA_REQUIRE_ALL=1`` (CI), where that is a failure.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from tests.support.ray_cluster import REQUIRE_ALL, LocalRayCluster, RayClusterError

pytestmark = pytest.mark.ray


def _unavailable(reason: str) -> None:
    if REQUIRE_ALL:
        # no traceback: the failing frames hold the environment, keys included
        pytest.fail(f"LOVIA_REQUIRE_ALL=1 but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[LocalRayCluster]:
    if importlib.util.find_spec("ray") is None:
        _unavailable("ray is not installed (pip install -e '.[ray]')")
    cluster = LocalRayCluster(cpus=(1, 1))
    try:
        cluster.start()
    except (RayClusterError, OSError) as exc:
        _unavailable(f"a local Ray cluster did not start: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()
    assert cluster.our_pids() == [], "Ray processes outlived the cluster"


@pytest.fixture(autouse=True)
def _leave_ray() -> Iterator[None]:
    """Every test connects its own driver; none leaves one behind for the next."""
    yield
    import ray

    if ray.is_initialized():
        ray.shutdown()
