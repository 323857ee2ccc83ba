"""Input and output guardrails: functions that may veto a run at fixed checkpoints."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeAlias

from lovia.exceptions import GuardrailTripped
from lovia.messages import Message
from lovia.run_context import RunContext

GuardrailVerdict: TypeAlias = str | bool | None
GuardrailFn: TypeAlias = Callable[..., GuardrailVerdict | Awaitable[GuardrailVerdict]]


async def _check(
    kind: str, guards: Sequence[GuardrailFn], value: Any, ctx: RunContext[Any]
) -> None:
    for guard in guards:
        verdict = guard(value, ctx)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        if not verdict:
            continue
        if verdict is True:
            raise GuardrailTripped(f"{kind} guardrail rejected the value")
        raise GuardrailTripped(f"{kind} guardrail: {verdict}")


async def check_input_guardrails(
    guards: Sequence[GuardrailFn], messages: list[Message], ctx: RunContext[Any]
) -> None:
    await _check("input", guards, messages, ctx)


async def check_output_guardrails(
    guards: Sequence[GuardrailFn], output: Any, ctx: RunContext[Any]
) -> None:
    await _check("output", guards, output, ctx)


__all__ = ["GuardrailFn", "GuardrailVerdict", "check_input_guardrails", "check_output_guardrails"]
