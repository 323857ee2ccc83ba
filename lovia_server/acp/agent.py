"""The ACP agent: ``initialize``, ``session/*`` and ``authenticate`` over the run supervisor.

One ``LoviaAcpAgent`` serves one client connection. Runs, event logs, approvals and steering are
the supervisor's (the same one the language server drives); this module resolves ACP sessions to
folders, modes and models, turns prompts into runs (in a worktree of the session's own with
``isolation``: :mod:`lovia_server.acp.worktrees`), and forwards each run's events, mapped by
:mod:`lovia_server.acp.mapping`, as ``session/update`` notifications in order.

Long because it is the one place every ``session/*`` request lands; what each needs beyond
resolving the session lives in its own module.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from typing import Any, Protocol

from acp import schema as a

from lovia.agent import Agent
from lovia.context.policy import CompactNow
from lovia.plugins.base import Plugin
from lovia_server import protocol as p
from lovia_server.acp.capabilities import initialize_response
from lovia_server.acp.commands import (
    commands_update,
    expand_command,
    prompt_command,
    skill_roots,
    skills_plugin,
)
from lovia_server.acp.credentials import AUTH_METHOD, load_stored_keys
from lovia_server.acp.inert_markdown import inert
from lovia_server.acp.mapping import (
    NO_TYPED_ANSWER,
    SessionMapper,
    Update,
    permission_decision,
    permission_request,
    prompt_response,
    question_answer,
    question_request,
    text_block,
)
from lovia_server.acp.prompt_input import PromptBlock, PromptInput, prompt_input
from lovia_server.acp.request_errors import from_protocol_error, invalid_params, session_not_found
from lovia_server.acp.session_list import iso, list_page
from lovia_server.acp.session_options import (
    CONFIG_IDS,
    AcpSession,
    HostOptions,
    check_mode,
    config_options,
    mode_state,
    session_models,
)
from lovia_server.acp.session_params import McpServer, mcp_settings, session_place
from lovia_server.acp.session_places import SessionPlaces, session_policy
from lovia_server.acp.workspace import (
    DEFAULT_MODE,
    MODES,
    AcpWorkspace,
    ClientFiles,
    FileAccess,
    ModeId,
    SessionFolders,
)
from lovia_server.acp.worktrees import AcpWorktrees, check_isolation
from lovia_server.host.agent_factory import RunPlace
from lovia_server.host.agents import check_model
from lovia_server.host.command_runs import local_reply_spec, start_compaction
from lovia_server.host.core import DEMO_MODEL, DoorPorts, HostCore
from lovia_server.host.instruction_listing import instruction_files
from lovia_server.host.ports import ProgressStage

logger = logging.getLogger("lovia_server.acp")


class ClientPort(ClientFiles, Protocol):
    """The client side of the connection, as the host calls it."""

    async def session_update(self, session_id: str, update: Update) -> None: ...

    async def request_permission(
        self, session_id: str, tool_call: a.ToolCallUpdate, options: list[a.PermissionOption]
    ) -> a.RequestPermissionResponse: ...


class AcpEditor:
    """The host's ``EditorPort`` and ``EventSink`` over ACP: events become
    ``session/update``s, approvals ``session/request_permission``; ACP has no progress UI
    beyond the updates themselves."""

    asks_approvals = True

    def __init__(self, host: LoviaAcpAgent) -> None:
        self.host = host

    def send_event(self, event: p.LoviaEvent, data: bytes, *, essential: bool) -> bool:
        """The event sink: the SDK's connection frames ``session/update``s of its own."""
        self.host._on_event(event)
        return True

    def pending(self) -> bool:
        return False  # the updates' queue (``_send_loop``) is where they wait

    def drained(self) -> None:
        return None

    def backlog(self) -> int:
        return 0

    async def ask_approval(self, payload: p.ApprovalRequested) -> p.ApprovalChoice | None:
        # a cancelled request is a rejection here (ACP cancels it when the turn is cancelled)
        return await self.host._ask_permission(payload) or p.ApprovalChoice.REJECT_ONCE

    def progress(self, stage: ProgressStage, run_id: str, message: str) -> None:
        return None


class LoviaAcpAgent:
    worktrees: AcpWorktrees
    """The sessions' worktree runs; set once the host core is open (:meth:`core`)."""

    def __init__(self, options: HostOptions) -> None:
        self.options = options
        self.access = FileAccess()
        self.workspace = AcpWorkspace(
            lambda: self.options.settings, self.access, on_output=self._tool_output
        )
        self.client: ClientPort | None = None
        self.sessions: dict[str, AcpSession] = {}
        self.places = SessionPlaces(self.sessions, options)
        self._outbox: asyncio.Queue[tuple[str, Any, Any]] = asyncio.Queue()
        self._ready: asyncio.Task[HostCore] | None = None
        self._sender: asyncio.Task[None] | None = None
        self._closed = False
        self._tasks: set[asyncio.Task[None]] = set()

    # ================================================================== lifecycle

    def bind(self, client: ClientPort) -> None:
        self.client = client
        self.access.client = client

    def start(self) -> None:
        """Open the state database and recover interrupted runs in the background: the client's
        ``initialize`` is answered without waiting for it."""
        loop = asyncio.get_running_loop()
        self._ready = loop.create_task(self._open())
        self._sender = loop.create_task(self._send_loop())

    async def _open(self) -> HostCore:
        editor = AcpEditor(self)
        settings = lambda: self.options.settings  # noqa: E731
        ports = DoorPorts(
            editor=editor,
            sink=editor,
            workspace=self.workspace,
            places=self.places,
            attach=self._attach,
            policy=session_policy(settings),
            extra_plugins=self._skills,
            trusted=lambda: self.options.trusted,
        )
        core = await HostCore.open(self.options.state_dir, ports, settings)
        load_stored_keys(self.options.state_dir)
        self.worktrees = AcpWorktrees(core.worktrees)
        # worktrees a crash left half-made are cleaned up; runs resume with their sessions
        await core.start()
        return core

    def _tool_output(self, session_id: str, call_id: str | None, stream: str, text: str) -> None:
        if self._ready is not None and self._ready.done() and not self._ready.cancelled():
            self._ready.result().supervisor.tool_output(session_id, call_id, stream, text)

    async def core(self) -> HostCore:
        assert self._ready is not None, "start() first"
        return await asyncio.shield(self._ready)

    async def shutdown(self) -> None:
        """The client went away: live runs stop resumable, everything is flushed and closed."""
        if self._closed:
            return
        self._closed = True
        if self._ready is not None:
            with contextlib.suppress(Exception):
                core = await self._ready
                await core.stop("the client went away")
                await core.close_stores()
        for task in list(self._tasks):
            task.cancel()
        if self._sender is not None:
            self._sender.cancel()

    # ================================================================== the update stream

    def _on_event(self, event: p.LoviaEvent) -> None:
        """The publisher hands over each event once it is stored; sessions this client has
        not opened are not sent (a recovered run of another window, say)."""
        session_id = event.session_id
        session = self.sessions.get(session_id)
        if session is None:
            return
        if isinstance(event, p.UserMessageEvent) and event.source == "steer":
            session.undelivered.discard(event.message_id)
        for update in session.mapper.updates(event):
            self._outbox.put_nowait(("update", session_id, update))
        if isinstance(event, p.RunFinishedEvent):
            self._outbox.put_nowait(("finished", session_id, event))
        elif isinstance(event, p.QuestionRequestedEvent):
            self._spawn(self._ask_question(session_id, event))

    async def _send_loop(self) -> None:
        while True:
            what, session_id, item = await self._outbox.get()
            try:
                if what == "update":
                    await self._send_update(session_id, item)
                elif what == "finished":
                    await self._run_finished(session_id, item)
                elif what == "marker" and not item.done():
                    item.set_result(None)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("acp.send_failed", exc_info=True)

    async def _send_update(self, session_id: str, update: Update) -> None:
        if self.client is not None:
            await self.client.session_update(session_id, update)

    async def _run_finished(self, session_id: str, event: p.RunFinishedEvent) -> None:
        session = self.sessions.get(session_id)
        waiters = session.waiters.pop(event.run_id, []) if session else []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(event)
        if not waiters:
            # nobody's prompt waits for this run (it was resumed by session/load or
            # session/resume): tell the client the session changed, and how the run ended
            await self._send_update(
                session_id,
                a.SessionInfoUpdate(
                    session_update="session_info_update",
                    updated_at=iso(event.ts),
                    field_meta={"lovia": {"runId": event.run_id, "status": event.status}},
                ),
            )

    async def _flushed(self) -> None:
        """Wait until every event so far is stored and its updates are sent."""
        core = await self.core()
        await core.publisher.drain()
        marker: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._outbox.put_nowait(("marker", None, marker))
        await marker

    # ================================================================== initialize, auth

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: a.ClientCapabilities | None = None,
        client_info: a.Implementation | None = None,
        **kwargs: Any,
    ) -> a.InitializeResponse:
        caps = client_capabilities or a.ClientCapabilities()
        fs = caps.fs or a.FileSystemCapabilities()
        self.access.read = bool(fs.read_text_file)
        self.access.write = bool(fs.write_text_file)
        return initialize_response()

    async def _imports_settled(self) -> None:
        await (await self.core()).imports_settled()

    async def authenticate(self, method_id: str, **kwargs: Any) -> a.AuthenticateResponse:
        if method_id != AUTH_METHOD:
            raise invalid_params(f"Unknown authentication method {method_id!r}", "methodId")
        await self.core()  # loads credentials.json
        model = self.options.settings.effective_model()
        if model == DEMO_MODEL:
            return a.AuthenticateResponse()
        try:
            check_model(model)
        except p.ProtocolError as exc:
            raise from_protocol_error(exc) from None
        return a.AuthenticateResponse()

    # ================================================================== sessions

    def _session(self, session_id: str) -> AcpSession:
        return self.places.session(session_id)

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> a.NewSessionResponse:
        core = await self.core()
        session_id = await core.supervisor.claim_session(None)
        session = AcpSession(
            place=session_place(session_id, cwd, additional_directories),
            mcp=mcp_settings(mcp_servers or []),
        )
        self.sessions[session_id] = session
        self._announce_commands(session)
        return a.NewSessionResponse(
            session_id=session_id,
            modes=mode_state(session),
            config_options=config_options(session, self.options),
        )

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[McpServer] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> a.LoadSessionResponse:
        session = await self._reopen(session_id, cwd, additional_directories, mcp_servers)
        core = await self.core()
        session.mapper = SessionMapper(replay=True)
        for record in await core.store.runs_for_session(session_id):
            for event in await core.store.typed_events_after(record.id, 0):
                for update in session.mapper.updates(event):
                    self._outbox.put_nowait(("update", session_id, update))
        session.mapper.replay = False
        await self._flushed()
        await self._continue_interrupted(session)
        self._announce_commands(session)
        return a.LoadSessionResponse(
            modes=mode_state(session), config_options=config_options(session, self.options)
        )

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> a.ResumeSessionResponse:
        session = await self._reopen(session_id, cwd, additional_directories, mcp_servers)
        await self._continue_interrupted(session)
        self._announce_commands(session)
        return a.ResumeSessionResponse(
            modes=mode_state(session), config_options=config_options(session, self.options)
        )

    async def _reopen(
        self,
        session_id: str,
        cwd: str,
        extra: list[str] | None,
        mcp_servers: list[McpServer] | None,
    ) -> AcpSession:
        core = await self.core()
        known = self.sessions.get(session_id)
        if known is None and await core.store.get_session(session_id) is None:
            raise session_not_found(session_id)
        mode = known.place.mode if known is not None else await self._stored_mode(session_id)
        session = AcpSession(
            place=session_place(session_id, cwd, extra, mode),
            model=known.model if known is not None else None,
            mcp=mcp_settings(mcp_servers or []),
        )
        if known is not None:
            session.waiters = known.waiters
        self.sessions[session_id] = session
        return session

    async def _stored_mode(self, session_id: str) -> ModeId:
        """The mode a session was left in by an earlier process (a run's start records it)."""
        row = await (await self.core()).store.get_session(session_id)
        mode = row.get("mode") if row is not None else None
        return mode if isinstance(mode, str) and mode in MODES else DEFAULT_MODE  # type: ignore[return-value]

    def _tell_instructions(self, session: AcpSession) -> None:
        """Ahead of a session's first turn: which project instruction files the agent reads
        (docs/customization.md), as a line of the agent's message."""
        if session.instructions_told:
            return
        session.instructions_told = True
        try:
            config = self.workspace.config_for(session.place)
            line = p.instructions_line(instruction_files([config]))
        except Exception:
            logger.warning("acp.instructions_unreadable", exc_info=True)
            return
        if line:
            # a code span: file names and globs (``**/*.ts``) shown as written, never markup
            shown = f"`{line}`" if "`" not in line else inert(line)
            chunk = a.AgentMessageChunk(
                session_update="agent_message_chunk", content=text_block(f"{shown}\n\n")
            )
            self._outbox.put_nowait(("update", session.place.session_id, chunk))

    def _announce_commands(self, session: AcpSession) -> None:
        """The session's commands and skills as slash commands, sent once the response is out."""

        async def announce() -> None:
            await asyncio.sleep(0)  # the session/* response is written first
            try:
                config = self.workspace.config_for(session.place)
                session.commands, update = await commands_update(session.place.root, config)
            except Exception:
                logger.warning("acp.commands_unreadable", exc_info=True)
                return
            self._outbox.put_nowait(("update", session.place.session_id, update))

        self._spawn(announce())

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _continue_interrupted(self, session: AcpSession) -> None:
        """A run the previous process left unfinished continues from its checkpoint (its
        pending approvals are asked again)."""
        core = await self.core()
        sid = session.place.session_id
        if core.supervisor.live_run(sid) is not None:
            return
        runs = await core.store.runs_for_session(sid)
        if not runs or not runs[-1].resumable:
            return
        await self._imports_settled()
        try:
            await core.resume(runs[-1].id)
        except p.ProtocolError as exc:
            raise from_protocol_error(exc) from None

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> a.ListSessionsResponse:
        return await list_page((await self.core()).store, cwd, cursor)

    async def close_session(self, session_id: str, **kwargs: Any) -> a.CloseSessionResponse:
        session = self._session(session_id)
        core = await self.core()
        await core.supervisor.stop_session(session_id, reason="session closed", wait=10)
        self.sessions.pop(session.place.session_id, None)
        await core.close_session(session_id)
        return a.CloseSessionResponse()

    async def delete_session(self, session_id: str, **kwargs: Any) -> a.DeleteSessionResponse:
        core = await self.core()
        try:
            result = await core.supervisor.delete_session(session_id)
        except p.ProtocolError as exc:
            raise from_protocol_error(exc) from None
        if not result.deleted and session_id not in self.sessions:
            raise session_not_found(session_id)
        self.sessions.pop(session_id, None)
        await core.close_session(session_id)
        return a.DeleteSessionResponse()

    # ================================================================== modes and options

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> a.SetSessionModeResponse:
        await self._set_mode(self._session(session_id), mode_id, "modeId")
        return a.SetSessionModeResponse()

    async def _set_mode(self, session: AcpSession, mode_id: str, field_name: str) -> None:
        check_mode(mode_id, field_name)
        session.place.mode = mode_id  # type: ignore[assignment]
        self.workspace.apply_mode(session.place)
        # kept for the next process: a session loaded after a restart is in the mode it left
        await (await self.core()).store.set_session_mode(session.place.session_id, mode_id)

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> a.SetSessionConfigOptionResponse:
        session = self._session(session_id)
        if config_id == "mode":
            await self._set_mode(session, str(value), "value")
        elif config_id == "isolation":
            session.isolation = check_isolation(value)
        elif config_id == "model":
            if not isinstance(value, str) or value not in session_models(session, self.options):
                raise invalid_params(
                    f"Unknown model {value!r}",
                    "value",
                    allowed=session_models(session, self.options),
                )
            session.model = value
        else:
            raise invalid_params(
                f"Unknown config option {config_id!r}", "configId", allowed=CONFIG_IDS
            )
        return a.SetSessionConfigOptionResponse(
            config_options=config_options(session, self.options)
        )

    # ================================================================== prompts

    async def prompt(
        self, session_id: str, prompt: list[PromptBlock], **kwargs: Any
    ) -> a.PromptResponse:
        session = self._session(session_id)
        core = await self.core()
        given = prompt_input(prompt)
        self._tell_instructions(session)
        if not given.display and isinstance(given.model_input, str) and not given.model_input:
            raise invalid_params("The prompt has no text or resource", "prompt")
        try:
            config = self.workspace.config_for(session.place)
            command = await prompt_command(given.display, session.commands, config)
        except p.ProtocolError as exc:
            raise from_protocol_error(exc) from None
        if command is not None and command.reply is not None:
            return await self._reply(session, given.display, command.reply)
        if command is not None and command.compact is not None:
            return await self._compact(session, given.display, command.compact)
        if command is not None and command.mode == "plan" and not session.plan:
            await self._enter_plan_mode(session)
        text = command.model_input if command else expand_command(given.display, session.commands)
        if text != given.display and isinstance(given.model_input, str):
            given = PromptInput(given.display, given.model_input.replace(given.display, text, 1))
        while True:
            waiter: asyncio.Future[p.RunFinishedEvent] = asyncio.get_running_loop().create_future()
            async with session.starting:
                live = core.supervisor.live_run(session_id)
                steered: str | None = None
                if live is not None:
                    # A prompt during a turn steers it: delivered at the next turn boundary,
                    # and this request ends with the run it joined.
                    text = (
                        given.model_input if isinstance(given.model_input, str) else given.display
                    )
                    steered = (await core.supervisor.steer(live.run_id, text)).message_id
                    session.undelivered.add(steered)
                    run_id = live.run_id
                else:
                    run_id = await self._start_run(session, given)
                session.waiters.setdefault(run_id, []).append(waiter)
            finished = await waiter
            # the run's user.message event (before its run.finished) says a steer arrived
            if steered is None or steered not in session.undelivered:
                return prompt_response(finished)
            session.undelivered.discard(steered)
            if finished.status == "cancelled":
                return prompt_response(finished)
            # the run ended before it could take the message in: it starts the next run

    async def _reply(self, session: AcpSession, display: str, reply: str) -> a.PromptResponse:
        """A command answered without the model (``/help``): a run of one scripted reply."""
        core = await self.core()
        sid = session.place.session_id
        place = core.agents.place(sid)
        waiter: asyncio.Future[p.RunFinishedEvent] = asyncio.get_running_loop().create_future()
        async with session.starting:
            try:
                launch = await core.supervisor.start(
                    session_id=sid,
                    prompt=display,
                    model_input=display,
                    spec=local_reply_spec(reply, place.root, place.cwd),
                    max_turns=1,
                )
            except p.ProtocolError as exc:
                raise from_protocol_error(exc) from None
            session.waiters.setdefault(launch.run_id, []).append(waiter)
        return prompt_response(await waiter)

    async def _compact(
        self, session: AcpSession, display: str, compact: CompactNow
    ) -> a.PromptResponse:
        """``/compact [focus]``: the session's conversation compacted now (no model turn)."""
        core = await self.core()
        sid = session.place.session_id
        waiter: asyncio.Future[p.RunFinishedEvent] = asyncio.get_running_loop().create_future()
        async with session.starting:
            try:
                launch = await start_compaction(core, sid, None, prompt=display, compact=compact)
            except p.ProtocolError as exc:
                raise from_protocol_error(exc) from None
            session.waiters.setdefault(launch.run_id, []).append(waiter)
        return prompt_response(await waiter)

    async def _enter_plan_mode(self, session: AcpSession) -> None:
        """A plan-mode command (``/plan``, ``/review``) puts the session in plan mode, as the
        mode selector would; the client is told."""
        await self._set_mode(session, "plan", "modeId")
        update = a.CurrentModeUpdate(session_update="current_mode_update", current_mode_id="plan")
        await self._send_update(session.place.session_id, update)

    async def _start_run(self, session: AcpSession, given: PromptInput) -> str:
        core = await self.core()
        await self._imports_settled()

        async def start(root: Path | None = None) -> p.LaunchResult:
            return await core.supervisor.start(
                session_id=session.place.session_id,
                prompt=given.display,
                model_input=given.model_input,
                spec=await core.agents.for_run(session.place.session_id, root, plan=session.plan),
                max_turns=self.options.settings.maxTurns,
            )

        try:
            if session.isolation == "worktree":
                text = given.model_input if isinstance(given.model_input, str) else given.display
                launch = await self.worktrees.prompt(
                    session.place.session_id, session.place.root, given.display, text, start
                )
            else:
                launch = await start()
        except p.ProtocolError as exc:
            raise from_protocol_error(exc) from None
        await core.store.set_session_mode(session.place.session_id, session.place.mode)
        return launch.run_id

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """``_lovia/worktree/{list,diff,apply,discard,keep}`` (ACP's ``_`` is stripped)."""
        await self.core()
        return await self.worktrees.call(method, params)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """``session/cancel``: the live turn stops and its prompt ends with ``cancelled``; an
        approval waiting for the client is resolved as cancelled; a worktree prompt still
        waiting for a slot is dropped."""
        if self._ready is None or session_id not in self.sessions:
            return
        core = await self.core()
        await core.supervisor.stop_session(session_id)
        dropped = await self.worktrees.cancel_queued(session_id)
        if dropped is not None:
            self._outbox.put_nowait(("finished", session_id, dropped))

    async def _ask_permission(self, payload: p.ApprovalRequested) -> p.ApprovalChoice | None:
        """The supervisor's approval, asked as ``session/request_permission`` once the tool
        call it is about has reached the client."""
        core = await self.core()
        session_id = core.supervisor.approval_session(payload.approval_id)
        if session_id is None or self.client is None:
            return None
        await self._flushed()
        tool_call, options = permission_request(payload)
        response = await self.client.request_permission(session_id, tool_call, options)
        return permission_decision(response)

    async def _ask_question(self, session_id: str, event: p.QuestionRequestedEvent) -> None:
        """An ``ask_human`` question: its choices as a permission request on the asking tool
        call; a question without choices is answered that the editor cannot take text."""
        core = await self.core()
        question_id = event.question_id
        pending = core.supervisor.pending_question(question_id)
        if pending is None:
            return
        choices = list(event.choices or [])
        answer = NO_TYPED_ANSWER
        if choices and self.client is not None:
            await self._flushed()
            asking = pending.tool_call_id or question_id
            tool_call, options = question_request(event, asking)
            try:
                response = await self.client.request_permission(session_id, tool_call, options)
            except Exception:
                logger.warning("acp.question_failed", exc_info=True)
                return
            answer = question_answer(response, choices)
        if core.supervisor.pending_question(question_id) is not None:
            await core.supervisor.answer(pending.run_id, question_id, answer)

    # ================================================================== agents

    async def _attach(self, agent: Agent[Any], place: RunPlace) -> Agent[Any]:
        """Bind the ACP session's live workspace (its folders and mode), or one at the
        session's worktree under the same mode."""
        folders = self._session(place.session_id).place
        if place.root != folders.root:
            folders = SessionFolders(folders.session_id, place.root, [], folders.mode, True)
        return await self.workspace.attach_to(agent, folders)

    async def _skills(self, place: RunPlace) -> list[Plugin]:
        """The built-in agent loads the skills the session's commands name."""
        roots = await asyncio.to_thread(skill_roots, place.root)
        return [skills_plugin(roots)] if roots else []


# ---------------------------------------------------------------------------- helpers


__all__ = ["DEMO_MODEL", "AcpSession", "ClientPort", "HostOptions", "LoviaAcpAgent"]
