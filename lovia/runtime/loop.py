"""RunLoop: the only stateful module. One instance drives one run from set-up to the end.

Phases per turn, top to bottom: limits -> mailbox -> view -> model -> tools/output -> handoff.

Long because it is the one stateful module: every phase reads and writes the same run state,
so splitting it would pass that state between files; its functions stay under 80 lines instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from lovia import events as ev
from lovia.approvals import ApprovalChannel
from lovia.checkpointer import CheckpointOptions, RunSnapshot
from lovia.context.policy import (
    CompactionRequest,
    CompactNow,
    ContextPolicy,
    ContextResult,
    NoopContextPolicy,
)
from lovia.exceptions import (
    BudgetExceeded,
    ContextOverflowError,
    MaxTurnsExceeded,
    OutputValidationError,
    UserError,
)
from lovia.guardrails import check_input_guardrails, check_output_guardrails
from lovia.handoff import Handoff, build_handoff_tool
from lovia.messages import Message, ToolCall, Usage
from lovia.model_view import ModelView
from lovia.output import (
    DefaultOutputRepair,
    format_output_instructions,
    loads_lenient,
    parse_structured_output,
    resolve_structured_output,
)
from lovia.plugins.base import Plugin, PluginInstance, ViewInjector
from lovia.providers.base import Provider, discover_context_window, supports_vision
from lovia.reliability import CancelToken, RetryPolicy, RunBudget
from lovia.run_context import RunContext
from lovia.run_interceptor import InterceptorStopped, gather
from lovia.runtime import compact_now
from lovia.runtime.checkpoint import CheckpointWriter
from lovia.runtime.model_turn import stream_model_turn
from lovia.runtime.result import RunResult
from lovia.runtime.resume import (
    normalize_replayed_entries,
    reachable_agents,
    resolve_resume_agent,
    result_from_completed_snapshot,
    unapplied_handoff,
)
from lovia.runtime.run_state import ActiveAgent, ModelTurnResult, PluginActivation, RunState
from lovia.runtime.tool_calls import PreflightResult, ToolCallProcessor
from lovia.runtime.utils import supports_json_schema, truncate_repr
from lovia.session import NOTICE_META_KEY, STATE_META_KEY, Session
from lovia.steering import Mailbox
from lovia.tools.base import Tool
from lovia.tracing import NoopTracer, Tracer, handoff_span, record_run_end, run_span
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    messages_to_entries,
    to_json_safe,
)

if TYPE_CHECKING:
    from lovia.agent import Agent

logger = logging.getLogger("lovia.runtime.loop")

MAX_STOP_CONTINUATIONS = 5
"""How often interceptors may send the model on instead of stopping, in one run."""


def _latest_prompt(entries: Sequence[TranscriptEntry]) -> str:
    """The text of the run's last user input (what a prompt hook judges)."""
    for e in reversed(entries):
        if isinstance(e, InputEntry) and e.role == "user":
            content: Any = e.content
            if isinstance(content, str):
                return content
            texts = [getattr(part, "text", None) for part in content or []]
            return "\n".join(t for t in texts if isinstance(t, str))
    return ""


def _reminder(context: list[str]) -> str:
    """Interceptor context as the model sees it: marked as coming from the system."""
    body = "\n\n".join(c.strip() for c in context if c.strip())
    return f"<system-reminder>\n{body}\n</system-reminder>"


def pending_tool_calls(entries: Sequence[TranscriptEntry]) -> list[ToolCall]:
    """Calls without a result; duplicate ids pair by occurrence."""
    open_calls: list[ToolCallEntry] = []
    for e in entries:
        if isinstance(e, ToolCallEntry):
            open_calls.append(e)
        elif isinstance(e, ToolResultEntry):
            for i, c in enumerate(open_calls):
                if c.call_id == e.call_id:
                    del open_calls[i]
                    break
    return [ToolCall(c.call_id, c.name, c.arguments) for c in open_calls]


@dataclass
class _PumpEnded:
    """Queued by a background tool task when it finishes (with its error, if any)."""

    error: BaseException | None = None


@dataclass
class _Outcome:
    """Whether the run has its answer yet, and the answer."""

    done: bool = False
    output: Any = None


@dataclass
class _ViewPlan:
    """One turn's model view and what the reactive overflow path needs to retry it."""

    view: list[TranscriptEntry]
    request: CompactionRequest | None = None
    failed_tokens: int | None = None
    compacted: ev.ContextCompacted | None = None


class _ToolBatch:
    """One turn's background tool tasks; the queue is created only when a task is spawned."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[ev.Event | _PumpEnded] | None = None
        self.tasks: list[asyncio.Task[None]] = []
        self.in_flight = 0

    @property
    def queue(self) -> asyncio.Queue[ev.Event | _PumpEnded]:
        if self._queue is None:
            self._queue = asyncio.Queue()
        return self._queue


async def _pump(
    events: AsyncIterator[ev.Event], queue: asyncio.Queue[ev.Event | _PumpEnded]
) -> None:
    """Run one tool's event generator in the background, funnelling events into ``queue``."""
    try:
        async for item in events:
            queue.put_nowait(item)
    except BaseException as exc:
        queue.put_nowait(_PumpEnded(exc))
        if not isinstance(exc, Exception):
            raise
    else:
        queue.put_nowait(_PumpEnded())


class RunLoop:
    def __init__(
        self,
        *,
        initial_agent: Agent[Any],
        user_input: str | list[Message],
        context: Any,
        output_type_override: Any = None,
        extra_instructions: str | None = None,
        max_turns: int,
        budget: RunBudget | None = None,
        cancel_token: CancelToken | None = None,
        mailbox: Mailbox | None = None,
        retry: RetryPolicy | None = None,
        context_policy: ContextPolicy | None = None,
        session: Session | None,
        session_id: str | None,
        checkpoint: CheckpointOptions | None = None,
        tracer: Tracer | None = None,
        parent_usage: Usage | None = None,
        compact: CompactNow | None = None,
    ) -> None:
        if session is not None and session_id is None:
            raise UserError(
                "session_id is required when session is provided",
                hint="Pass session_id='...' to identify the conversation in the session store.",
            )
        self.initial_agent = initial_agent
        self.user_input = user_input
        self.context = context
        self.output_type_override = output_type_override
        self.extra_instructions = extra_instructions
        self.max_turns = max_turns
        self.budget = budget
        self.cancel_token = cancel_token if cancel_token is not None else CancelToken()
        self.mailbox = mailbox if mailbox is not None else Mailbox()
        self.retry = retry
        self.context_policy: ContextPolicy = (
            context_policy if context_policy is not None else initial_agent.context_policy
        )
        self.session = session
        self.session_id = session_id
        self.tracer: Tracer = tracer if tracer is not None else NoopTracer()
        self._caller_tracer = tracer
        self.parent_usage = parent_usage
        self.compact = compact
        # a compaction run keeps no checkpoint: interrupted, it is simply asked for again
        self.checkpointer = (
            checkpoint.checkpointer if checkpoint is not None and compact is None else None
        )
        self.run_id = checkpoint.resolved_run_id if checkpoint is not None else None
        self.resume_from = (
            checkpoint.resume_from if checkpoint is not None and compact is None else None
        )
        # one conversation id for providers' cache routing when there is no session or run id
        self._conversation = uuid.uuid4().hex
        self.if_run_exists = checkpoint.if_run_exists if checkpoint is not None else "resume"
        delete_on_success = checkpoint.delete_on_success if checkpoint is not None else False
        self.approvals = ApprovalChannel()
        self.checkpoints = CheckpointWriter(self.checkpointer, self.run_id, delete_on_success)
        self._activated: dict[int, ActiveAgent] = {}
        self._tools = ToolCallProcessor(
            approvals=self.approvals, cancel_token=self.cancel_token, budget=budget
        )
        self._exit_stack = contextlib.AsyncExitStack()
        self._noop_policy = type(self.context_policy) is NoopContextPolicy
        # optional policy hook: "compact() would return the transcript untouched" (skip it)
        passthrough = getattr(self.context_policy, "passthrough", None)
        self._passthrough: Callable[[Provider, dict[str, Any], str | None], bool] | None = (
            passthrough if callable(passthrough) else None
        )
        self._ctx: RunContext[Any] | None = None
        # True while a turn's model call is open: a failure there does not count the turn
        self._in_model_phase = False

    # ================================================================== entry

    async def stream(self) -> AsyncGenerator[ev.Event, None]:
        """The run's event stream; ends with exactly one ``RunCompleted`` or ``RunFailed``.

        Set-up (resume or bootstrap), then turns until an answer, then the end of the run.
        Each turn is one call of ``_turn`` (limits -> mailbox -> view -> model -> tools or
        output -> handoff).
        """
        span_cm = run_span(self.tracer, agent=self.initial_agent.name, run_id=self.run_id)
        span = span_cm.__enter__()
        try:
            try:
                snapshot = await self._resolve_resume()
                span.set_attribute("resumed", snapshot is not None)
                if snapshot is not None and snapshot.status == "completed":
                    async for event in self._replay_completed(snapshot):
                        yield event
                    return
                state = await self._bootstrap(snapshot)
            except Exception as exc:
                logger.error("run.failed: %s: %s", type(exc).__name__, exc)
                await self._report_setup_failure(exc)
                yield ev.RunFailed(exc)
                raise
            completed = False
            try:
                yield await self._emit(state, ev.RunStarted(agent=state.agent))
                outcome = _Outcome()
                if self.compact is not None:
                    async for event in self._compact_now(state, outcome):
                        yield event
                elif snapshot is None:
                    await self._check_input(state)
                    async for event in self._run_starting(state):
                        yield event
                else:
                    async for event in self._drain_pending_calls(state):
                        yield event
                    outcome.done, outcome.output = await self._finish_replayed_answer(state)
                while not outcome.done:
                    async for event in self._turn(state, outcome):
                        yield event
                result = await self._finalize_run(state, outcome.output, span)
                await self.checkpoints.complete(state, outcome.output)
                completed = True
                await self._append_session(state)
                yield await self._emit(state, ev.RunCompleted(result))
            except GeneratorExit:
                raise
            except BaseException as exc:
                failed = await self._record_failure(state, exc, completed=completed)
                if failed is not None:
                    yield failed
                raise
        except BaseException as exc:
            span_cm.__exit__(type(exc), exc, exc.__traceback__)
            raise
        else:
            span_cm.__exit__(None, None, None)
        finally:
            await self._close_resources()

    async def _check_input(self, state: RunState) -> None:
        guards = state.agent.input_guardrails + state.active.plugins.input_guardrails
        if guards:
            await check_input_guardrails(guards, state.run_ctx.messages, state.run_ctx)

    async def _run_starting(self, state: RunState) -> AsyncIterator[ev.Event]:
        """Interceptors see the prompt before the first model call; their context joins it."""
        interceptors = state.active.plugins.interceptors
        if not interceptors:
            return
        prompt = _latest_prompt(state.run_entries)
        first = state.run_start == state.system_head_len
        said = await gather(interceptors, "run_starting", state.run_ctx, prompt=prompt, first=first)
        if said is None:
            return
        for line in said.notices:
            yield await self._emit(state, ev.InterceptorNotice(line))
        if said.block or said.stop:
            raise InterceptorStopped(
                said.block or said.stop or "", hint="A hook refused this prompt."
            )
        if said.context:
            state.transcript.append(InputEntry(role="user", content=_reminder(said.context)))

    async def _before_stop(self, state: RunState, outcome: _Outcome) -> AsyncIterator[ev.Event]:
        """An interceptor may send the model on instead of stopping (a bounded number of
        times, so a hook that always says "go on" cannot keep a run alive)."""
        interceptors = state.active.plugins.interceptors
        if not interceptors or not outcome.done:
            return
        output = outcome.output if isinstance(outcome.output, str) else ""
        said = await gather(
            interceptors,
            "before_stop",
            state.run_ctx,
            output=output,
            again=state.stop_continued > 0,
        )
        if said is None:
            return
        for line in said.notices:
            yield await self._emit(state, ev.InterceptorNotice(line))
        if said.stop:
            raise InterceptorStopped(said.stop, hint="A hook ended the run.")
        if said.block and state.stop_continued < MAX_STOP_CONTINUATIONS:
            state.stop_continued += 1
            outcome.done, outcome.output = False, None
            state.transcript.append(InputEntry(role="user", content=said.block))

    async def _turn(self, state: RunState, outcome: _Outcome) -> AsyncIterator[ev.Event]:
        """One turn, in phase order: limits, mailbox, view, model, tools or output, handoff."""
        self._check_limits(state)
        state.turns += 1
        state.run_ctx.turn = state.turns
        yield await self._emit(state, ev.TurnStarted(state.agent, state.turns))
        if self.mailbox:
            async for event in self._drain_mailbox(state):
                yield event
        turn = ModelTurnResult()
        self._in_model_phase = True
        plan = await self._plan_view(state)
        if plan.compacted is not None:
            async for event in self._before_compact(state, plan.compacted):
                yield event
            yield await self._emit(state, plan.compacted)
        forwarded = False
        try:
            async for event in self._call_model(state, plan.view, turn):
                forwarded = True
                yield await self._emit(state, event)
        except ContextOverflowError as overflow:
            if forwarded or self._noop_policy:
                raise
            plan = await self._replan_after_overflow(state, plan, overflow)
            assert plan.compacted is not None
            async for event in self._before_compact(state, plan.compacted):
                yield event
            yield await self._emit(state, plan.compacted)
            turn.assistant = None
            turn.turn_entries = []
            async for event in self._call_model(state, plan.view, turn):
                yield await self._emit(state, event)
        assistant = turn.assistant
        if assistant is None:
            raise RuntimeError("The model turn ended without a final message")
        self._record_usage(state, assistant.usage)
        state.last_finish_reason = assistant.finish_reason
        state.transcript.extend(turn.turn_entries)
        self._in_model_phase = False
        yield await self._emit(state, ev.MessageCompleted(turn.turn_entries, assistant.usage))
        await self.checkpoints.save_running(state)
        if assistant.tool_calls:
            async for event in self._tool_phase(state, assistant.tool_calls):
                yield event
        else:
            outcome.done, outcome.output = await self._finalize_output(state, assistant.content)
            async for event in self._before_stop(state, outcome):
                yield event
        yield await self._emit(state, ev.TurnEnded(state.agent, state.turns))
        if state.pending_handoff is not None:
            async for event in self._apply_handoff(state):
                yield event
        await self.checkpoints.save_running(state)

    async def _before_compact(
        self, state: RunState, compacted: ev.ContextCompacted
    ) -> AsyncIterator[ev.Event]:
        """Interceptors hear of a compaction before the compacted view reaches the model."""
        interceptors = state.active.plugins.interceptors
        if not interceptors:
            return
        reactive = compacted.notice.reactive
        said = await gather(interceptors, "before_compact", state.run_ctx, reactive=reactive)
        for line in said.notices if said is not None else []:
            yield await self._emit(state, ev.InterceptorNotice(line))
        if said is not None and said.block:
            line = f"a PreCompact hook cannot stop an automatic compaction: {said.block}"
            yield await self._emit(state, ev.InterceptorNotice(line))

    async def _compact_now(self, state: RunState, outcome: _Outcome) -> AsyncIterator[ev.Event]:
        """``/compact``: the session's conversation compacted now, instead of a model turn.

        Interceptors hear of it first (``trigger="manual"``, and may refuse it); the policy
        then summarises with the user's focus, the usual ``ContextCompacted`` follows, and the
        new state is stored with the session as an automatic compaction's is. The run's own
        transcript stays empty; its output says what happened.
        """
        assert self.compact is not None
        outcome.done = True
        if len(state.transcript) == state.system_head_len:
            outcome.output = compact_now.EMPTY
            return
        focus = (self.compact.focus or "").strip() or None
        interceptors = state.active.plugins.interceptors
        if interceptors:
            said = await gather(
                interceptors,
                "before_compact",
                state.run_ctx,
                reactive=False,
                trigger="manual",
                focus=focus,
            )
            for line in said.notices if said is not None else []:
                yield await self._emit(state, ev.InterceptorNotice(line))
            if said is not None and (said.block or said.stop):
                raise InterceptorStopped(
                    said.block or said.stop or "",
                    hint="A PreCompact hook refused the compaction; nothing was changed.",
                )
        req = self._compaction_request(state)
        req.manual, req.focus = True, focus
        result = await self._compact(state, req)
        if not result.compacted:
            outcome.output = compact_now.not_compacted(result)
            return
        view = self._build_view(state, result)
        yield await self._emit(state, self._compaction_event(state, result, view, False, req.usage))
        outcome.output = compact_now.compacted(result)

    async def _record_failure(
        self, state: RunState, exc: BaseException, *, completed: bool
    ) -> ev.Event | None:
        """Log and checkpoint a run ending in ``exc``; the ``RunFailed`` to emit, if any."""
        if self._in_model_phase:
            state.turns -= 1
            self._in_model_phase = False
        status = CheckpointWriter.classify(exc)
        level = logging.WARNING if status == "interrupted" else logging.ERROR
        logger.log(
            level,
            "run.%s: agent=%s turns=%d %s: %s",
            "interrupted" if status == "interrupted" else "failed",
            state.agent.name,
            state.turns,
            type(exc).__name__,
            truncate_repr(str(exc)),
        )
        if not completed:
            await asyncio.shield(self.checkpoints.save_terminal(state, exc))
            if self.parent_usage is not None:
                self.parent_usage.add(state.run_ctx.usage)
        if isinstance(exc, Exception):
            return await self._emit(state, ev.RunFailed(exc))
        return None

    async def _report_setup_failure(self, exc: Exception) -> None:
        hooks = self.initial_agent.hooks
        if hooks:
            ctx = self._ctx or RunContext(
                context=self.context,
                entries=[],
                agent=self.initial_agent,
                session_id=self.session_id,
                run_id=self.run_id,
                budget=self.budget,
                cancel_token=self.cancel_token,
                mailbox=self.mailbox,
                _tracer=self._caller_tracer,
            )
            await hooks.dispatch(ev.RunFailed(exc), ctx)

    async def _close_resources(self) -> None:
        try:
            await self._exit_stack.aclose()
        except Exception:
            logger.warning("run.close_failed: a resource failed to close", exc_info=True)

    # ================================================================== set-up

    async def _resolve_resume(self) -> RunSnapshot | None:
        if self.resume_from is not None:
            return self.resume_from
        if self.checkpointer is None or self.run_id is None:
            return None
        if self.if_run_exists == "restart":
            await self.checkpointer.delete(self.run_id)
            return None
        snapshot = await self.checkpointer.load(self.run_id)
        if snapshot is None:
            if self.if_run_exists == "resume_only":
                raise UserError(
                    f"No snapshot found for run_id='{self.run_id}'",
                    hint="Check the run id, or use if_run_exists='resume' to start a fresh run.",
                )
            return None
        if self.if_run_exists == "fail":
            raise UserError(
                f"A run already exists for run_id='{self.run_id}' (status='{snapshot.status}').",
                hint="Use if_run_exists='resume' to continue it, 'restart' to start over, or a "
                "new run_id.",
            )
        return snapshot

    async def _replay_completed(self, snapshot: RunSnapshot) -> AsyncGenerator[ev.Event, None]:
        agent = reachable_agents(self.initial_agent).get(snapshot.agent_name)
        if agent is None:
            logger.warning(
                "run.replay: agent %r of completed run %s is not reachable; using %r",
                snapshot.agent_name,
                snapshot.run_id,
                self.initial_agent.name,
            )
            agent = self.initial_agent
        result = result_from_completed_snapshot(
            agent, snapshot, output_type=self.output_type_override
        )
        if self.parent_usage is not None:
            self.parent_usage.add(result.usage)
        if self.session is not None and self.session_id is not None and result.entries:
            meta = {STATE_META_KEY: snapshot.context_state} if snapshot.context_state else None
            await self.session.append(
                self.session_id, result.entries, run_id=snapshot.run_id, meta=meta
            )
        if self.checkpoints.delete_on_success:
            await self.checkpoints.delete()
        yield ev.RunStarted(agent=self.initial_agent)
        yield ev.RunCompleted(result)

    async def _bootstrap(self, snapshot: RunSnapshot | None) -> RunState:
        agent = (
            resolve_resume_agent(self.initial_agent, snapshot)
            if snapshot is not None
            else self.initial_agent
        )
        ctx: RunContext[Any] = RunContext(
            context=self.context,
            entries=[],
            agent=agent,
            session_id=self.session_id,
            run_id=self.run_id,
            budget=self.budget,
            cancel_token=self.cancel_token,
            mailbox=self.mailbox,
            _tracer=self._caller_tracer,
        )
        self._ctx = ctx
        active = await self._resolve_active(agent)
        state = RunState(run_ctx=ctx, active=active, extra_instructions=self.extra_instructions)
        state.activate(active)
        segments = (
            await self.session.segments(self.session_id)
            if self.session is not None and self.session_id is not None
            else []
        )
        history = [e for seg in segments for e in seg.entries]
        prompt = await self._system_prompt(state)
        head: list[TranscriptEntry] = [InputEntry(role="system", content=prompt)] if prompt else []
        ctx.entries.extend(head)
        ctx.entries.extend(history)
        state.system_head_len = len(head)
        state.run_start = len(ctx.entries)
        if snapshot is not None:
            ctx.entries.extend(normalize_replayed_entries(list(snapshot.entries)))
            ctx.usage.add(snapshot.usage)
            self.checkpoints.resume_at(len(snapshot.entries))
            state.turns = snapshot.turns
            state.last_input_tokens = snapshot.last_input_tokens
            state.context_state = dict(snapshot.context_state or {})
        else:
            if self.compact is not None:
                self.user_input = []  # a compaction run adds nothing to the conversation
            if isinstance(self.user_input, str):
                ctx.entries.append(InputEntry(role="user", content=self.user_input))
            else:
                ctx.entries.extend(messages_to_entries(self.user_input))
            latest = segments[-1].meta if segments else None
            carried = latest.get(STATE_META_KEY) if isinstance(latest, dict) else None
            state.context_state = dict(carried) if isinstance(carried, dict) else {}
        return state

    async def _resolve_active(self, agent: Agent[Any]) -> ActiveAgent:
        cached = self._activated.get(id(agent))
        if cached is not None:
            return cached
        provider = agent.resolve_provider()
        if isinstance(agent.model, str):
            aclose = getattr(provider, "aclose", None)
            if aclose is not None:
                self._exit_stack.push_async_callback(_quiet_close, aclose, "provider")
        await self._ensure_context_window(provider)
        output_type = (
            self.output_type_override
            if self.output_type_override is not None
            else agent.output_type
        )
        structured = resolve_structured_output(output_type, supports_json_schema(provider))
        workspace_session: Any = None
        workspace_tools: list[Tool] = []
        injectors: list[ViewInjector] = []
        if agent.workspace is not None:
            workspace_session = await agent.workspace.open()
            if getattr(agent.workspace, "close_after_run", False):
                self._exit_stack.push_async_callback(
                    _quiet_close, workspace_session.close, "workspace"
                )
            workspace_tools = list(agent.workspace.tools())
            ws_injectors = getattr(agent.workspace, "view_injectors", None)
            if callable(ws_injectors):
                injectors = list(ws_injectors())
        ctx = self._ctx
        assert ctx is not None
        ctx.agent = agent
        ctx.workspace = workspace_session
        plugins = await self._activate_plugins(agent, ctx)
        tools = self._collect_tools(agent, workspace_tools, plugins.tools, provider)
        active = ActiveAgent(
            agent=agent,
            provider=provider,
            structured_output=structured,
            tools_by_name=tools,
            workspace=workspace_session,
            plugins=plugins,
            view_injectors=plugins.view_injectors + injectors,
        )
        self._activated[id(agent)] = active
        return active

    async def _ensure_context_window(self, provider: Provider) -> None:
        policy: Any = self.context_policy
        if not hasattr(policy, "context_window") or policy.context_window is not None:
            return
        # The probe only warms the provider's own memo: the policy reads the window through
        # ``provider.context_window()`` on every turn.
        try:
            window = await discover_context_window(provider)
        except Exception:
            logger.warning("context.window_probe_failed", exc_info=True)
            return
        if window is None:
            logger.info(
                "context.window_unknown: provider=%s model=%s; proactive compaction is off "
                "(overflow recovery still works)",
                getattr(provider, "name", type(provider).__name__),
                getattr(provider, "model", None),
            )

    async def _activate_plugins(self, agent: Agent[Any], ctx: RunContext[Any]) -> PluginActivation:
        activation = PluginActivation()
        if not agent.plugins:
            return activation
        seen: set[str] = set()
        for plugin in agent.plugins:
            name = getattr(plugin, "name", None)
            if name in seen:
                raise UserError(
                    f"Duplicate plugin name '{name}' on agent '{agent.name}'.",
                    hint="Give each plugin instance a distinct name=..., or drop the duplicate.",
                )
            seen.add(str(name))
        for plugin in agent.plugins:
            inst = await _setup_plugin(plugin, ctx)
            self._exit_stack.push_async_callback(_quiet_close, inst.aclose, "plugin")
            activation.tools.extend(inst.tools)
            activation.view_injectors.extend(inst.view_injectors)
            if inst.instructions:
                activation.instructions.append(inst.instructions)
            if inst.hooks is not None:
                activation.hooks.append(inst.hooks)
            activation.input_guardrails.extend(inst.input_guardrails)
            activation.output_guardrails.extend(inst.output_guardrails)
            activation.interceptors.extend(inst.interceptors)
        return activation

    def _collect_tools(
        self,
        agent: Agent[Any],
        workspace_tools: list[Tool],
        plugin_tools: list[Tool],
        provider: Provider,
    ) -> dict[str, Tool]:
        vision = supports_vision(provider)
        tools: dict[str, Tool] = {}
        handoff_tools = [
            build_handoff_tool(h if isinstance(h, Handoff) else Handoff(target=h))
            for h in agent.handoffs
        ]
        sources: list[tuple[str, list[Tool], bool]] = [
            ("agent.tools", list(agent.tools), False),
            ("plugin", plugin_tools, True),
            ("agent.workspace", workspace_tools, True),
            ("handoff", handoff_tools, False),
        ]
        for source, items, ambient in sources:
            for t in items:
                if ambient and t.returns_images and not vision:
                    continue
                if t.name in tools:
                    raise UserError(
                        f"Tool name conflict for '{t.name}' from {source}.",
                        hint="Rename one of the tools (tool(name=...)) or remove the duplicate.",
                    )
                tools[t.name] = t
        policy_tools = getattr(self.context_policy, "tools", None)
        if callable(policy_tools):
            for t in policy_tools():
                tools.setdefault(t.name, t)
        return tools

    async def _system_prompt(self, state: RunState) -> str:
        agent = state.agent
        parts = [await agent.render_system_prompt(state.run_ctx, extra=state.extra_instructions)]
        workspace = agent.workspace
        if workspace is not None:
            instructions = getattr(workspace, "instructions", None)
            if callable(instructions):
                parts.append(instructions())
        parts.extend(state.active.plugins.instructions)
        structured = state.active.structured_output
        if structured is not None and not structured.use_native:
            parts.append(format_output_instructions(structured))
        return "\n\n".join(p for p in parts if p).strip()

    # ================================================================== turn phases

    async def _emit(self, state: RunState, event: ev.Event) -> ev.Event:
        hook_list = state.active.hook_list
        if hook_list:
            for hooks in hook_list:
                await hooks.dispatch(event, state.run_ctx)
        return event

    def _check_limits(self, state: RunState) -> None:
        if state.turns >= self.max_turns:
            raise MaxTurnsExceeded(
                f"Run exceeded max_turns={self.max_turns} without producing output",
                hint="Raise max_turns, or check whether the agent is stuck in a tool loop.",
            )
        self.cancel_token.check()
        if self.budget is not None:
            self.budget.check(state.run_ctx.usage)

    async def _drain_mailbox(self, state: RunState) -> AsyncIterator[ev.Event]:
        if not self.mailbox:
            return
        items = self.mailbox.take()
        for token, content in items:
            state.transcript.append(InputEntry(role="user", content=content))
            injected = ev.UserMessageInjected(content, state.turns, token=token)
            yield await self._emit(state, injected)
        if items:
            await self.checkpoints.save_running(state)

    async def _compact(self, state: RunState, req: CompactionRequest) -> ContextResult:
        """Run the policy; what its own model calls cost (summaries) joins the run's usage."""
        req.usage = spent = Usage()
        try:
            return await self.context_policy.compact(req)
        finally:
            if spent.total_tokens:
                state.run_ctx.usage.add(spent)

    def _build_view(self, state: RunState, result: ContextResult) -> list[TranscriptEntry]:
        if not result.changed:
            return state.transcript
        view = result.entries
        if state.system_head_len and not (
            view and isinstance(view[0], InputEntry) and view[0].role == "system"
        ):
            view = state.transcript[: state.system_head_len] + list(view)
        return view

    async def _augment_view(
        self, state: RunState, view: list[TranscriptEntry], rewritten: bool = False
    ) -> list[TranscriptEntry]:
        """The view plus this turn's injections, marked so providers can cache the view part."""
        extra = await self._injected(state)
        return ModelView(
            [*view, *extra],
            stable=len(view),
            conversation=self.session_id or self.run_id or self._conversation,
            rewritten=rewritten,
        )

    async def _injected(self, state: RunState) -> list[TranscriptEntry]:
        injectors = state.active.view_injectors
        if not injectors:
            return []
        extra: list[TranscriptEntry] = []
        for injector in injectors:
            try:
                produced: Any = injector(state.run_ctx)
                if inspect.isawaitable(produced):
                    produced = await produced
            except Exception:
                logger.warning(
                    "view_injector.error: %r failed; skipped",
                    getattr(injector, "__name__", injector),
                    exc_info=True,
                )
                continue
            if produced:
                extra.extend(produced)
        return extra

    def _compaction_event(
        self,
        state: RunState,
        result: ContextResult,
        view: list[TranscriptEntry],
        reactive: bool,
        usage: Usage | None,
    ) -> ev.ContextCompacted:
        notice = ev.CompactionNotice(
            reason=result.reason or "context_policy",
            reactive=reactive,
            summary=result.summary,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
            detail=list(result.detail),
        )
        state.context_notice = notice
        return ev.ContextCompacted(
            session_id=self.session_id,
            entries_before=list(state.transcript),
            entries_after=list(view),
            notice=notice,
            usage=usage.clone() if usage is not None and usage.total_tokens else None,
        )

    def _compaction_request(self, state: RunState) -> CompactionRequest:
        active = state.active
        return CompactionRequest(
            entries=list(state.transcript),
            provider=active.provider,
            model=getattr(active.provider, "model", None),
            tools=list(active.tools_by_name.values()),
            last_input_tokens=state.last_input_tokens,
            overflow=False,
            scratch=state.context_state,
            session_id=self.session_id,
        )

    async def _plan_view(self, state: RunState) -> _ViewPlan:
        """What the model sees this turn: the policy's view plus the per-turn injections."""
        passthrough = self._passthrough
        if self._noop_policy or (
            passthrough is not None
            and passthrough(state.active.provider, state.context_state, self.session_id)
        ):
            return _ViewPlan(await self._augment_view(state, state.transcript))
        req = self._compaction_request(state)
        result = await self._compact(state, req)
        view = self._build_view(state, result)
        event = (
            self._compaction_event(state, result, view, False, req.usage)
            if result.compacted
            else None
        )
        planned = await self._augment_view(state, view, rewritten=result.compacted)
        return _ViewPlan(planned, req, result.tokens_after, event)

    async def _replan_after_overflow(
        self, state: RunState, plan: _ViewPlan, overflow: ContextOverflowError
    ) -> _ViewPlan:
        """The reactive path: compact harder once, or re-raise when that cannot help."""
        req = plan.request if plan.request is not None else self._compaction_request(state)
        req.last_input_tokens = None
        req.overflow = True
        req.reported_window = overflow.reported_window
        result = await self._compact(state, req)
        after, failed = result.tokens_after, plan.failed_tokens
        worthwhile = result.compacted and (failed is None or after is None or after < failed * 0.95)
        if not worthwhile:
            raise overflow
        view = self._build_view(state, result)
        event = self._compaction_event(state, result, view, True, req.usage)
        return _ViewPlan(await self._augment_view(state, view, rewritten=True), req, after, event)

    def _call_model(
        self, state: RunState, view: list[TranscriptEntry], turn: ModelTurnResult
    ) -> AsyncIterator[ev.Event]:
        active = state.active
        return stream_model_turn(
            agent=state.agent,
            provider=active.provider,
            input_entries=view,
            tools_by_name=active.tools_by_name,
            structured_output=active.structured_output,
            tracer=self.tracer,
            turn=state.turns,
            result=turn,
            retry=self.retry,
            cancel_token=self.cancel_token,
            tool_schemas=active.tool_schemas,
        )

    def _record_usage(self, state: RunState, usage: Usage) -> None:
        state.run_ctx.usage.add(usage)
        if usage.input_tokens > 0:
            state.last_input_tokens = usage.input_tokens
        if self.budget is not None:
            self.budget.check(state.run_ctx.usage)

    # ================================================================== tools

    async def _tool_phase(self, state: RunState, calls: list[ToolCall]) -> AsyncIterator[ev.Event]:
        """Serial preflight in request order; ready calls run concurrently unless barriers."""
        batch = _ToolBatch()
        budget_error: BudgetExceeded | None = None
        tools = self._tools
        try:
            for index, call in enumerate(calls):
                if batch.in_flight:
                    async for event in self._drain_batch(state, batch, wait=False):
                        yield event
                outcome = PreflightResult()
                for event in await tools.preflight(call, outcome, state=state):
                    yield await self._emit(state, event)
                    if isinstance(event, ev.ToolCallCompleted):
                        await self.checkpoints.save_running(state)
                if outcome.needs_approval:
                    async for event in tools.ask_approval(call, outcome, state=state):
                        yield await self._emit(state, event)
                        if isinstance(event, ev.ToolCallCompleted):
                            await self.checkpoints.save_running(state)
                if outcome.budget_error is not None:
                    budget_error = outcome.budget_error
                    break
                if not outcome.ready:
                    continue
                assert outcome.tool is not None and outcome.args is not None
                tool = outcome.tool
                last = index == len(calls) - 1
                if tool._handoff or not tool.parallel or (last and not batch.in_flight):
                    if batch.in_flight:
                        async for event in self._drain_batch(state, batch, wait=True):
                            yield event
                    async for event in tools.execute(
                        call,
                        tool,
                        outcome.args,
                        state=state,
                        tracer=self.tracer,
                        approval=outcome.approval,
                    ):
                        yield await self._emit(state, event)
                        if isinstance(event, ev.ToolCallCompleted):
                            await self.checkpoints.save_running(state)
                            self.cancel_token.check()
                else:
                    agen = tools.execute(
                        call,
                        tool,
                        outcome.args,
                        state=state,
                        tracer=self.tracer,
                        approval=outcome.approval,
                    )
                    batch.tasks.append(asyncio.create_task(_pump(agen, batch.queue)))
                    batch.in_flight += 1
            if batch.in_flight:
                async for event in self._drain_batch(state, batch, wait=True):
                    yield event
            if budget_error is not None:
                raise budget_error
        finally:
            if batch.tasks:
                for task in batch.tasks:
                    if not task.done():
                        task.cancel()
                results = await asyncio.gather(*batch.tasks, return_exceptions=True)
                for r in results:
                    if isinstance(r, Exception):
                        logger.debug("tool.sibling_failed: %r", r)

    async def _drain_batch(
        self, state: RunState, batch: _ToolBatch, *, wait: bool
    ) -> AsyncIterator[ev.Event]:
        while batch.in_flight > 0:
            if wait:
                item = await batch.queue.get()
            else:
                try:
                    item = batch.queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
            if isinstance(item, _PumpEnded):
                batch.in_flight -= 1
                if item.error is not None:
                    raise item.error
                continue
            yield await self._emit(state, item)
            if isinstance(item, ev.ToolCallCompleted):
                await self.checkpoints.save_running(state)
                self.cancel_token.check()

    async def _drain_pending_calls(self, state: RunState) -> AsyncIterator[ev.Event]:
        calls = pending_tool_calls(state.run_entries)
        state.pending_handoff = unapplied_handoff(state.agent, state.run_entries)
        if not calls and state.pending_handoff is None:
            return
        if calls:
            state.run_ctx.turn = state.turns
            yield await self._emit(state, ev.TurnStarted(state.agent, state.turns))
            async for event in self._tool_phase(state, calls):
                yield event
            yield await self._emit(state, ev.TurnEnded(state.agent, state.turns))
        if state.pending_handoff is not None:
            async for event in self._apply_handoff(state):
                yield event
        await self.checkpoints.save_running(state)

    async def _finish_replayed_answer(self, state: RunState) -> tuple[bool, Any]:
        """A resumed run whose last turn already answered finishes without a new model call."""
        entries = state.run_entries
        if not entries or not isinstance(entries[-1], AssistantTextEntry):
            return False, None
        last_text: list[str] = []
        for e in reversed(entries):
            if isinstance(e, AssistantTextEntry):
                last_text.append(e.content)
            elif isinstance(e, ToolCallEntry):
                return False, None
            else:
                break
        return await self._finalize_output(state, "".join(reversed(last_text)))

    # ================================================================== output & handoff

    async def _finalize_output(self, state: RunState, content: str | None) -> tuple[bool, Any]:
        spec = state.active.structured_output
        if spec is None:
            if not content:
                logger.warning(
                    "run.empty_output: agent=%s turn=%d replied with no text",
                    state.agent.name,
                    state.turns,
                )
            return True, content or ""
        try:
            try:
                payload = loads_lenient(content or "")
            except OutputValidationError as exc:
                exc.output_type_name = spec.type_name
                raise
            return True, parse_structured_output(spec, payload)
        except OutputValidationError as exc:
            attempt = state.output_repair_attempts + 1
            policy = state.agent.output_repair
            if policy is False:
                raise
            strategy = DefaultOutputRepair() if policy is True else policy
            prompt = strategy.build_prompt(exc, attempt)
            if prompt is None:
                raise
            state.output_repair_attempts = attempt
            state.transcript.append(InputEntry(role="user", content=prompt))
            return False, None

    async def _apply_handoff(self, state: RunState) -> AsyncIterator[ev.Event]:
        signal = state.pending_handoff
        assert signal is not None
        state.pending_handoff = None
        previous = state.agent
        target = signal.handoff.target
        with handoff_span(self.tracer, from_agent=previous.name, to_agent=target.name):
            active = await self._resolve_active(target)
            state.activate(active)
            prompt = await self._system_prompt(state)
            head: list[TranscriptEntry] = (
                [InputEntry(role="system", content=prompt)] if prompt else []
            )
            state.transcript[: state.system_head_len] = head
            state.run_start += len(head) - state.system_head_len
            state.system_head_len = len(head)
        event = ev.HandoffOccurred(from_agent=previous, to_agent=target)
        if previous.hooks is not None and previous.hooks is not target.hooks:
            await previous.hooks.dispatch(event, state.run_ctx)
        yield await self._emit(state, event)

    async def _finalize_run(self, state: RunState, output: Any, span: Any) -> RunResult:
        guards = state.agent.output_guardrails + state.active.plugins.output_guardrails
        if guards and self.compact is None:
            await check_output_guardrails(guards, output, state.run_ctx)
        usage = state.run_ctx.usage
        result = RunResult(
            output=output,
            entries=list(state.run_entries),
            final_agent=state.agent,
            usage=usage,
            turns=state.turns,
            finish_reason=state.last_finish_reason,
            last_input_tokens=state.last_input_tokens,
        )
        if self.parent_usage is not None:
            self.parent_usage.add(usage)
        record_run_end(span, turns=state.turns, total_tokens=usage.total_tokens)
        return result

    async def _append_session(self, state: RunState) -> None:
        if self.session is None or self.session_id is None:
            return
        entries = list(state.run_entries)
        # a compaction run has no entries of its own: its segment carries the new state
        if not entries and not (self.compact is not None and state.context_state):
            return
        meta: dict[str, Any] = {}
        if state.context_state:
            meta[STATE_META_KEY] = to_json_safe(state.context_state)
        if state.context_notice is not None:
            meta[NOTICE_META_KEY] = asdict(state.context_notice)
        await self.session.append(self.session_id, entries, run_id=self.run_id, meta=meta or None)


async def _setup_plugin(plugin: Plugin, ctx: RunContext[Any]) -> PluginInstance:
    """Call ``setup(ctx)`` when the plugin's setup takes a parameter, else ``setup()``."""
    setup: Callable[..., Awaitable[PluginInstance]] = plugin.setup
    try:
        params = [
            p
            for p in inspect.signature(setup).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]
    except (TypeError, ValueError):
        params = []
    if params:
        return await setup(ctx)
    return await setup()


async def _quiet_close(close: Callable[[], Any], what: str) -> None:
    try:
        result = close()
        if inspect.isawaitable(result):
            await result
    except Exception:
        logger.debug("close.failed: %s", what, exc_info=True)


__all__ = [
    "RunLoop",
    "_PumpEnded",
    "_ToolBatch",
    "_pump",
    "pending_tool_calls",
]
