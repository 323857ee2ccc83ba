"""What a run leaves behind when it stops early, and how the next process or prompt takes it.

A server that dies mid-run leaves runs marked running: at start-up each is closed as
interrupted (resumable when its checkpoint or prompt allows) or, when its last leg already
reached the session, as completed. A cancelled or failed leg keeps its completed turns in the
session; a new prompt closes the session's interrupted runs the same way.
"""

from __future__ import annotations

from typing import Any

from lovia.checkpointer import Checkpointer
from lovia.messages import Usage
from lovia.session import Session
from lovia.transcript import drop_dangling_tool_calls
from lovia_server import protocol as p
from lovia_server.host.event_log import EventLog, Publisher
from lovia_server.host.payloads import output_payload, usage_payload
from lovia_server.host.run_controller import quiet
from lovia_server.host.store import RunRecord, ServerStore
from lovia_server.protocol import ApprovalResolved, RunFinished, ToolResult


class RunRecovery:
    """Closes and keeps what stopped runs left in the store, session and checkpoints."""

    def __init__(
        self,
        *,
        store: ServerStore,
        sessions: Session,
        checkpointer: Checkpointer,
        publisher: Publisher,
    ) -> None:
        self.store = store
        self.sessions = sessions
        self.checkpointer = checkpointer
        self.publisher = publisher

    async def recover(self) -> list[str]:
        """Mark runs a previous process left running as interrupted; close their event logs."""
        recovered = []
        for record in await self.store.runs_with_status("running"):
            snapshot = await self.checkpointer.load(record.checkpoint_id)
            if await self.leg_in_session(record):
                # The process died after the run's last leg reached the session: it finished.
                await self._recover_finished(record, snapshot)
                continue
            # A checkpoint marked completed whose entries never reached the session is
            # resumable too: resuming it appends them (the session ignores a repeated segment).
            resumable = snapshot is not None or await self.restartable(record)
            log = EventLog(
                record.id,
                record.session_id,
                self.publisher,
                last_seq=await self.store.last_seq(record.id),
                coalesce=False,
            )
            open_calls, open_approvals = await self._open_items(record.id)
            for approval_id in open_approvals:
                log.emit(
                    ApprovalResolved(approval_id=approval_id, outcome="cancelled", by="policy")
                )
            for call_id in open_calls:
                log.emit(ToolResult.cancelled(call_id, "The server stopped."))
            error = p.RunError(
                type="ServerRestarted", message="The server stopped during this run."
            )
            usage = record.usage or usage_payload(
                snapshot.usage if snapshot else Usage(),
                context_tokens=None,
                context_window=None,
            )
            log.emit(
                RunFinished(status="interrupted", error=error, usage=usage, resumable=resumable)
            )
            await log.close()
            await self.store.finish_run(
                record.id,
                status="interrupted",
                error=error.message,
                usage=record.usage,
                resumable=resumable,
            )
            recovered.append(record.id)
        return recovered

    async def leg_in_session(self, record: RunRecord) -> bool:
        segments = await self.sessions.segments(record.session_id)
        return any(seg.run_id == record.checkpoint_id for seg in segments)

    async def _recover_finished(self, record: RunRecord, snapshot: Any) -> None:
        """Close the log of a run that ended just before its process died, as completed."""
        log = EventLog(
            record.id,
            record.session_id,
            self.publisher,
            last_seq=await self.store.last_seq(record.id),
            coalesce=False,
        )
        usage = record.usage or usage_payload(
            snapshot.usage if snapshot else Usage(), context_tokens=None, context_window=None
        )
        output = output_payload(snapshot.output) if snapshot is not None else None
        log.emit(RunFinished(status="completed", usage=usage, resumable=False, output=output))
        await log.close()
        await quiet(self.checkpointer.delete(record.checkpoint_id))
        await self.store.finish_run(
            record.id, status="completed", error=None, usage=usage, resumable=False
        )

    async def _open_items(self, run_id: str) -> tuple[list[str], list[str]]:
        """Tool calls without a result and approvals without a resolution in the last attempt."""
        calls: dict[str, None] = {}
        approvals: dict[str, None] = {}
        for event in await self.store.typed_events_after(run_id, 0):
            if isinstance(event, p.RunStartedEvent):
                calls.clear()
                approvals.clear()
            elif isinstance(event, p.ToolCallEvent):
                calls[event.tool_call_id] = None
            elif isinstance(event, p.ToolResultEvent):
                calls.pop(event.tool_call_id, None)
            elif isinstance(event, p.ApprovalRequestedEvent):
                approvals[event.approval_id] = None
            elif isinstance(event, p.ApprovalResolvedEvent):
                approvals.pop(event.approval_id, None)
        return list(calls), list(approvals)

    async def restartable(self, record: RunRecord) -> bool:
        """A first leg with a prompt whose checkpoint never got written and whose entries are
        not in the session: nothing of it was kept, so it can start again from the prompt."""
        if record.leg != 0 or not record.prompt:
            return False
        return not await self.leg_in_session(record)

    async def keep_completed_turns(self, session_id: str, checkpoint: str) -> None:
        """Move a stopped leg's completed turns from its checkpoint into the session."""
        snapshot = await quiet(self.checkpointer.load(checkpoint))
        if snapshot is None:
            return
        entries = drop_dangling_tool_calls(snapshot.entries)
        if entries:
            await quiet(self.sessions.append(session_id, entries, run_id=checkpoint))
        await quiet(self.checkpointer.delete(checkpoint))

    async def supersede_interrupted(self, session_id: str) -> None:
        """A new prompt closes the session's interrupted runs: their completed turns stay in the
        conversation (before the new run), and they are no longer resumable."""
        for record in await self.store.runs_for_session(session_id):
            if record.resumable:
                await self.keep_completed_turns(session_id, record.checkpoint_id)
                await self.store.finish_run(
                    record.id,
                    status=record.status,
                    error=record.error,
                    usage=record.usage,
                    resumable=False,
                )
                for child in await self.store.children_of([record.id]):
                    if child.resumable:
                        await self.supersede_interrupted(child.session_id)


__all__ = ["RunRecovery"]
