"""One SDK client per endpoint, shared by every provider instance and run in the process.

Building an SDK client means building an HTTP client with its TLS context (tens of
milliseconds), and a fresh client per run also means a fresh TCP/TLS connection per run.
Providers therefore ask :func:`shared_client` for the client of their endpoint.

Ownership rule: a shared client belongs to this cache, never to a provider.
``provider.aclose()`` only drops the provider's reference, so closing one provider never
breaks another run that uses the same endpoint. Call :func:`aclose_shared_clients` at
shutdown to close the current event loop's clients. A client the caller passed in with
``client=`` stays the caller's: lovia never closes it.

HTTP connections are bound to the event loop that opened them, so the cache is kept per
running loop; entries of closed loops are dropped on the next lookup.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Protocol, TypeVar


class _Closable(Protocol):
    def is_closed(self) -> bool: ...

    async def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)

MAX_CLIENTS_PER_LOOP = 32

_BY_LOOP: dict[int, tuple[weakref.ref[asyncio.AbstractEventLoop], OrderedDict[Hashable, Any]]] = {}


def _clients_of(loop: asyncio.AbstractEventLoop) -> OrderedDict[Hashable, Any]:
    for key, (ref, _) in list(_BY_LOOP.items()):
        alive = ref()
        if alive is None or alive.is_closed():
            del _BY_LOOP[key]
    slot = _BY_LOOP.get(id(loop))
    if slot is None or slot[0]() is not loop:
        slot = (weakref.ref(loop), OrderedDict())
        _BY_LOOP[id(loop)] = slot
    return slot[1]


def shared_client(key: Hashable, factory: Callable[[], C]) -> C:
    """The running loop's client for ``key``, built by ``factory`` on first use."""
    clients = _clients_of(asyncio.get_running_loop())
    client: C | None = clients.get(key)
    if client is not None and not client.is_closed():
        clients.move_to_end(key)
        return client
    client = factory()
    clients[key] = client
    while len(clients) > MAX_CLIENTS_PER_LOOP:
        # The evicted client may still be streaming for someone: drop it, don't close it.
        clients.popitem(last=False)
    return client


async def aclose_shared_clients() -> None:
    """Close and forget the shared clients of the running event loop."""
    loop = asyncio.get_running_loop()
    slot = _BY_LOOP.pop(id(loop), None)
    if slot is None:
        return
    for client in list(slot[1].values()):
        try:
            await client.close()
        except Exception:  # pragma: no cover - closing is best effort
            pass


def shared_client_count() -> int:
    """How many shared clients the running loop holds (diagnostics and tests)."""
    slot = _BY_LOOP.get(id(asyncio.get_running_loop()))
    return len(slot[1]) if slot else 0


__all__ = ["aclose_shared_clients", "shared_client", "shared_client_count"]
