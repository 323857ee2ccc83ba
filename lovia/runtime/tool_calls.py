"""Tool calls in two halves: a serial preflight (lookup, parsing, approval) and the execution."""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from lovia import events as ev
from lovia.approvals import ApprovalChannel
from lovia.exceptions import BudgetExceeded, RunCancelled
from lovia.handoff import _HandoffSignal
from lovia.messages import ToolCall
from lovia.parts import TextPart, coerce_parts, project_parts
from lovia.reliability import CancelToken, RunBudget
from lovia.run_context import current_approval, current_tool_call
from lovia.run_interceptor import InterceptorStopped, gather
from lovia.runtime.run_state import RunState
from lovia.tools.base import Tool, render_tool_result, run_tool, truncate_tool_output
from lovia.tracing import Tracer, tool_call_span
from lovia.transcript import ToolCallEntry, ToolResultEntry

logger = logging.getLogger("lovia.runtime.tools")

_RAW_KEEP_LIMIT = 16_000


def wire_safe_arguments(arguments: str) -> str | None:
    """``None`` when ``arguments`` is a JSON object already, else the ``{"_raw": ...}`` form."""
    try:
        value = json.loads(arguments or "{}")
    except (json.JSONDecodeError, TypeError):
        value = None
    if isinstance(value, dict):
        return None
    return json.dumps({"_raw": arguments})


@dataclass
class PreflightResult:
    """Filled by :meth:`ToolCallProcessor.preflight`: a ready call, a rejection, or a stop."""

    tool: Tool | None = None
    args: dict[str, Any] | None = None
    rejected: bool = False
    needs_approval: bool = False
    approval: object = None
    """The approver's ``answer`` (``ApprovalRequired.approve(answer=...)``), for the call."""
    budget_error: BudgetExceeded | None = None

    @property
    def ready(self) -> bool:
        return (
            self.tool is not None
            and not self.rejected
            and not self.needs_approval
            and self.budget_error is None
        )


class ToolCallProcessor:
    def __init__(
        self,
        *,
        approvals: ApprovalChannel,
        cancel_token: CancelToken,
        budget: RunBudget | None,
    ) -> None:
        self.approvals = approvals
        self.cancel_token = cancel_token
        self.budget = budget

    # ------------------------------------------------------------------ preflight

    def _reject(
        self, state: RunState, call: ToolCall, outcome: PreflightResult, message: str
    ) -> ev.ToolCallCompleted:
        outcome.rejected = True
        state.transcript.append(ToolResultEntry(call.id, message, is_error=True))
        _normalize_call_args(state, call)
        return ev.ToolCallCompleted(
            call, result=message, is_error=True, output=message, tool=outcome.tool
        )

    async def preflight(
        self, call: ToolCall, outcome: PreflightResult, *, state: RunState
    ) -> list[ev.Event]:
        """Serial checks for one call; returns the events to emit (rejections).

        When the call needs a decision, ``outcome.needs_approval`` is set and the caller runs
        :meth:`ask_approval` next, so ``ApprovalRequired`` reaches the consumer in order.
        """
        self.cancel_token.check()
        if self.budget is not None:
            self.budget.record_tool_call()
            try:
                self.budget.check(state.run_ctx.usage)
            except BudgetExceeded as exc:
                outcome.budget_error = exc
                return []
        tool = state.active.tools_by_name.get(call.name)
        if tool is None:
            return [self._reject(state, call, outcome, f"Tool '{call.name}' is not available.")]
        outcome.tool = tool  # rejections below still tell the consumer which tool it was
        if tool._handoff and state.pending_handoff is not None:
            target = state.pending_handoff.handoff.target.name
            message = (
                f"Handoff not performed: this turn already transferred to '{target}'. "
                "Only the first handoff in a turn takes effect."
            )
            return [self._reject(state, call, outcome, message)]
        try:
            args = json.loads(call.arguments or "{}")
        except (json.JSONDecodeError, TypeError) as exc:
            if state.last_finish_reason == "length":
                message = (
                    f"Tool {call.name} arguments are incomplete: the response was cut off at "
                    "the output token limit (finish_reason=length) mid-call."
                )
            else:
                message = f"Invalid JSON in tool arguments: {exc}"
            return [self._reject(state, call, outcome, message)]
        if not isinstance(args, dict):
            message = f"Invalid tool arguments: expected a JSON object, got {type(args).__name__}."
            return [self._reject(state, call, outcome, message)]
        try:
            needs = tool.requires_approval(args, state.run_ctx)
        except Exception as exc:
            message = f"Tool {call.name} was not approved (approval check failed)."
            return [ev.ToolCallFailed(exc, call), self._reject(state, call, outcome, message)]
        outcome.args = args
        outcome.needs_approval = bool(needs)
        interceptors = state.active.plugins.interceptors
        if not interceptors:
            return []
        said = await gather(
            interceptors,
            "before_tool",
            call,
            args,
            state.run_ctx,
            needs_approval=outcome.needs_approval,
        )
        if said is None:
            return []
        events: list[ev.Event] = [ev.InterceptorNotice(n, call) for n in said.notices]
        if said.stop:
            raise InterceptorStopped(said.stop, hint="A hook ended the run.")
        if said.decision == "deny":
            message = f"Tool {call.name} was blocked by a hook."
            if said.reason:
                message += f" Reason: {said.reason}"
            outcome.needs_approval = False
            events.append(self._reject(state, call, outcome, message))
        elif said.decision == "ask":
            outcome.needs_approval = True
        elif said.decision == "allow":
            outcome.needs_approval = False
        return events

    async def ask_approval(
        self, call: ToolCall, outcome: PreflightResult, *, state: RunState
    ) -> AsyncIterator[ev.Event]:
        """Yield ``ApprovalRequired``; the consumer may decide before resuming the stream.

        Undecided calls go to ``agent.approval_handler``; still undecided means deny.
        """
        fut = self.approvals.register(call.id)
        try:
            yield ev.ApprovalRequired(call, _channel=self.approvals, tool=outcome.tool)
            if not fut.done():
                # Cancelled while the approval was open: no decision was made, so none is
                # recorded; the call stays pending and a resume asks for the same approval.
                self.cancel_token.check()
            handler = state.agent.approval_handler
            if not fut.done() and handler is not None:
                try:
                    decision: Any = handler(call, state.run_ctx)
                    if inspect.isawaitable(decision):
                        decision = await decision
                except Exception as exc:
                    yield ev.ToolCallFailed(exc, call)
                    decision = False
                if isinstance(decision, str):
                    verdict = decision.strip().lower()
                    if verdict == "allow":
                        self.approvals.approve(call.id)
                    elif verdict != "ask":
                        self.approvals.reject(call.id)
                else:
                    self.approvals.resolve(call.id, bool(decision))
            approved = fut.done() and not fut.cancelled() and fut.result()
            reason = self.approvals.rejection_message(call.id)
            outcome.approval = self.approvals.answer(call.id) if approved else None
        finally:
            self.approvals.discard(call.id)
        outcome.needs_approval = False
        if not approved:
            message = f"Tool {call.name} was not approved."
            if reason:
                message += f" The user said: {reason}"
            yield self._reject(state, call, outcome, message)

    # ------------------------------------------------------------------ execution

    async def execute(
        self,
        call: ToolCall,
        tool: Tool,
        args: dict[str, Any],
        *,
        state: RunState,
        tracer: Tracer,
        approval: object = None,
    ) -> AsyncIterator[ev.Event]:
        ctx = state.run_ctx
        agent = state.agent
        yield ev.ToolCallStarted(call, tool=tool)
        is_error = False
        parts = None
        raw: Any = None
        result: Any = None
        result_error: Exception | None = None
        token = current_tool_call.set(call)
        approval_token = current_approval.set(approval)
        with tool_call_span(tracer, name=call.name, call_id=call.id) as span:
            try:
                result = await run_tool(
                    tool,
                    args,
                    ctx,
                    default_retries=agent.default_tool_retries,
                    default_timeout=agent.default_tool_timeout,
                )
            except RunCancelled:
                raise
            except Exception as exc:
                span.record_exception(exc)
                result_error = exc
                is_error = True
                text = "Tool error: " + (str(exc) or type(exc).__name__)
                result = text
            finally:
                current_approval.reset(approval_token)
                current_tool_call.reset(token)
        if result_error is not None:
            yield ev.ToolCallFailed(result_error, call)
        else:
            if isinstance(result, _HandoffSignal):
                state.pending_handoff = result
                text = f"Transferred to {result.handoff.target.name}"
                if result.reason:
                    text += f" ({result.reason})"
            elif (coerced := coerce_parts(result)) is not None:
                parts = coerced
                text = project_parts(coerced)
            else:
                try:
                    text = await render_tool_result(
                        tool, result, ctx, default=agent.tool_result_renderer
                    )
                    raw = result
                except Exception as exc:
                    is_error = True
                    text = f"Tool error: result rendering failed: {exc}"
                    yield ev.ToolCallFailed(exc, call)
            limit = (
                tool.max_output_chars
                if tool.max_output_chars is not None
                else agent.max_tool_output_chars
            )
            if limit is not None and len(text) > limit:
                text = truncate_tool_output(text, limit)
                raw = None
                parts = None
            elif len(text) > _RAW_KEEP_LIMIT:
                raw = None
        interceptors = state.active.plugins.interceptors
        if interceptors:
            said = await gather(
                interceptors, "after_tool", call, args, ctx, output=text, is_error=is_error
            )
            for line in said.notices if said is not None else []:
                yield ev.InterceptorNotice(line, call)
            if said is not None and said.context:
                text += "\n\n" + "\n\n".join(said.context)
                raw = None
                if parts is not None:
                    parts = [*parts, TextPart("\n\n".join(said.context))]
        state.transcript.append(
            ToolResultEntry(
                call.id, text, raw=None if is_error else raw, is_error=is_error, parts=parts
            )
        )
        yield ev.ToolCallCompleted(call, result=result, is_error=is_error, output=text, tool=tool)


def _normalize_call_args(state: RunState, call: ToolCall) -> None:
    """Replace a stored call whose arguments are not a JSON object with the wire-safe form."""
    fixed = wire_safe_arguments(call.arguments)
    if fixed is None:
        return
    transcript = state.transcript
    for i in range(len(transcript) - 1, -1, -1):
        entry = transcript[i]
        if isinstance(entry, ToolCallEntry) and entry.call_id == call.id:
            transcript[i] = ToolCallEntry(entry.call_id, entry.name, fixed)
            return


__all__ = ["PreflightResult", "ToolCallProcessor", "wire_safe_arguments"]
