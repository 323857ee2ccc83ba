"""Session queries: what the front doors show of sessions and runs, stored and live.

Listing and viewing sessions (the transcript as render-ready messages, with the entries of
runs still live or resumable), replaying a run's events, the live runs and session rules, and
the two edits of stored conversations: deleting a session and cutting it back to a turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from lovia.checkpointer import Checkpointer
from lovia.parts import text_of
from lovia.plugins.todo import todos_from_entries
from lovia.session import Session
from lovia.tools.base import Tool
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
)
from lovia_server import protocol as p
from lovia_server.host.approval_broker import ApprovalBroker
from lovia_server.host.event_log import Publisher
from lovia_server.host.payloads import parse_arguments, todo_items, tool_kind, tool_title
from lovia_server.host.ports import RunTurn
from lovia_server.host.run_controller import RunController, RunTable, quiet
from lovia_server.host.store import RunRecord, ServerStore, checkpoint_id
from lovia_server.protocol import as_run_status, as_tool_kind


class SessionQueries:
    """Reads the store and the live runs; the only writes are the two conversation edits."""

    def __init__(
        self,
        *,
        store: ServerStore,
        sessions: Session,
        checkpointer: Checkpointer,
        publisher: Publisher,
        runs: RunTable,
        approvals: ApprovalBroker,
        tools_seen: Mapping[str, Mapping[str, Tool]],
    ) -> None:
        self.store = store
        self.sessions = sessions
        self.checkpointer = checkpointer
        self.publisher = publisher
        self.runs = runs
        self.approvals = approvals
        # the event projection's tools by agent label: stored calls are titled as live ones
        self.tools_seen = tools_seen

    async def replay(self, run_id: str, after_seq: int) -> p.ReplayResult:
        record = await self.known_run(run_id)
        ctl = self.runs.get(run_id)
        if ctl is not None:
            ctl.log.flush_deltas()
            await self.publisher.drain()
        stored = await self.store.typed_events_after(run_id, after_seq)
        last = stored[-1].seq if stored else max(after_seq, await self.store.last_seq(run_id))
        status = ctl.status if ctl is not None else as_run_status(record.status)
        return p.ReplayResult(events=stored, last_seq=last, status=status)

    async def list_sessions(
        self, *, limit: int, offset: int, query: str | None
    ) -> p.SessionsResult:
        rows = await self.store.list_sessions(limit=limit, offset=offset, query=query)
        out = []
        for row in rows:
            live = self.runs.of_session(row["id"])
            last_status = row["last_run_status"]
            runs = [r.id for r in await self.store.runs_for_session(row["id"])]
            out.append(
                p.SessionSummary(
                    session_id=row["id"],
                    title=row["title"],
                    updated_at=int(row["updated_at"] * 1000),
                    last_run_id=live.run_id if live else row["last_run_id"],
                    last_run_status=live.status
                    if live
                    else (as_run_status(last_status) if last_status is not None else None),
                    resumable=bool(row["last_resumable"]) and live is None,
                    children=await self._children_view(runs),
                )
            )
        return p.SessionsResult(sessions=out)

    async def _children_view(self, run_ids: list[str]) -> list[p.ChildRun]:
        """The subagents of these runs, and theirs, with live statuses."""
        out: list[p.ChildRun] = []
        frontier = run_ids
        while frontier:
            records = await self.store.children_of(frontier)
            for record in records:
                live = self.runs.get(record.id)
                out.append(
                    p.ChildRun(
                        run_id=record.id,
                        session_id=record.session_id,
                        parent_run_id=record.parent_run_id or "",
                        task_id=record.task_id or "",
                        name=record.agent or "",
                        status=live.status if live else as_run_status(record.status),
                        resumable=record.resumable and live is None,
                    )
                )
            frontier = [r.id for r in records]
        return out

    async def session_view(self, session_id: str) -> p.SessionResult:
        row = await self.store.get_session(session_id)
        if row is None:
            raise p.ProtocolError(
                p.RUN_NOT_FOUND, f"Unknown session {session_id}", {"sessionId": session_id}
            )
        entries = list(await self.sessions.load(session_id))
        runs = await self.store.runs_for_session(session_id)
        for record in runs:
            live = self.runs.get(record.id)
            if record.resumable or live is not None:
                key = live.checkpoint_id if live is not None else record.checkpoint_id
                snapshot = await self.checkpointer.load(key)
                if snapshot is not None:
                    entries.extend(snapshot.entries)
        return p.SessionResult(
            session_id=session_id,
            title=row["title"],
            entries=project_entries(entries, self.tools_seen.get(row["agent"] or "", {})),
            todos=todo_items(todos_from_entries(entries)),
            runs=[r.to_wire() for r in runs],
            children=await self._children_view([r.id for r in runs]),
            parent_session_id=row.get("parent_id"),
        )

    async def delete_session(self, session_id: str) -> p.DeleteSessionResult:
        self.runs.check_session_free(session_id)
        if await self.store.get_session(session_id) is None:
            return p.DeleteSessionResult(deleted=False)
        runs = [r.id for r in await self.store.runs_for_session(session_id)]
        children = await self._children_view(runs)
        for child in children:
            self.runs.check_session_free(child.session_id)
        for sid in [session_id, *dict.fromkeys(c.session_id for c in children)]:
            for run_id, leg in await self.store.delete_session(sid):
                await quiet(self.checkpointer.delete(checkpoint_id(run_id, leg)))
            await self.sessions.clear(sid)
            self.approvals.forget_session(sid)
        return p.DeleteSessionResult(deleted=True)

    async def cut_conversation(
        self, session_id: str, turn_index: int
    ) -> tuple[list[str], str | None]:
        """Cut the session back to before its ``turn_index``-th run (like an edit-and-resend):
        those runs, their events and checkpoints go, and the transcript is rewound. Returns
        the removed run ids and the first removed run's prompt."""
        self.runs.check_session_free(session_id)
        runs = await self.store.runs_for_session(session_id)
        cut = runs[turn_index:]
        if not cut:
            return [], None
        keys = {checkpoint_id(r.id, leg) for r in cut for leg in range(r.leg + 1)}
        keep = 0
        for segment in await self.sessions.segments(session_id):
            if segment.run_id in keys:
                break
            keep += len(segment.entries)
        rewind = getattr(self.sessions, "rewind", None)
        if rewind is None:
            raise p.ProtocolError(
                p.INVALID_PARAMS,
                "This session store cannot cut a conversation",
                {"field": "conversation"},
            )
        await rewind(session_id, keep_entries=keep)
        for key in keys:
            await quiet(self.checkpointer.delete(key))
        await self.store.delete_runs([r.id for r in cut])
        await self.store.touch_session(session_id)
        return [r.id for r in cut], cut[0].prompt

    def live_runs(self) -> list[p.LiveRun]:
        return [_live_view(c) for c in self.runs.all()]

    def live_run(self, session_id: str) -> p.LiveRun | None:
        """The session's live run, if it has one."""
        ctl = self.runs.of_session(session_id)
        return _live_view(ctl) if ctl is not None else None

    def live_turns(self) -> list[RunTurn]:
        """Every live run as a turn of its conversation (where it works)."""
        return [c.turn for c in self.runs.all()]

    async def known_run(self, run_id: str) -> RunRecord:
        record = await self.store.get_run(run_id)
        if record is None:
            raise p.ProtocolError(p.RUN_NOT_FOUND, f"Unknown run {run_id}", {"runId": run_id})
        return record


@dataclass
class _AssistantDraft:
    """One assistant message while its entries are collected."""

    content: str = ""
    reasoning: str = ""
    tool_calls: list[p.TranscriptToolCall] = field(default_factory=list)


def project_entries(
    entries: list[TranscriptEntry], tools: Mapping[str, Tool] | None = None
) -> list[p.TranscriptMessage]:
    """Transcript entries as render-ready messages (system entries are never shown); tool calls
    are titled by ``tools`` (name -> Tool), defaults for names it lacks."""
    tools = tools or {}
    out: list[p.TranscriptMessage] = []
    pending: _AssistantDraft | None = None
    errors = {e.call_id for e in entries if isinstance(e, ToolResultEntry) and e.is_error}

    def flush() -> None:
        nonlocal pending
        if pending is not None:
            out.append(
                p.AssistantEntry(
                    content=pending.content,
                    reasoning=pending.reasoning,
                    tool_calls=pending.tool_calls,
                )
            )
            pending = None

    for entry in entries:
        if isinstance(entry, InputEntry):
            flush()
            if entry.role == "system":
                continue
            content = entry.content if isinstance(entry.content, str) else text_of(entry.content)
            out.append(p.UserEntry(content=content))
        elif isinstance(entry, ReasoningEntry | AssistantTextEntry | ToolCallEntry):
            if pending is None:
                pending = _AssistantDraft()
            if isinstance(entry, ReasoningEntry):
                pending.reasoning += entry.content
            elif isinstance(entry, AssistantTextEntry):
                pending.content += entry.content
            else:
                args = parse_arguments(entry.arguments)
                tool = tools.get(entry.name)
                pending.tool_calls.append(
                    p.TranscriptToolCall(
                        id=entry.call_id,
                        name=entry.name,
                        input=args,
                        title=tool_title(tool, entry.name, args),
                        tool_kind=as_tool_kind(tool_kind(tool)),
                    )
                )
        elif isinstance(entry, ToolResultEntry):
            flush()
            out.append(
                p.ToolEntry(
                    tool_call_id=entry.call_id,
                    content=entry.output,
                    is_error=entry.call_id in errors,
                )
            )
    flush()
    return out


def _live_view(c: RunController) -> p.LiveRun:
    return p.LiveRun(
        run_id=c.run_id,
        session_id=c.session_id,
        status=c.status,
        turns=c.stream.turns,
        agent=c.spec.agent_label,
        model=c.spec.model_label,
        started_at=int(c.started_at * 1000),
        parent_run_id=c.parent_run_id,
        task_id=c.link.task_id if c.link is not None else None,
    )


__all__ = ["SessionQueries", "project_entries"]
