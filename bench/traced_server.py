"""The real lovia server, noting when each stamped delta reached the provider (bench only).

``bench/e2e_latency.py`` starts this instead of ``python -m lovia_server``. It wraps
``SSEParser.feed`` of ``lovia.providers._sse`` (when that module is first imported, so start-up
is unchanged): each parsed event whose delta text is a stamp from ``bench/stamp_model.py`` is
paired with the ``time.monotonic_ns()`` at which its bytes reached the parser. At exit the
pairs are written as JSON to ``$LOVIA_TRACE_FILE``: ``{"<stamp>;": <arrival ns>, ...}``.

It also notes every collection of the garbage collector (``gc.callbacks``, which observe and
change nothing): ``$LOVIA_TRACE_FILE.gc.json`` gets ``[[generation, start ns, end ns], ...]``,
so a latency stall can be laid beside the collections that ran during it. And it watches the
server's event loop when ``$LOVIA_TRACE_LOOP`` is 1 (its wake-ups cost the server a little, so
it is off by default): a task that sleeps 2 ms at a time notes every wake-up more than 3 ms late
(the loop was busy or the process was not running) in ``$LOVIA_TRACE_FILE.lag.json`` as
``[[start ns, end ns], ...]``: a stall that overlaps one happened in the server.
"""

from __future__ import annotations

import asyncio
import atexit
import gc
import importlib.abc
import importlib.machinery
import json
import os
import sys
import time
from types import ModuleType
from typing import Any

ARRIVALS: dict[str, int] = {}
COLLECTIONS: list[tuple[int, int, int]] = []
_started: list[int] = []


LAGS: list[tuple[int, int]] = []


async def _watch_loop() -> None:
    while True:
        start = time.monotonic_ns()
        await asyncio.sleep(0.002)
        end = time.monotonic_ns()
        if end - start > 5_000_000:  # 2 ms asked, over 3 ms late
            LAGS.append((start, end))


class _WatchedLoops(asyncio.DefaultEventLoopPolicy):
    """Every loop the server runs gets the watch task (``asyncio.run`` asks the policy)."""

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        loop = super().new_event_loop()
        loop.call_soon(lambda: _keep.append(loop.create_task(_watch_loop())))
        return loop


_keep: list[asyncio.Task[None]] = []


def _collection(phase: str, info: dict[str, Any]) -> None:
    now = time.monotonic_ns()
    if phase == "start":
        _started[:] = [now]
    elif _started:
        COLLECTIONS.append((int(info["generation"]), _started[0], now))


def _patch(module: ModuleType) -> None:
    original = module.SSEParser.feed

    def feed(self: Any, chunk: bytes) -> list[dict[str, Any]]:
        now = time.monotonic_ns()
        events: list[dict[str, Any]] = original(self, chunk)
        for event in events:
            try:
                content = event["choices"][0]["delta"]["content"]
            except (KeyError, IndexError, TypeError):
                continue
            if content:
                ARRIVALS[content] = now
        return events

    module.SSEParser.feed = feed


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "lovia.providers._sse":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            _patch(module)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _dump() -> None:
    target = os.environ.get("LOVIA_TRACE_FILE")
    if target:
        with open(target, "w") as out:
            json.dump(ARRIVALS, out)
        with open(f"{target}.gc.json", "w") as out:
            json.dump(COLLECTIONS, out)
        with open(f"{target}.lag.json", "w") as out:
            json.dump(LAGS, out)


if __name__ == "__main__":
    sys.meta_path.insert(0, _Finder())
    atexit.register(_dump)
    gc.callbacks.append(_collection)
    if os.environ.get("LOVIA_TRACE_LOOP") == "1":
        asyncio.set_event_loop_policy(_WatchedLoops())
    from lovia_server.__main__ import main

    main()
