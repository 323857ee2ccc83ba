"""Plan-mode runs in the host: what the workspace policy cannot see is refused here.

The workspace policy (:mod:`lovia.workspace.plan_mode`) refuses writes and risky commands. Two
things lie outside it: an MCP server's tools (refused outright: :class:`PlanRefusedPlugin`) and
any other call that would ask (a user agent's own tool, say), which :func:`refuse_approval`
settles as refused before a card is shown. A plan-mode run never asks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lovia.workspace.plan_mode import refusal, refused_tools

if TYPE_CHECKING:
    from lovia import events
    from lovia.plugins.base import Plugin, PluginInstance
    from lovia.run_context import RunContext


@dataclass
class PlanRefusedPlugin:
    """``inner``'s tools, each refused in plan mode; its instructions and hooks stay."""

    inner: Plugin
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = str(self.inner.name)

    async def setup(self, ctx: RunContext[Any]) -> PluginInstance:
        instance = await self.inner.setup(ctx)
        instance.tools = refused_tools(instance.tools)
        return instance


def refuse_approval(ev: events.ApprovalRequired) -> None:
    """Settle an approval a plan-mode run would have asked for: refused, with the reason."""
    ev.reject(refusal(f"{ev.call.name} would need approval"))


__all__ = ["PlanRefusedPlugin", "refuse_approval"]
