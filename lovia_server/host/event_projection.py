"""The event projection: lovia run events become protocol events, with their side effects.

Besides translating (deltas, messages, tool calls and results, handoffs, compactions), a few
events imply something for the run: the turn's restore point before the first call that may
write, an edit's preview diff, a delivered steer keeping the id the client was given, a todo
list, usage. The projection also remembers the tools it saw per agent, so stored transcripts
are titled as the live stream was.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lovia import events
from lovia.messages import Usage
from lovia.plugins.todo import TodoItem
from lovia.tools.base import Tool
from lovia.tools.presentation import can_preview
from lovia.transcript import AssistantTextEntry, ToolCallEntry
from lovia_server import protocol as p
from lovia_server.host.agent_factory import context_window_of
from lovia_server.host.approval_broker import ApprovalBroker
from lovia_server.host.payloads import (
    parse_arguments,
    todo_items,
    tool_kind,
    tool_locations,
    tool_source,
    tool_title,
)
from lovia_server.host.ports import EditorPort, RestorePort, WorkspacePort
from lovia_server.host.run_controller import (
    CallInfo,
    RunController,
    RunTable,
    quiet,
    report_progress,
)
from lovia_server.protocol import (
    Compaction,
    DiffContent,
    FileDiff,
    Handoff,
    MessageCompleted,
    MessageDelta,
    OutputDiscarded,
    ReasoningDelta,
    TextContent,
    TodoUpdated,
    ToolCallStarted,
    ToolContent,
    ToolResult,
    ToolStatus,
    ToolStream,
    ToolUpdate,
    UsageUpdated,
    UserMessage,
    as_tool_kind,
)

logger = logging.getLogger("lovia_server.host.supervisor")


def _stages(reason: str) -> str:
    """A compaction's reason without its trigger (``reactive_``, ``manual_``)."""
    for prefix in ("reactive_", "manual_"):
        reason = reason.removeprefix(prefix)
    return reason


class EventProjection:
    """Translates one run's lovia events into its event log (one instance for all runs)."""

    def __init__(
        self,
        *,
        runs: RunTable,
        editor: EditorPort,
        workspace: WorkspacePort,
        restore: RestorePort | None,
        approvals: ApprovalBroker,
    ) -> None:
        self.runs = runs
        self.editor = editor
        self.workspace = workspace
        self.restore = restore
        self.approvals = approvals
        # Tools seen in this process by agent label: how stored transcripts are presented.
        self.tools_seen: dict[str, dict[str, Tool]] = {}

    async def on_event(self, ctl: RunController, ev: events.Event) -> None:
        """Show one lovia event in the run's stream, with what it implies (see the module)."""
        log = ctl.log
        if isinstance(ev, events.TextDelta):
            ctl.stream.message_has_text = True
            log.delta(MessageDelta, ctl.stream.message_id, ev.delta)
            if log.needs_turn():
                await asyncio.sleep(0)
        elif isinstance(ev, events.ReasoningDelta):
            log.delta(ReasoningDelta, ctl.stream.message_id, ev.delta)
            if log.needs_turn():
                await asyncio.sleep(0)
        elif isinstance(ev, events.TurnStarted):
            ctl.stream.turns = ev.turn
            ctl.stream.awaiting_model = True
        elif isinstance(ev, events.OutputDiscarded):
            log.emit(OutputDiscarded(message_id=ctl.stream.message_id))
        elif isinstance(ev, events.MessageCompleted):
            ctl.stream.awaiting_model = False
            self._message_completed(ctl, ev)
            if ctl.gate is not None and any(isinstance(e, ToolCallEntry) for e in ev.entries):
                await asyncio.shield(ctl.gate)  # no tool runs before its worktree is there
            await self._checkpoint_before_batch(ctl, ev)
        elif isinstance(ev, events.UserMessageInjected):
            self._steer_delivered(ctl, ev)
        elif isinstance(ev, events.ToolCallStarted):
            if ctl.gate is not None:
                await asyncio.shield(ctl.gate)
            known = ctl.stream.calls.get(ev.call.id)
            await self.checkpoint(ctl, [ev.tool or (known.tool if known else None)])
            info = self.announce(ctl, ev.call.id, ev.call.name, ev.call.arguments, ev.tool)
            report_progress(
                self.editor, "report", ctl.run_id, tool_title(info.tool, info.name, info.args)
            )
            if info.diff is None and can_preview(info.tool):
                info.diff = await self.preview(ctl, info)
        elif isinstance(ev, events.ApprovalRequired):
            await self.approvals.ask(ctl, ev, self)
        elif isinstance(ev, events.ToolCallCompleted):
            await self._tool_completed(ctl, ev)
        elif isinstance(ev, events.HandoffOccurred):
            log.emit(
                Handoff(
                    from_agent=ev.from_agent.name,
                    to_agent=ev.to_agent.name,
                    reason=ctl.stream.last_handoff_reason,
                )
            )
        elif isinstance(ev, events.InterceptorNotice):
            # a user hook that failed or timed out: the server log and the editor's progress
            logger.warning("run %s: %s", ctl.run_id, ev.message)
            report_progress(self.editor, "report", ctl.run_id, ev.message)
            if ev.call is not None and ev.call.id in ctl.stream.calls:  # shown with its call
                log.delta(ToolUpdate, ev.call.id, f"[hook] {ev.message}\n", _stream("stderr"))
        elif isinstance(ev, events.ContextCompacted):
            notice = ev.notice
            log.emit(
                Compaction(
                    tokens_before=notice.tokens_before,
                    tokens_after=notice.tokens_after,
                    stages=[s for s in _stages(notice.reason).split("+") if s],
                    reactive=notice.reactive,
                    detail=list(notice.detail),
                )
            )
            if ev.usage is not None:  # the summary calls are paid for too
                self._add_usage(ctl, ev.usage, context=False)

    def say(self, ctl: RunController, text: str) -> None:
        """A reply of lovia's own (not the model's) as the run's message."""
        ctl.log.delta(MessageDelta, ctl.stream.message_id, text)
        ctl.log.emit(MessageCompleted(message_id=ctl.stream.message_id, text=text))
        ctl.stream.new_message()

    def _message_completed(self, ctl: RunController, ev: events.MessageCompleted) -> None:
        text = "".join(e.content for e in ev.entries if isinstance(e, AssistantTextEntry))
        if text or ctl.stream.message_has_text:
            ctl.log.emit(MessageCompleted(message_id=ctl.stream.message_id, text=text))
        if ev.usage is not None:
            self._add_usage(ctl, ev.usage, context=True)
        ctl.stream.new_message()

    def _add_usage(self, ctl: RunController, usage: Usage, *, context: bool) -> None:
        """Count a model call into the run's usage; ``context``: its input is the context's
        size (a turn's call, not a compaction's summary call)."""
        ctl.stream.usage.add(usage)
        if context and usage.input_tokens > 0:
            ctl.stream.context_tokens = usage.input_tokens
        if ctl.spec.context_window is None and not ctl.stream.window_asked:
            # A custom endpoint's window is known once the run's first call asked it.
            ctl.stream.window_asked = True
            ctl.spec.context_window = context_window_of(ctl.spec.agent)
        ctl.log.emit(UsageUpdated.of(ctl.usage(turn=usage)))

    async def checkpoint(self, ctl: RunController, tools: list[Tool | None]) -> None:
        """The turn's restore point, before the first of its calls that may change files.
        A subagent's run takes none: its parent's turn took one before spawning it."""
        if self.restore is None or ctl.stream.checkpointed or ctl.link is not None:
            return
        try:
            created = await self.restore.before_write(ctl.turn, tools)
        except Exception:
            logger.warning("restore_point.failed: %s", ctl.run_id, exc_info=True)
            return
        if created is not None:
            ctl.stream.checkpointed = True
            ctl.log.emit(created)

    async def _checkpoint_before_batch(
        self, ctl: RunController, ev: events.MessageCompleted
    ) -> None:
        """Calls of one message may run concurrently, each starting before its ``tool.call``
        reaches us: take the point now when a parallel (or not yet seen) tool may write."""
        names = [e.name for e in ev.entries if isinstance(e, ToolCallEntry)]
        if (
            len(names) < 2
            or ctl.stream.checkpointed
            or self.restore is None
            or ctl.link is not None
        ):
            return  # a lone call runs by itself, after its announcement
        known = {**_declared_tools(ctl.spec.agent), **self.tools_seen.get(ctl.spec.agent_label, {})}
        tools = [known.get(name) for name in names]
        concurrent = [t for t in tools if t is None or t.parallel]
        if concurrent:
            await self.checkpoint(ctl, concurrent)

    def _steer_delivered(self, ctl: RunController, ev: events.UserMessageInjected) -> None:
        text = ev.content if isinstance(ev.content, str) else str(ev.content)
        message_id = ctl.steering.delivered(ev.token)
        ctl.log.emit(UserMessage(message_id=message_id, text=text, source="steer"))

    def announce(
        self, ctl: RunController, call_id: str, name: str, arguments: str, tool: Tool | None
    ) -> CallInfo:
        info = ctl.stream.calls.get(call_id)
        if info is None:
            info = ctl.stream.calls[call_id] = CallInfo(name, parse_arguments(arguments))
        if info.tool is None and tool is not None:
            info.tool = tool
            self.tools_seen.setdefault(ctl.spec.agent_label, {})[name] = tool
        if not info.announced:
            info.announced = True
            ctl.log.emit(
                ToolCallStarted(
                    tool_call_id=call_id,
                    name=name,
                    tool_kind=as_tool_kind(tool_kind(info.tool)),
                    title=tool_title(info.tool, name, info.args),
                    input=info.args,
                    locations=[
                        p.Location.model_validate(loc)
                        for loc in tool_locations(info.tool, info.args, ctl.spec.root)
                    ],
                    server=tool_source(info.tool),
                )
            )
        return info

    async def preview(self, ctl: RunController, info: CallInfo) -> list[FileDiff]:
        try:
            return await self.workspace.preview(ctl.spec, info.tool, info.args)
        except Exception:
            logger.debug("preview.failed", exc_info=True)
            return []

    async def _tool_completed(self, ctl: RunController, ev: events.ToolCallCompleted) -> None:
        info = self.announce(ctl, ev.call.id, ev.call.name, ev.call.arguments, ev.tool)
        if info.result_sent:
            return
        info.result_sent = True
        # A result object that reports an error itself (an MCP tool's isError) shows as failed.
        is_error = ev.is_error or getattr(ev.result, "is_error", False) is True
        status: ToolStatus
        if info.declined or (ev.is_error and self.workspace.declined(ev.call.id)):
            status = "declined"
        elif is_error:
            status = "failed"
        else:
            status = "completed"
        content: list[ToolContent] = [TextContent(text=ev.output)]
        diffs = info.diff if status == "completed" and info.diff else []
        for diff in diffs:
            new_text = await quiet(self.workspace.read_back(ctl.spec, diff.path))
            if new_text is not None:
                diff = diff.model_copy(update={"new_text": new_text})
            content.append(DiffContent.of(diff))
        ctl.log.emit(
            ToolResult(tool_call_id=ev.call.id, status=status, content=content, is_error=is_error)
        )
        if info.tool is not None and info.tool.is_handoff and not ev.is_error:
            reason = info.args.get("reason")
            ctl.stream.last_handoff_reason = reason if isinstance(reason, str) else None
        if not ev.is_error and _is_todo_update(info.tool, ev.result):
            ctl.log.emit(TodoUpdated(items=todo_items(ev.result)))
            done = sum(1 for i in ev.result if getattr(i, "status", "") == "completed")
            report_progress(
                self.editor, "report", ctl.run_id, f"{done}/{len(ev.result)} todos done"
            )

    # ================================================================== shell output

    def tool_output(self, session_id: str, call_id: str | None, stream: str, text: str) -> None:
        ctl = self.runs.of_session(session_id)
        if ctl is None or not call_id:
            return
        # Subagents share their parent's workspace session: the call says whose output it is.
        owner = ctl if call_id in ctl.stream.calls else self._call_owner(ctl, call_id)
        owner.log.delta(ToolUpdate, call_id, text, _stream(stream))

    def _call_owner(self, ctl: RunController, call_id: str) -> RunController:
        pending = self.runs.children_of(ctl.run_id)
        while pending:
            child = pending.pop()
            if call_id in child.stream.calls:
                return child
            pending.extend(self.runs.children_of(child.run_id))
        return ctl


def _is_todo_update(tool: Tool | None, result: Any) -> bool:
    """A ``think`` call that returned the Todo plugin's items (its ``todo_write``)."""
    return (
        tool_kind(tool) == "think"
        and isinstance(result, list)
        and all(isinstance(item, TodoItem) for item in result)
    )


def _declared_tools(agent: Any) -> dict[str, Tool]:
    """The tools an agent declares up front (its own and its workspace's; plugins add theirs
    only when a run sets them up)."""
    tools: dict[str, Tool] = {t.name: t for t in getattr(agent, "tools", ())}
    workspace_tools = getattr(getattr(agent, "workspace", None), "tools", None)
    if callable(workspace_tools):
        try:
            tools.update({t.name: t for t in workspace_tools()})
        except Exception:
            logger.debug("workspace.tools_failed", exc_info=True)
    return tools


def _stream(name: str) -> ToolStream:
    """The workspace's output stream name (anything but ``stderr`` is stdout)."""
    return "stderr" if name == "stderr" else "stdout"


__all__ = ["EventProjection"]
