"""Handoffs between agents (a sentinel-returning tool) and agents used as tools."""

from __future__ import annotations

import hashlib
import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lovia._runner_seam import runner
from lovia.exceptions import RunCancelled
from lovia.tools.base import Tool

if TYPE_CHECKING:
    from lovia.agent import Agent
    from lovia.context.policy import ContextPolicy
    from lovia.reliability import RetryPolicy, RunBudget
    from lovia.run_context import RunContext

HANDOFF_TOOL_PREFIX = "transfer_to_"
_MAX_TOOL_NAME = 64


@dataclass
class Handoff:
    target: Agent[Any]
    name: str | None = None
    description: str | None = None
    on_handoff: Callable[[dict[str, Any], RunContext[Any]], Awaitable[None] | None] | None = None


@dataclass
class _HandoffSignal:
    """Returned by a handoff tool's invoke; the loop switches agents when it sees one."""

    handoff: Handoff
    reason: str | None = None


def _slug(s: str, *, max_len: int = _MAX_TOOL_NAME) -> str:
    """A deterministic tool-name-safe slug of ``s``."""
    lowered = s.lower().replace(" ", "_").replace("-", "_")
    slug = re.sub(r"[^a-z0-9_]", "", lowered)
    digest = hashlib.sha256(s.encode("utf-8")).hexdigest()[:8]
    if not slug:
        return "agent" if s == "" else f"agent_{digest}"
    if len(slug) > max_len:
        return slug[: max_len - 9] + "_" + digest
    return slug


def build_handoff_tool(handoff: Handoff) -> Tool:
    target = handoff.target
    name = handoff.name or HANDOFF_TOOL_PREFIX + _slug(target.name, max_len=52)
    description = handoff.description or (
        f"Transfer the conversation to the {target.name} agent. Use this when the request is "
        "better handled by that agent; it continues with the full conversation."
    )

    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> _HandoffSignal:
        if handoff.on_handoff is not None:
            result = handoff.on_handoff(args, ctx)
            if inspect.isawaitable(result):
                await result
        reason = args.get("reason")
        return _HandoffSignal(handoff, reason=reason if isinstance(reason, str) else None)

    return Tool(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": {
                "reason": {
                    "type": "string",
                    "description": "Why the conversation is being transferred (optional).",
                }
            },
            "required": [],
            "additionalProperties": False,
        },
        invoke=invoke,
        parallel=False,
        _handoff=True,
        kind="other",
        title=f"Hand off to {target.name}",
    )


def agent_as_tool(
    agent: Agent[Any],
    *,
    name: str | None = None,
    description: str | None = None,
    max_turns: int = 50,
    budget: RunBudget | None = None,
    retry: RetryPolicy | None = None,
    context_policy: ContextPolicy | None = None,
) -> Tool:
    """Expose ``agent`` as a tool: each call is a separate sub-run that returns its output."""

    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> Any:
        try:
            result = await runner().run(
                agent,
                args.get("input") or "",
                context=ctx.context,
                max_turns=max_turns,
                budget=replace(budget) if budget is not None else None,
                cancel_token=ctx.cancel_token,
                retry=retry,
                context_policy=context_policy,
                tracer=ctx._tracer,
                _parent_usage=ctx.usage,
            )
        except RunCancelled:
            raise
        return result.output

    return Tool(
        name=name or "ask_" + _slug(agent.name, max_len=60),
        description=description or f"Delegate a task to the {agent.name} agent and get its answer.",
        parameters={
            "type": "object",
            "properties": {
                "input": {
                    "type": "string",
                    "description": "The task or question for the agent, with all needed context.",
                }
            },
            "required": ["input"],
            "additionalProperties": False,
        },
        invoke=invoke,
        parallel=True,
        kind="other",
        title=f"Ask {agent.name}",
    )


__all__ = ["HANDOFF_TOOL_PREFIX", "Handoff", "agent_as_tool", "build_handoff_tool"]
