"""Runner: the stateless public facade over ``RunLoop``."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from lovia.checkpointer import CheckpointOptions
from lovia.context.policy import CompactNow, ContextPolicy
from lovia.exceptions import UserError
from lovia.messages import Message, Usage
from lovia.reliability import CancelToken, RetryPolicy, RunBudget
from lovia.runtime.loop import RunLoop
from lovia.runtime.result import RunHandle, RunResult
from lovia.session import Session
from lovia.steering import Mailbox
from lovia.tracing import Tracer

if TYPE_CHECKING:
    from lovia.agent import Agent


class Runner:
    """Start runs: ``stream`` for events, ``run`` for the result, ``run_sync`` for scripts."""

    @staticmethod
    def stream(
        agent: Agent[Any],
        input: str | list[Message],
        *,
        context: Any = None,
        output_type: Any = None,
        extra_instructions: str | None = None,
        max_turns: int = 50,
        budget: RunBudget | None = None,
        cancel_token: CancelToken | None = None,
        mailbox: Mailbox | None = None,
        retry: RetryPolicy | None = None,
        context_policy: ContextPolicy | None = None,
        session: Session | None = None,
        session_id: str | None = None,
        checkpoint: CheckpointOptions | None = None,
        tracer: Tracer | None = None,
        compact: CompactNow | None = None,
        _parent_usage: Usage | None = None,
    ) -> RunHandle:
        """Start a run. ``compact``: instead of calling the model, compact the session's
        conversation now (``/compact``; ``input`` is not added; see docs/context.md)."""
        loop = RunLoop(
            initial_agent=agent,
            user_input=input,
            context=context,
            output_type_override=output_type,
            extra_instructions=extra_instructions,
            max_turns=max_turns,
            budget=budget,
            cancel_token=cancel_token,
            mailbox=mailbox,
            retry=retry if retry is not None else agent.retry,
            context_policy=context_policy,
            session=session,
            session_id=session_id,
            checkpoint=checkpoint,
            tracer=tracer,
            parent_usage=_parent_usage,
            compact=compact,
        )
        return RunHandle(loop.stream(), loop.approvals, loop.cancel_token)

    @staticmethod
    async def run(agent: Agent[Any], input: str | list[Message], **kwargs: Any) -> RunResult:
        return await Runner.stream(agent, input, **kwargs).result()

    @staticmethod
    def run_sync(agent: Agent[Any], input: str | list[Message], **kwargs: Any) -> RunResult:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(Runner.run(agent, input, **kwargs))
        raise UserError(
            "Runner.run_sync() cannot be called from a running event loop",
            hint="Use `await Runner.run(...)` from async code.",
        )


__all__ = ["RunHandle", "RunResult", "Runner"]
