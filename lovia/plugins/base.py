"""The plugin contract: one object contributing tools, instructions, injectors and hooks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

from lovia.guardrails import GuardrailFn
from lovia.hooks import AgentHooks
from lovia.run_context import RunContext
from lovia.transcript import TranscriptEntry

if TYPE_CHECKING:
    from lovia.run_interceptor import RunInterceptor
    from lovia.tools.base import Tool

ViewInjector: TypeAlias = Callable[
    [RunContext[Any]],
    "list[TranscriptEntry] | Awaitable[list[TranscriptEntry] | None] | None",
]


async def _noop_aclose() -> None:
    return None


@dataclass
class PluginInstance:
    """What one plugin contributes to one agent for one run."""

    tools: list[Tool] = field(default_factory=list)
    view_injectors: list[ViewInjector] = field(default_factory=list)
    instructions: str | None = None
    hooks: AgentHooks | None = None
    input_guardrails: list[GuardrailFn] = field(default_factory=list)
    output_guardrails: list[GuardrailFn] = field(default_factory=list)
    interceptors: list[RunInterceptor] = field(default_factory=list)
    """Awaited at fixed points of the run, with a say (:mod:`lovia.run_interceptor`)."""
    aclose: Callable[[], Awaitable[None]] = _noop_aclose


@runtime_checkable
class Plugin(Protocol):
    """Any object with a ``name`` and ``async setup(ctx) -> PluginInstance``."""

    name: str

    async def setup(self, ctx: RunContext[Any]) -> PluginInstance: ...


__all__ = ["Plugin", "PluginInstance", "ViewInjector"]
