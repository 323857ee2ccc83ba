"""One model call: stream deltas (with retries) and assemble them into transcript entries."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lovia import events as ev
from lovia.exceptions import ContextOverflowError, RunCancelled
from lovia.messages import AssistantTurn, ToolCall, Usage
from lovia.output import StructuredOutput, response_format_for
from lovia.providers.base import ModelSettings, Provider
from lovia.reliability import CancelToken, RetryNotice, RetryPolicy, one_line_reason
from lovia.runtime.run_state import ModelTurnResult
from lovia.tools.base import Tool
from lovia.tracing import Tracer, model_call_span
from lovia.transcript import (
    AssistantTextEntry,
    EntryCompletedDelta,
    FinishDelta,
    ModelDelta,
    ReasoningDelta,
    ReasoningEntry,
    TextDelta,
    ToolCallDelta,
    ToolCallEntry,
    TranscriptEntry,
    UsageDelta,
)

if TYPE_CHECKING:
    from lovia.agent import Agent

logger = logging.getLogger("lovia.runtime.loop")


@dataclass
class _ToolCallSlot:
    index: int
    call_id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _StreamReset:
    """Yielded at the start of a retry attempt after output was produced."""

    visible: bool


async def stream_with_retries(
    provider: Provider,
    input_entries: Sequence[TranscriptEntry],
    *,
    tools: list[dict[str, Any]] | None,
    response_format: dict[str, Any] | None,
    settings: ModelSettings | None,
    retry: RetryPolicy | None,
    cancel_token: CancelToken | None = None,
) -> AsyncIterator[ModelDelta | _StreamReset]:
    attempts = retry.max_attempts if retry is not None else 1
    restart_on_partial = retry.restart_on_partial if retry is not None else False
    armed: _StreamReset | None = None
    attempt = 0
    while True:
        attempt += 1
        produced = False
        visible = False
        try:
            stream = provider.stream(
                input_entries, tools=tools, response_format=response_format, settings=settings
            )
            try:
                async for delta in stream:
                    if cancel_token is not None and cancel_token.is_cancelled:
                        cancel_token.check()  # the finally below closes the provider stream
                    if armed is not None:
                        yield armed
                        armed = None
                    produced = True
                    if isinstance(delta, (TextDelta, ReasoningDelta)):
                        visible = True
                    yield delta
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
            if armed is not None:
                # The retry produced nothing at all: still tell consumers to drop the old output.
                yield armed
            return
        except (ContextOverflowError, RunCancelled, GeneratorExit):
            raise
        except BaseException as exc:
            if not isinstance(exc, Exception):
                raise
            if produced and not restart_on_partial:
                raise
            if retry is None or attempt >= attempts or not retry.retry_on(exc):
                raise
            if produced:
                armed = _StreamReset(visible=visible or (armed.visible if armed else False))
            delay = _retry_delay(retry, attempt, exc)
            logger.warning(
                "model.retry: attempt %d/%d failed (%s: %s); retrying in %.2fs",
                attempt,
                attempts,
                type(exc).__name__,
                one_line_reason(exc),
                delay,
            )
            _tell_retry(retry, RetryNotice(attempt, attempts, delay, exc))
            if cancel_token is not None:
                cancel_token.check()
            await retry.sleep(delay)
            if cancel_token is not None:
                cancel_token.check()


def _tell_retry(retry: RetryPolicy, notice: RetryNotice) -> None:
    """Give the policy's listener the notice; a failing listener never stops the retry."""
    if retry.on_retry is None:
        return
    try:
        retry.on_retry(notice)
    except Exception:
        logger.warning("model.retry_listener_failed", exc_info=True)


def _retry_delay(retry: RetryPolicy, attempt: int, exc: BaseException) -> float:
    """Backoff, but at least the server's ``Retry-After`` (itself capped at ``backoff_max``)."""
    delay = retry.backoff_delay(attempt)
    retry_after = getattr(exc, "retry_after", None)
    if isinstance(retry_after, (int, float)) and retry_after > 0:
        delay = max(delay, min(float(retry_after), retry.backoff_max))
    return delay


def assemble_turn_entries(
    *,
    text: list[str],
    reasoning: list[str],
    tool_slots: dict[int, _ToolCallSlot],
    completed_entries: list[TranscriptEntry],
) -> list[TranscriptEntry]:
    """Entries of one turn: completed entries win over deltas, per kind."""
    done_reasoning = [e for e in completed_entries if isinstance(e, ReasoningEntry)]
    done_text = [e for e in completed_entries if isinstance(e, AssistantTextEntry)]
    done_calls = [e for e in completed_entries if isinstance(e, ToolCallEntry)]
    out: list[TranscriptEntry] = []
    if done_reasoning:
        out.extend(done_reasoning)
    elif reasoning:
        joined = "".join(reasoning)
        if joined:
            out.append(ReasoningEntry(joined))
    if done_text:
        out.extend(done_text)
    elif text:
        joined = "".join(text)
        if joined:
            out.append(AssistantTextEntry(joined))
    if done_calls:
        out.extend(done_calls)
    else:
        for index in sorted(tool_slots):
            slot = tool_slots[index]
            out.append(ToolCallEntry(slot.call_id, slot.name, "".join(slot.arguments) or "{}"))
    return out


async def stream_model_turn(
    *,
    agent: Agent[Any],
    provider: Provider,
    input_entries: Sequence[TranscriptEntry],
    tools_by_name: dict[str, Tool],
    structured_output: StructuredOutput | None,
    tracer: Tracer,
    turn: int,
    result: ModelTurnResult,
    retry: RetryPolicy | None,
    cancel_token: CancelToken | None = None,
    tool_schemas: list[dict[str, Any]] | None = None,
) -> AsyncIterator[ev.Event]:
    """Stream one model call as events and fill ``result`` with the assembled turn."""
    if tool_schemas is None:
        tool_schemas = [t.openai_schema() for t in tools_by_name.values()] or None
    response_format = (
        response_format_for(structured_output)
        if structured_output is not None and structured_output.use_native
        else None
    )
    model_label = getattr(provider, "model", None) or getattr(provider, "name", "model")
    text: list[str] = []
    reasoning: list[str] = []
    slots: dict[int, _ToolCallSlot] = {}
    completed: list[TranscriptEntry] = []
    usage = Usage()
    finish: str | None = None
    logger.info("model.start: model=%s turn=%d entries=%d", model_label, turn, len(input_entries))
    started = time.perf_counter()
    with model_call_span(tracer, model=str(model_label), turn=turn):
        async for delta in stream_with_retries(
            provider,
            input_entries,
            tools=tool_schemas,
            response_format=response_format,
            settings=agent.settings,
            retry=retry,
            cancel_token=cancel_token,
        ):
            if isinstance(delta, TextDelta):
                text.append(delta.text)
                yield ev.TextDelta(delta.text)
            elif isinstance(delta, ToolCallDelta):
                slot = slots.get(delta.index)
                if slot is None:
                    slot = slots[delta.index] = _ToolCallSlot(delta.index)
                if delta.call_id:
                    slot.call_id = delta.call_id
                if delta.name:
                    slot.name = delta.name
                if delta.arguments:
                    slot.arguments.append(delta.arguments)
            elif isinstance(delta, ReasoningDelta):
                reasoning.append(delta.text)
                yield ev.ReasoningDelta(delta.text)
            elif isinstance(delta, UsageDelta):
                usage = delta.usage
            elif isinstance(delta, FinishDelta):
                finish = delta.reason
            elif isinstance(delta, EntryCompletedDelta):
                completed.append(delta.entry)
            elif isinstance(delta, _StreamReset):
                text.clear()
                reasoning.clear()
                slots.clear()
                completed.clear()
                usage = Usage()
                finish = None
                if delta.visible:
                    yield ev.OutputDiscarded()
    entries = assemble_turn_entries(
        text=text, reasoning=reasoning, tool_slots=slots, completed_entries=completed
    )
    content_parts = [e.content for e in entries if isinstance(e, AssistantTextEntry)]
    calls = [
        ToolCall(e.call_id, e.name, e.arguments) for e in entries if isinstance(e, ToolCallEntry)
    ]
    result.assistant = AssistantTurn(
        content="".join(content_parts) if content_parts else None,
        tool_calls=calls,
        usage=usage,
        finish_reason=finish,
    )
    result.turn_entries = entries
    logger.info(
        "model.done: model=%s turn=%d tokens=%d/%d calls=%d dur=%.0fms",
        model_label,
        turn,
        usage.input_tokens,
        usage.output_tokens,
        len(calls),
        (time.perf_counter() - started) * 1000,
    )


__all__ = ["assemble_turn_entries", "stream_model_turn", "stream_with_retries"]
