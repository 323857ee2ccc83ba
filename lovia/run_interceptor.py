"""Run interceptors: code a plugin lets into the run loop at fixed points, with a say.

Unlike :class:`~lovia.hooks.AgentHooks` (observers of events, which cannot change the run),
an interceptor is awaited at a point and answers with an :class:`Interception`: context for the
model, a stricter or a skipped approval for a tool call, feedback after a call, a reason to go
on instead of stopping. User shell hooks (:mod:`lovia.workspace.project_hooks`) are one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from lovia.exceptions import LoviaError

if TYPE_CHECKING:
    from lovia.messages import ToolCall
    from lovia.run_context import RunContext

Verdict: TypeAlias = Literal["allow", "ask", "deny"]
_SEVERITY = {"allow": 0, "ask": 1, "deny": 2}


@dataclass
class Interception:
    """What an interceptor says at one point; every field is optional."""

    decision: Verdict | None = None
    """``before_tool`` only: ``deny`` refuses the call, ``ask`` asks the user even where the
    policy would not, ``allow`` skips the ordinary approval (the tool's own deny rules and
    checks still apply when it runs)."""
    reason: str | None = None
    """Why: the model sees it with a ``deny`` (or a blocked prompt, for the user)."""
    context: list[str] = field(default_factory=list)
    """Text the model sees: beside the prompt at run start, after the result after a call."""
    block: str | None = None
    """``run_starting``: refuse the prompt (the run fails with this); ``before_stop``: go on
    instead of stopping, with this as the next user message; ``before_compact``: do not
    compact (a manual compaction fails with this; an automatic one shows it)."""
    stop: str | None = None
    """End the run now (the run fails with this reason)."""
    notices: list[str] = field(default_factory=list)
    """Lines for the user (a hook that failed or timed out), never for the model."""

    def merge(self, other: Interception | None) -> Interception:
        """Both interceptors' say: the stricter decision, every text."""
        if other is None:
            return self
        decision = self.decision
        if other.decision is not None and (
            decision is None or _SEVERITY[other.decision] > _SEVERITY[decision]
        ):
            decision = other.decision
        reasons = [r for r in (self.reason, other.reason) if r]
        return Interception(
            decision=decision,
            reason="\n".join(reasons) or None,
            context=[*self.context, *other.context],
            block=_join(self.block, other.block),
            stop=_join(self.stop, other.stop),
            notices=[*self.notices, *other.notices],
        )


def _join(a: str | None, b: str | None) -> str | None:
    if a and b:
        return f"{a}\n{b}"
    return a or b


class RunInterceptor:
    """Base class: override the points you need; each default says nothing (``None``)."""

    async def run_starting(
        self, ctx: RunContext[Any], *, prompt: str, first: bool
    ) -> Interception | None:
        """A fresh run is about to call the model; ``first``: the conversation has no history."""
        return None

    async def before_tool(
        self, call: ToolCall, args: dict[str, Any], ctx: RunContext[Any], *, needs_approval: bool
    ) -> Interception | None:
        """A tool call passed its checks; ``needs_approval``: the policy asks the user."""
        return None

    async def after_tool(
        self,
        call: ToolCall,
        args: dict[str, Any],
        ctx: RunContext[Any],
        *,
        output: str,
        is_error: bool,
    ) -> Interception | None:
        """A tool call ran; ``context`` joins its result."""
        return None

    async def before_stop(
        self, ctx: RunContext[Any], *, output: str, again: bool
    ) -> Interception | None:
        """The model answered without tool calls; ``again``: a ``block`` already continued it."""
        return None

    async def before_compact(
        self,
        ctx: RunContext[Any],
        *,
        reactive: bool,
        trigger: Literal["auto", "manual"] = "auto",
        focus: str | None = None,
    ) -> Interception | None:
        """The conversation is being compacted: ``auto`` when the context policy decided to
        (after the fact: ``block`` is only a notice), ``manual`` before a ``/compact`` with the
        user's ``focus`` (``block`` or ``stop`` cancels it)."""
        return None


class InterceptorStopped(LoviaError):
    """An interceptor refused a prompt or ended the run."""


async def gather(
    interceptors: list[RunInterceptor], point: str, *args: Any, **kwargs: Any
) -> Interception | None:
    """Every interceptor's say at ``point``, merged; one that raises is a notice, not a failure."""
    merged: Interception | None = None
    for interceptor in interceptors:
        try:
            said = await getattr(interceptor, point)(*args, **kwargs)
        except Exception as exc:  # an interceptor's bug never ends the run
            said = Interception(notices=[f"{type(interceptor).__name__} failed: {exc}"])
        if said is not None:
            merged = said if merged is None else merged.merge(said)
    return merged


__all__ = ["Interception", "InterceptorStopped", "RunInterceptor", "Verdict", "gather"]
