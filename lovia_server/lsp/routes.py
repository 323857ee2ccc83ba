"""Every ``lovia/*`` method as one row: its params and result models and the runtime method that
serves it. Params are validated (errors become -32602 with ``data.field``), one typed runtime
method is called, and its result model is serialised in ``Route.serve``.

The server registers its handlers by name (``protocol.names``) and imports this table with the
first request, so ``initialize`` is answered before the models load.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from lovia_server import protocol as p

if TYPE_CHECKING:
    from lovia_server.lsp.server_runtime import ServerRuntime

P = TypeVar("P", bound=p.WireParams)
R = TypeVar("R", bound=p.WireModel)
Json = Any  # a decoded JSON value (the edge where the wire is untyped)


@dataclass(frozen=True)
class Route(Generic[P, R]):
    """One ``lovia/*`` method and the runtime method that serves it (``lambda rt: rt.steer``)."""

    method: p.Method[P, R]
    handler: Callable[[ServerRuntime], Callable[[P], Awaitable[R]]]

    async def serve(self, runtime: ServerRuntime, raw: Json) -> Json:
        """Validate (errors become -32602 with ``data.field``), call, serialise the result."""
        params = p.parse_params(self.method.params, raw)
        result = await self.handler(runtime)(params)
        return result.to_wire()


# Not annotated as tuple[Route[Any, Any], ...]: each row keeps its own types, so mypy checks that
# the handler takes the method's params model and returns its result model.
ROUTES = (
    Route(p.RUN, lambda rt: rt.run),
    Route(p.STEER, lambda rt: rt.steer),
    Route(p.UNSTEER, lambda rt: rt.unsteer),
    Route(p.APPROVE, lambda rt: rt.approve),
    Route(p.ANSWER, lambda rt: rt.answer),
    Route(p.CANCEL, lambda rt: rt.cancel),
    Route(p.RESUME, lambda rt: rt.resume),
    Route(p.REPLAY, lambda rt: rt.replay),
    Route(p.SESSIONS, lambda rt: rt.sessions),
    Route(p.SESSION, lambda rt: rt.session),
    Route(p.DELETE_SESSION, lambda rt: rt.delete_session),
    Route(p.CHECKPOINTS, lambda rt: rt.checkpoints),
    Route(p.RESTORE_PREVIEW, lambda rt: rt.restore_preview),
    Route(p.RESTORE, lambda rt: rt.restore),
    Route(p.STATUS, lambda rt: rt.status),
    Route(p.MCP_RESTART, lambda rt: rt.mcp_restart),
    Route(p.WORKTREE_LIST, lambda rt: rt.worktree_list),
    Route(p.WORKTREE_DIFF, lambda rt: rt.worktree_diff),
    Route(p.WORKTREE_APPLY, lambda rt: rt.worktree_apply),
    Route(p.WORKTREE_DISCARD, lambda rt: rt.worktree_discard),
    Route(p.WORKTREE_KEEP, lambda rt: rt.worktree_keep),
)

BY_NAME: dict[str, Route[Any, Any]] = {route.method.name: route for route in ROUTES}

__all__ = ["BY_NAME", "ROUTES", "Route"]
