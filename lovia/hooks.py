"""Event subscribers: ``AgentHooks`` calls ``handler(event, ctx)`` for matching events."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias, TypeVar

from lovia.events import Event
from lovia.run_context import RunContext

logger = logging.getLogger("lovia.hooks")

HookHandler: TypeAlias = Callable[[Any, RunContext[Any]], Awaitable[None] | None]
H = TypeVar("H", bound=Callable[..., Any])


class AgentHooks:
    """A registry of event handlers; a raising handler is logged, never fatal."""

    def __init__(self) -> None:
        self._any: list[HookHandler] = []
        self._by_type: dict[type[Event], list[HookHandler]] = {}

    def on(self, event_type: type[Event] | tuple[type[Event], ...]) -> Callable[[H], H]:
        types = event_type if isinstance(event_type, tuple) else (event_type,)

        def register(fn: H) -> H:
            for t in types:
                self._by_type.setdefault(t, []).append(fn)
            return fn

        return register

    def on_any(self, fn: H) -> H:
        self._any.append(fn)
        return fn

    def _handlers_for(self, event: Event) -> list[HookHandler]:
        handlers = list(self._any)
        for t, fns in list(self._by_type.items()):
            if isinstance(event, t):
                handlers.extend(fns)
        return handlers

    async def dispatch(self, event: Event, ctx: RunContext[Any]) -> None:
        for handler in self._handlers_for(event):
            try:
                result = handler(event, ctx)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                logger.warning(
                    "hook.error: handler %r failed on %s",
                    getattr(handler, "__name__", handler),
                    type(event).__name__,
                    exc_info=True,
                )

    def __bool__(self) -> bool:
        return bool(self._any or self._by_type)


async def dispatch(hooks: AgentHooks | None, event: Event, ctx: RunContext[Any]) -> None:
    if hooks is not None:
        await hooks.dispatch(event, ctx)


__all__ = ["AgentHooks", "HookHandler", "dispatch"]
