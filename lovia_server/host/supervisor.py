"""RunSupervisor: the live runs of one process, behind the requests both front doors make.

Each run is an asyncio task that drives ``Runner.stream``; this module is its lifecycle
(start, resume, steer, cancel, finish, shutdown) and the facade over the other parts, each in
its own module:

- ``run_controller``: one live run's state, the table of live runs, the steer queue;
- ``event_projection``: lovia events -> protocol events, with their side effects;
- ``approval_broker`` and ``question_broker``: what a run waits on the user for;
- ``session_queries``: sessions, transcripts, replay, live runs as the front doors show them;
- ``run_recovery``: what an early stop leaves behind, taken up at start-up or by a new prompt.

At most one live run per session. Everything durable (transcripts, checkpoints, run records,
event logs) lives in the state database, so a restarted server can list, replay and resume
what the previous process left. The doors (``lsp.handlers``, ``acp.agent``) call the public
methods below by run or session id and never touch a ``RunController``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from lovia import Runner
from lovia.checkpointer import Checkpointer, CheckpointOptions
from lovia.exceptions import BudgetExceeded, MaxTurnsExceeded, RunCancelled
from lovia.runtime.checkpoint import CheckpointWriter
from lovia.session import Session
from lovia.steering import Mailbox
from lovia.tools.human import HumanChannel
from lovia_server import protocol as p
from lovia_server.host.approval_broker import ApprovalBroker
from lovia_server.host.child_link import ChildLink, RunOutcome
from lovia_server.host.command_runs import refuse_command_steer
from lovia_server.host.event_log import EventLog, Publisher
from lovia_server.host.event_projection import EventProjection
from lovia_server.host.heap import HeapTrimmer
from lovia_server.host.payloads import error_payload, output_payload, path_uri
from lovia_server.host.ports import EditorPort, RestorePort, RunSpec, RunTurn, WorkspacePort
from lovia_server.host.provider_faults import announced_retries, needs_a_setting
from lovia_server.host.question_broker import PendingQuestion, QuestionBroker
from lovia_server.host.run_controller import (
    FinalStatus,
    RunController,
    RunTable,
    SteerQueue,
    quiet,
    report_progress,
    short_id,
)
from lovia_server.host.run_recovery import RunRecovery
from lovia_server.host.session_queries import SessionQueries, project_entries
from lovia_server.host.store import RunRecord, ServerStore
from lovia_server.host.subagent_runs import SubagentHost
from lovia_server.protocol import (
    RunFinished,
    RunStarted,
    ToolResult,
    UserMessage,
)

logger = logging.getLogger("lovia_server.host.supervisor")

USER_STOP = "user requested stop"


class RunSupervisor:
    """Owns live runs; each front door calls one method per request."""

    def __init__(
        self,
        *,
        store: ServerStore,
        session_store: Session,
        checkpointer: Checkpointer,
        publisher: Publisher,
        editor: EditorPort,
        workspace: WorkspacePort,
        questions: HumanChannel,
        approval_timeout: Callable[[], float | None] = lambda: None,
        restore: RestorePort | None = None,
    ) -> None:
        self.store = store
        self.sessions = session_store
        self.checkpointer = checkpointer
        self.publisher = publisher
        self.editor = editor
        self.workspace = workspace
        self.restore = restore
        self.runs = RunTable()
        self.heap = HeapTrimmer()
        self.subagents = SubagentHost(self)
        self.approvals = ApprovalBroker(
            editor=editor,
            workspace=workspace,
            timeout=approval_timeout,
            runs=self.runs,
            known_run=lambda run_id: self.queries.known_run(run_id),
        )
        self.questions = QuestionBroker(questions, self.runs, editor)
        self.projection = EventProjection(
            runs=self.runs,
            editor=editor,
            workspace=workspace,
            restore=restore,
            approvals=self.approvals,
        )
        self.recovery = RunRecovery(
            store=store, sessions=session_store, checkpointer=checkpointer, publisher=publisher
        )
        self.queries = SessionQueries(
            store=store,
            sessions=session_store,
            checkpointer=checkpointer,
            publisher=publisher,
            runs=self.runs,
            approvals=self.approvals,
            tools_seen=self.projection.tools_seen,
        )

    # ================================================================== start-up

    async def recover(self) -> list[str]:
        """Close the runs a previous process left running (see ``run_recovery``)."""
        return await self.recovery.recover()

    async def serve_questions(self) -> None:
        """Show each ``ask_human`` question of a live run until the channel closes."""
        await self.questions.serve()

    # ================================================================== starting runs

    async def claim_session(self, session_id: str | None) -> str:
        """A new session id, or the given one if it exists and has no live run."""
        if session_id is None:
            return short_id("s")
        if (
            await self.store.get_session(session_id) is None
            and self.runs.of_session(session_id) is None
        ):
            raise p.ProtocolError(
                p.RUN_NOT_FOUND, f"Unknown session {session_id}", {"sessionId": session_id}
            )
        self.runs.check_session_free(session_id)
        return session_id

    async def start(
        self,
        *,
        session_id: str,
        prompt: str,
        model_input: Any,
        spec: RunSpec,
        max_turns: int,
        link: ChildLink | None = None,
        mailbox: Mailbox | None = None,
        context: list[p.ContextSummary] | None = None,
        new_session: bool = False,
        run_id: str | None = None,
        gate: asyncio.Future[None] | None = None,
    ) -> p.LaunchResult:
        """Start a run; ``new_session`` when ``claim_session`` just minted the id (it has no
        earlier runs to look at); ``run_id`` when the caller recorded one already; no tool
        runs before ``gate`` is done (a worktree being checked out)."""
        self.runs.check_session_free(session_id)
        run_id = run_id or short_id("r")
        log = EventLog(
            run_id,
            session_id,
            self.publisher,
            parent_run_id=link.parent_run_id if link is not None else None,
        )
        ctl = RunController(
            run_id=run_id,
            session_id=session_id,
            spec=spec,
            prompt=prompt,
            log=log,
            resumed=False,
            max_turns=max_turns,
            link=link,
            steering=SteerQueue(mailbox) if mailbox is not None else SteerQueue(),
            context=context or [],
            gate=gate,
        )

        async def persist() -> None:
            if not new_session:  # a session claim_session just minted has no runs to close
                await self.recovery.supersede_interrupted(session_id)
            if not new_session:
                ctl.place_in_session(await self.store.runs_for_session(session_id))
            title = prompt.strip().splitlines()[0] if prompt.strip() else "Untitled"
            if link is not None:
                title = f"[{link.task_id}] {title}"
            await self.store.upsert_session(
                session_id,
                title=title,
                agent=spec.agent_label,
                cwd=str(spec.cwd),
                parent_id=link.parent_session_id if link is not None else None,
            )
            await self.store.insert_run(ctl.record())

        return await self._launch(ctl, model_input, persist)

    async def resume(
        self,
        run_id: str,
        spec_for: Callable[[RunRecord], Awaitable[RunSpec]],
        *,
        max_turns: int,
        link: ChildLink | None = None,
        mailbox: Mailbox | None = None,
        gate: asyncio.Future[None] | None = None,
    ) -> p.LaunchResult:
        record = await self.queries.known_run(run_id)
        if record.parent_run_id is not None and link is None:
            raise p.ProtocolError(
                p.NOT_RESUMABLE,
                f"Run {run_id} is a subagent: resume its parent run {record.parent_run_id}",
                {"runId": run_id, "status": record.status, "parentRunId": record.parent_run_id},
            )
        self.runs.check_session_free(record.session_id)
        snapshot = await self.checkpointer.load(record.checkpoint_id)
        # A process that died before the run's first checkpoint leaves only the run record:
        # the run starts again from its prompt (nothing of it reached the session).
        from_prompt = (
            snapshot is None and record.resumable and await self.recovery.restartable(record)
        )
        if not from_prompt and (not record.resumable or snapshot is None):
            raise p.ProtocolError(
                p.NOT_RESUMABLE,
                f"Run {run_id} cannot be resumed (status {record.status})",
                {"runId": run_id, "status": record.status},
            )
        spec = await spec_for(record)
        log = EventLog(
            run_id,
            record.session_id,
            self.publisher,
            last_seq=await self.store.last_seq(run_id),
            parent_run_id=record.parent_run_id,
        )
        ctl = RunController(
            run_id=run_id,
            session_id=record.session_id,
            spec=spec,
            prompt=record.prompt or "",
            log=log,
            resumed=True,
            max_turns=(snapshot.turns if snapshot else 0) + max_turns,
            leg=record.leg,
            from_prompt=from_prompt,
            link=link,
            steering=SteerQueue(mailbox) if mailbox is not None else SteerQueue(),
            gate=gate,
        )
        if snapshot is not None:
            ctl.stream.usage = snapshot.usage.clone()

        async def persist() -> None:
            ctl.place_in_session(await self.store.runs_for_session(record.session_id))
            await self.store.insert_run(ctl.record())
            await self.store.touch_session(record.session_id)

        return await self._launch(ctl, record.prompt if from_prompt else "", persist)

    async def _launch(
        self, ctl: RunController, model_input: Any, persist: Callable[[], Awaitable[None]]
    ) -> p.LaunchResult:
        """Register before any await (a concurrent start then sees the session as busy),
        persist the records, then start the run task."""
        ctl.spec.agent = self.subagents.bind(ctl.spec.agent)
        self.runs.add(ctl)
        try:
            await persist()
        except BaseException:
            self.runs.remove(ctl)
            raise
        ctl.task = asyncio.get_running_loop().create_task(self._drive(ctl, model_input))
        return p.LaunchResult(session_id=ctl.session_id, run_id=ctl.run_id, status="running")

    # ================================================================== requests on a live run

    async def _active(self, run_id: str) -> RunController:
        return await self.runs.live(run_id, self.queries.known_run)

    async def steer(self, run_id: str, message: str) -> p.SteerResult:
        ctl = await self._active(run_id)
        refuse_command_steer(message)
        message_id = ctl.steering.push(message)
        return p.SteerResult(run_id=ctl.run_id, message_id=message_id, accepted=True)

    async def unsteer(self, run_id: str, message_id: str) -> p.UnsteerResult:
        ctl = self.runs.get(run_id)
        if ctl is None:
            # A finished run delivered (or dropped) its steers: nothing left to withdraw.
            await self.queries.known_run(run_id)
            return p.UnsteerResult(withdrawn=False)
        return p.UnsteerResult(withdrawn=ctl.steering.withdraw(message_id))

    async def answer(self, run_id: str, question_id: str, answer: str) -> p.AnswerResult:
        ctl = await self._active(run_id)
        return self.questions.answer(ctl, question_id, answer)

    async def cancel(self, run_id: str) -> p.CancelResult:
        """``lovia/cancel``: stop a live run (an error for a finished or unknown one)."""
        return self._stop(await self._active(run_id), USER_STOP)

    def stop(self, run_id: str, *, reason: str = USER_STOP) -> bool:
        """Stop the run if it is live (its subagents too); False when it is not."""
        ctl = self.runs.get(run_id)
        if ctl is not None:
            self._stop(ctl, reason)
        return ctl is not None

    async def stop_session(
        self, session_id: str, *, reason: str = USER_STOP, wait: float = 0
    ) -> None:
        """Stop the session's live run, if any, and wait up to ``wait`` seconds for it to end."""
        ctl = self.runs.of_session(session_id)
        if ctl is None:
            return
        self._stop(ctl, reason)
        if wait > 0 and ctl.task is not None:
            await asyncio.wait({ctl.task}, timeout=wait)

    def _stop(self, ctl: RunController, reason: str) -> p.CancelResult:
        if not ctl.user_cancelled:
            ctl.user_cancelled = True
            ctl.cancel_token.cancel(reason)
            self.approvals.cancel_all(ctl)
            self.questions.cancel_all(ctl)
            if ctl.task is not None:
                asyncio.get_running_loop().create_task(self._hard_cancel_after(ctl, 3.0))
            for child in self.runs.children_of(ctl.run_id):
                self._stop(child, "the parent run was cancelled")
        return p.CancelResult(run_id=ctl.run_id, status="cancelling")

    def emit_to_session(self, session_id: str, payload: p.EventPayload) -> None:
        """An event for the live run of a session (a pooled MCP server's state change)."""
        ctl = self.runs.of_session(session_id)
        if ctl is not None:
            ctl.log.emit(payload)

    async def _hard_cancel_after(self, ctl: RunController, grace: float) -> None:
        """Cooperative cancel first; a tool still running after ``grace`` is interrupted."""
        task = ctl.task
        if task is None:
            return
        done, _ = await asyncio.wait({task}, timeout=grace)
        if not done:
            task.cancel()

    async def shutdown(self, grace: float = 5.0) -> None:
        """Interrupt every live run, resumable. A run waiting on its model is stopped at once:
        the turn has stored nothing yet and a model may think for a minute before its first
        token (an editor gives ``shutdown`` 2 s). A run waiting on an approval or a question is
        interrupted at once too, with no answer recorded: nobody decided, so the resumed run asks
        again. Other runs stop at their next step; a tool still running after ``grace`` is
        interrupted."""
        for ctl in list(self.runs.all()):
            ctl.shutting_down = True
            ctl.cancel_token.cancel("server shutdown")
            waiting = bool(ctl.approvals) or bool(ctl.questions)
            if (ctl.stream.awaiting_model or waiting) and ctl.task is not None:
                ctl.task.cancel()
        tasks = [c.task for c in self.runs.all() if c.task is not None]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=grace)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=grace)
        await self.publisher.drain()

    # ================================================================== queries

    async def replay(self, run_id: str, after_seq: int) -> p.ReplayResult:
        return await self.queries.replay(run_id, after_seq)

    async def list_sessions(
        self, *, limit: int, offset: int, query: str | None
    ) -> p.SessionsResult:
        return await self.queries.list_sessions(limit=limit, offset=offset, query=query)

    async def session_view(self, session_id: str) -> p.SessionResult:
        return await self.queries.session_view(session_id)

    async def delete_session(self, session_id: str) -> p.DeleteSessionResult:
        return await self.queries.delete_session(session_id)

    async def cut_conversation(
        self, session_id: str, turn_index: int
    ) -> tuple[list[str], str | None]:
        return await self.queries.cut_conversation(session_id, turn_index)

    def live_runs(self) -> list[p.LiveRun]:
        return self.queries.live_runs()

    async def wait_run(self, run_id: str) -> None:
        """Until the run, if live, has finished (its records written)."""
        ctl = self.runs.get(run_id)
        if ctl is not None:
            await asyncio.shield(ctl.outcome)

    def live_run(self, session_id: str) -> p.LiveRun | None:
        """The session's live run, if it has one."""
        return self.queries.live_run(session_id)

    def live_turns(self) -> list[RunTurn]:
        """Every live run as a turn of its conversation (where it works)."""
        return self.queries.live_turns()

    def rules_view(self) -> list[p.SessionRule]:
        return self.approvals.rules_view()

    def approval_session(self, approval_id: str) -> str | None:
        """The session whose live run waits on that approval."""
        return next((c.session_id for c in self.runs.all() if approval_id in c.approvals), None)

    def pending_question(self, question_id: str) -> PendingQuestion | None:
        """A question a live run still waits on."""
        return self.questions.pending(question_id)

    def tool_output(self, session_id: str, call_id: str | None, stream: str, text: str) -> None:
        """A running call's shell output (from the workspace), as ``tool.update`` deltas."""
        self.projection.tool_output(session_id, call_id, stream, text)

    # ================================================================== driving a run

    async def _drive(self, ctl: RunController, model_input: Any) -> None:
        result: Any = None
        error: BaseException | None = None
        try:
            ctl.log.emit(
                RunStarted(
                    prompt=ctl.prompt,
                    cwd=str(ctl.spec.cwd),
                    model=ctl.spec.model_label,
                    agent=ctl.spec.agent_label,
                    resumed=ctl.resumed,
                    subagent=ctl.subagent,
                )
            )
            if not ctl.resumed:
                ctl.log.emit(
                    UserMessage(
                        message_id=short_id("u"),
                        text=ctl.prompt,
                        source="prompt",
                        context=ctl.context or None,
                    )
                )
            report_progress(self.editor, "begin", ctl.run_id, ctl.prompt)
            if self.restore is not None:
                self.restore.run_started(ctl.turn)
            ctl.stream.new_message()
            resume = ctl.resumed and not ctl.from_prompt
            while True:
                # The checkpoint is deleted after the session append (below), never before:
                # deleting it first would leave a window where a crash loses the leg.
                checkpoint = CheckpointOptions(
                    checkpointer=self.checkpointer,
                    run_id=ctl.checkpoint_id,
                    if_run_exists="resume_only" if resume else "restart",
                )
                handle = Runner.stream(
                    ctl.spec.agent,
                    model_input,
                    session=self.sessions if ctl.spec.remembered else None,
                    session_id=ctl.session_id,
                    checkpoint=checkpoint,
                    mailbox=ctl.mailbox,
                    cancel_token=ctl.cancel_token,
                    max_turns=ctl.max_turns,
                    budget=ctl.spec.budget,
                    retry=announced_retries(ctl, ctl.spec.agent.retry),
                    compact=ctl.spec.compact,
                )
                async for event in handle:
                    await self.projection.on_event(ctl, event)
                try:
                    result = await handle.result()
                except Exception as exc:
                    error = exc
                    break
                await quiet(self.checkpointer.delete(ctl.checkpoint_id))
                if ctl.spec.compact is not None:  # what it did, said as lovia's reply
                    self.projection.say(ctl, str(result.output))
                    break
                if not ctl.mailbox or ctl.cancel_token.is_cancelled:
                    break
                # Steering messages that arrived after the final answer are not dropped: the
                # run continues in a new leg that starts by delivering them.
                ctl.leg += 1
                await self.store.set_leg(ctl.run_id, ctl.leg)
                model_input, resume = [], False
        except asyncio.CancelledError as exc:
            error = exc
        except Exception as exc:
            logger.exception("run.crashed: %s", ctl.run_id)
            error = exc
        finally:
            await asyncio.shield(self._finish(ctl, result, error))

    async def _final_status(
        self, ctl: RunController, error: BaseException | None
    ) -> tuple[FinalStatus, bool]:
        """The run's final status and whether it can be resumed from its checkpoint."""
        status: FinalStatus
        resumable = False
        if error is None:
            status = "completed"
        elif ctl.shutting_down:
            # The server stopped before the run did, even one still being cancelled (a second
            # Ctrl-C in ``lovia chat``): it was not finished, so it stays resumable.
            status = "interrupted"
            resumable = True
        elif ctl.user_cancelled:
            status = "cancelled"
        elif isinstance(error, (MaxTurnsExceeded, BudgetExceeded)) or needs_a_setting(error):
            status = "failed"
        elif isinstance(error, asyncio.CancelledError | RunCancelled):
            status = "interrupted"
            resumable = True
        else:
            status = (
                "interrupted" if CheckpointWriter.classify(error) == "interrupted" else "failed"
            )
            resumable = status == "interrupted"
        if resumable:
            snapshot = await quiet(self.checkpointer.load(ctl.checkpoint_id))
            resumable = snapshot is not None and snapshot.status != "completed"
            if not resumable and error is not None:
                status = "failed"
        return status, resumable

    async def _finish(self, ctl: RunController, result: Any, error: BaseException | None) -> None:
        status, resumable = await self._final_status(ctl, error)
        if status in ("cancelled", "failed"):
            await self.recovery.keep_completed_turns(ctl.session_id, ctl.checkpoint_id)
        self.approvals.cancel_all(ctl)
        self.questions.cancel_all(ctl)
        for call_id, info in ctl.stream.calls.items():
            if info.announced and not info.result_sent:
                info.result_sent = True
                ctl.log.emit(ToolResult.cancelled(call_id, "Cancelled."))
        usage = ctl.usage()
        if self.restore is not None:
            self.restore.run_ended(ctl.turn)
        run_error: p.RunError | None = None
        if error is not None and status != "cancelled":
            run_error = (
                p.RunError(type="Cancelled", message="The run was interrupted.")
                if isinstance(error, asyncio.CancelledError)
                else error_payload(error)
            )
        ctl.log.emit(
            RunFinished(
                status=status,
                usage=usage,
                resumable=resumable,
                output=output_payload(result.output) if result is not None else None,
                error=run_error,
            )
        )
        report_progress(self.editor, "end", ctl.run_id, status)
        self.runs.remove(ctl)
        await ctl.log.close()
        error_text = None
        if status == "cancelled":
            error_text = "cancelled"
        elif error is not None:
            error_text = (run_error.message if run_error else None) or type(error).__name__
        with contextlib.suppress(Exception):
            await self.store.finish_run(
                ctl.run_id,
                status=status,
                error=error_text,
                usage=usage,
                resumable=resumable,
            )
            await self.store.touch_session(ctl.session_id)
        if ctl.link is not None:
            await self.subagents.child_finished(ctl, status, usage, result, run_error)
        if not ctl.outcome.done():
            ctl.outcome.set_result(RunOutcome(status, result, error, run_error))
        self.heap.run_ended()


__all__ = ["RunController", "RunSpec", "RunSupervisor", "path_uri", "project_entries"]
