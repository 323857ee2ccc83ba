"""The Ray executor: every job is a Ray task on a cluster (a local one, or one at an address).

Ray is an optional dependency (the ``ray`` extra; ``pip install 'ray>=2.40'``) imported only
when a batch starts, so ``import lovia`` and the in-process path never load it. Ray ships
partial typing; its objects cross this module as ``Any``.

Retries: a task whose worker process or node dies is run again by Ray, up to
``max_retries`` times; an exception raised by the job itself is never retried (the job
decides what its failures mean). A small ledger actor counts attempts and knows which jobs
are running where, because Ray does not tell the driver either.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
from collections import deque
from collections.abc import AsyncGenerator, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from lovia.exceptions import UserError
from lovia.executor.base import Job, JobOutcome

R = TypeVar("R")

INSTALL_HINT = (
    "Install Ray into lovia's environment: pip install 'ray>=2.40,<3' (or, in a lovia clone, "
    "pip install -e '.[ray]'). Python 3.11+."
)


def import_ray() -> Any:
    """The ``ray`` module, or a UserError that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise UserError("Ray is not installed", hint=INSTALL_HINT) from exc
    return ray


@dataclass(frozen=True)
class Placement:
    """Where one attempt of a job runs (reported by the worker to the ledger)."""

    key: str
    attempt: int
    node: str
    pid: int


class Ledger:
    """Attempt counts and the running jobs of one batch (held by a Ray actor)."""

    def __init__(self) -> None:
        self.attempts: dict[str, int] = {}
        self.live: dict[str, Placement] = {}

    def start(self, key: str, node: str, pid: int) -> int:
        attempt = self.attempts.get(key, 0) + 1
        self.attempts[key] = attempt
        self.live[key] = Placement(key, attempt, node, pid)
        return attempt

    def finish(self, key: str) -> None:
        self.live.pop(key, None)

    def attempts_of(self, key: str) -> int:
        return self.attempts.get(key, 0)

    def placements(self) -> list[Placement]:
        return list(self.live.values())


def _execute(
    ledger: Any, key: str, fn: Callable[..., Coroutine[Any, Any, Any]], args: tuple[Any, ...]
) -> tuple[Any, int, str]:
    """The body of every Ray task: note the attempt, run the job in a fresh event loop."""
    ray = import_ray()
    node = str(ray.get_runtime_context().get_node_id())
    started = ledger.start.remote(key, node, os.getpid())  # not awaited: the job goes first
    resolved = tuple(ray.get(a) if isinstance(a, ray.ObjectRef) else a for a in args)
    try:
        value: Any = asyncio.run(fn(*resolved))
    finally:
        ledger.finish.remote(key)
    return value, int(ray.get(started)), node


class RayExecutor:
    """Runs jobs as Ray tasks.

    ``address``: a cluster to join (``"10.0.0.5:6379"``, ``"ray://..."``, ``"auto"``); ``None``
    joins ``$RAY_ADDRESS`` if set, else starts a local Ray for this process. ``runtime_env`` is
    the job-wide Ray runtime environment (``env_vars`` carry provider keys to the workers,
    ``pip``/``py_modules``/``working_dir`` carry code). ``num_cpus`` is what one job reserves:
    agent jobs mostly wait on the model, so a fraction packs several per core.
    ``max_in_flight`` bounds the jobs submitted at once (``None``: all).
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        runtime_env: dict[str, Any] | None = None,
        num_cpus: float = 0.5,
        max_retries: int = 3,
        max_in_flight: int | None = None,
        spread: bool = True,
        namespace: str = "lovia",
        log_to_driver: bool = False,
    ) -> None:
        if num_cpus < 0:
            raise ValueError(f"num_cpus must be >= 0, got {num_cpus}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError(f"max_in_flight must be >= 1, got {max_in_flight}")
        self.address = address
        self.runtime_env = dict(runtime_env or {})
        self.num_cpus = num_cpus
        self.max_retries = max_retries
        self.max_in_flight = max_in_flight
        self.spread = spread
        self.namespace = namespace
        self.log_to_driver = log_to_driver
        self._started_ray = False
        self._running = 0
        self._ledger: Any = None
        self._live_prefix: str | None = None

    # ------------------------------------------------------------------ connection

    def connect(self) -> Any:
        """Join (or start) the cluster once; returns the ``ray`` module."""
        ray = import_ray()
        if not ray.is_initialized():
            try:
                ray.init(
                    address=self.address,
                    runtime_env=self.runtime_env or None,
                    namespace=self.namespace,
                    log_to_driver=self.log_to_driver,
                    include_dashboard=False if self.address is None else None,
                    configure_logging=False,
                )
            except ConnectionError as exc:
                raise UserError(
                    f"Cannot reach the Ray cluster at {self.address}: {exc}",
                    hint="Check the address `ray status` prints on the head node, or omit it "
                    "to start a local Ray.",
                ) from exc
            self._started_ray = True
        return ray

    def shutdown(self) -> None:
        """Leave the cluster (and stop the local Ray this executor started)."""
        if self._ledger is not None:
            with contextlib.suppress(Exception):
                import_ray().kill(self._ledger)
            self._ledger = None
        if self._started_ray:
            import_ray().shutdown()
            self._started_ray = False

    async def __aenter__(self) -> RayExecutor:
        self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.shutdown()

    # ------------------------------------------------------------------ seam

    def share(self, value: Any) -> Any:
        return self.connect().put(value)

    def running(self) -> int:
        return self._running

    async def placements(self) -> list[Placement]:
        """The jobs of the current run executing right now: attempt, node and process."""
        prefix = self._live_prefix
        if self._ledger is None or prefix is None:
            return []
        result: list[Placement] = await self._ledger.placements.remote()
        return [
            Placement(p.key.removeprefix(prefix), p.attempt, p.node, p.pid)
            for p in result
            if p.key.startswith(prefix)
        ]

    def _ledger_of(self, ray: Any) -> Any:
        """One ledger actor per executor, kept between runs: starting an actor starts a
        worker process, seconds on a busy machine."""
        if self._ledger is None:
            ledger_cls = ray.remote(num_cpus=0)(Ledger)
            name = f"lovia-ledger-{uuid.uuid4().hex[:12]}"
            self._ledger = ledger_cls.options(name=name).remote()
        return self._ledger

    async def run(self, jobs: Sequence[Job[R]]) -> AsyncGenerator[JobOutcome[R], None]:
        ray = self.connect()
        ledger = self._ledger_of(ray)
        prefix = f"{uuid.uuid4().hex[:8]}/"  # keys of this run, apart from earlier runs'
        self._live_prefix = prefix
        options: dict[str, Any] = {
            "num_cpus": self.num_cpus,
            "max_retries": self.max_retries,
            "retry_exceptions": False,
        }
        if self.spread:
            options["scheduling_strategy"] = "SPREAD"
        task = ray.remote(_execute).options(**options)
        queue = deque(jobs)
        limit = self.max_in_flight or max(len(queue), 1)
        pending: dict[asyncio.Future[Any], tuple[str, Any]] = {}
        try:
            while queue or pending:
                while queue and len(pending) < limit:
                    job = queue.popleft()
                    ref = task.remote(ledger, prefix + job.key, job.fn, job.args)
                    pending[asyncio.wrap_future(ref.future())] = (job.key, ref)
                done, _ = await asyncio.wait(
                    pending, timeout=0.5, return_when=asyncio.FIRST_COMPLETED
                )
                self._running = len(await self.placements())
                for fut in done:
                    key, _ref = pending.pop(fut)
                    yield await self._outcome(ray, ledger, prefix, key, fut)
        finally:
            for _key, ref in pending.values():
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
            self._running = 0
            self._live_prefix = None

    async def _outcome(
        self, ray: Any, ledger: Any, prefix: str, key: str, fut: asyncio.Future[Any]
    ) -> JobOutcome[R]:
        exc = fut.exception()
        if exc is None:
            value, attempt, node = fut.result()
            return JobOutcome(key, value=value, attempts=attempt, node=node)
        attempts = int(await ledger.attempts_of.remote(prefix + key))
        ledger.finish.remote(prefix + key)
        if isinstance(exc, ray.exceptions.RayTaskError):
            cause = exc.cause if exc.cause is not None else exc
            error = f"{type(cause).__name__}: {cause}"
            return JobOutcome(key, error=error, attempts=max(attempts, 1))
        error = f"{type(exc).__name__}: worker lost after {attempts} attempt(s): {exc}"
        return JobOutcome(key, error=error, attempts=max(attempts, 1), lost=True)


__all__ = ["INSTALL_HINT", "Ledger", "Placement", "RayExecutor", "import_ray"]
