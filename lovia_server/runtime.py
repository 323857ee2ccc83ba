"""ServerRuntime: the pieces a started server runs on (stores, supervisor, editor workspace).

Built on ``initialized``; each request method validates params, resolves what the request
names (folders, agents, runs) and delegates to the supervisor.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

import lovia
from lovia.plugins.todo import Todo
from lovia.stores import SQLiteCheckpointer, SQLiteSession
from lovia.tools.human import HumanChannel, ask_human
from lovia_server import protocol as p
from lovia_server.agents import (
    BUILTIN_CODING,
    BUILTIN_DEMO,
    check_model,
    coding_agent,
    load_user_agent,
)
from lovia_server.editor_workspace import EditorWorkspace
from lovia_server.event_log import Publisher
from lovia_server.lsp_editor import LspEditor
from lovia_server.mcp_pool import MCPPool, PooledMCP
from lovia_server.ports import RunSpec
from lovia_server.prices import price_for, prices_from_settings
from lovia_server.restore_points import LiveRun, RestorePointService
from lovia_server.sandbox import sandbox_status
from lovia_server.settings import UNTRUSTED_MCP, default_state_dir
from lovia_server.store import RunRecord, ServerStore
from lovia_server.supervisor import RunSupervisor

if TYPE_CHECKING:
    from lovia_server.server import LoviaServer
    from lovia_server.settings import LoviaSettings

logger = logging.getLogger("lovia_server.runtime")


class ServerRuntime:
    def __init__(self, server: LoviaServer, store: ServerStore, state_dir: Path) -> None:
        self.server = server
        self.store = store
        self.state_dir = state_dir
        db = state_dir / "state.db"
        self.session_store = SQLiteSession(db)
        self.checkpointer = SQLiteCheckpointer(db)
        self.channel = HumanChannel()
        self._warned_untrusted_mcp = False
        self.editor = LspEditor(server)
        self.workspace = EditorWorkspace(
            server, on_output=lambda *args: self.supervisor.tool_output(*args)
        )
        self.publisher = Publisher(store, self.editor.notify, wire=self.editor)
        self.restore_points = RestorePointService(
            server,
            self.workspace,
            state_dir / "restore-points",
            live_runs=lambda: [
                LiveRun(t.run_id, t.session_id, t.root) for t in self.supervisor.live_turns()
            ],
            never_store=(state_dir,),
        )
        self.supervisor = RunSupervisor(
            store=store,
            session_store=self.session_store,
            checkpointer=self.checkpointer,
            publisher=self.publisher,
            editor=self.editor,
            workspace=self.workspace,
            questions=self.channel,
            approval_timeout=lambda: server.settings.approvalTimeoutSeconds,
            restore=self.restore_points,
        )
        self.mcp = MCPPool(
            log_dir=state_dir / "mcp-logs",
            notify=self.supervisor.emit_to_session,
            idle_timeout=lambda: server.settings.mcpIdleTimeoutSeconds,
        )
        self._questions_task: asyncio.Task[None] | None = None
        self._closed = False
        self._warm_up: asyncio.Task[None] | None = None
        self._recovery: asyncio.Task[None] | None = None
        self._warm_runs: asyncio.Task[None] | None = None

    @classmethod
    async def start(cls, server: LoviaServer) -> ServerRuntime:
        state_dir = _state_dir(server)
        await asyncio.to_thread(state_dir.mkdir, parents=True, exist_ok=True)
        store = ServerStore(state_dir / "state.db")
        await store.open()
        runtime = cls(server, store, state_dir)
        await runtime.supervisor.recover()
        # Finish a restore a crash interrupted (in the background: start-up stays quick).
        runtime._recovery = asyncio.get_running_loop().create_task(runtime._recover_restores())
        runtime._questions_task = asyncio.get_running_loop().create_task(
            runtime.supervisor.serve_questions()
        )
        loop = asyncio.get_running_loop()
        runtime._warm_up = loop.create_task(runtime._warm_provider())
        runtime._warm_runs = loop.create_task(runtime._warm_first_run())
        return runtime

    async def _recover_restores(self) -> None:
        try:
            await self.restore_points.recover()
        except Exception:
            logger.warning("restore_points.recover_failed", exc_info=True)

    async def _restore_points_ready(self) -> None:
        if self._recovery is not None and not self._recovery.done():
            await asyncio.shield(self._recovery)

    async def _warm_provider(self) -> None:
        """Import the configured vendor SDK in the background (it takes seconds), so the first
        run does not wait for it."""
        model = self.server.settings.effective_model() or ""
        vendor = model.split(":", 1)[0].lower() if ":" in model else "openai"
        modules = [{"anthropic": "anthropic", "claude": "anthropic"}.get(vendor, "openai")]
        if not model:
            modules = []
        if self.server.settings.mcpServers and self.server.init_options.trusted:
            modules += ["mcp.client.session", "mcp.client.stdio"]  # seconds to import, too
        if not modules:
            return
        for module in modules:
            try:
                await asyncio.to_thread(importlib.import_module, module)
            except Exception:
                logger.debug("warm_up.failed: %s", module, exc_info=True)

    async def _warm_first_run(self) -> None:
        """Make the first run as fast as the next ones, while the editor is still idle.

        Runs do not wait for this (only for the SDK import before it): the stores open their
        connections, the built-in agent is built once (tool schemas are cached by function,
        so every run after reuses them), and the provider builds its SDK client and opens its
        connection, probing the context window, before the first request needs them.
        """
        await self._imports_settled()
        await self._warm_run_path(self.server.settings)

    async def _warm_run_path(self, settings: LoviaSettings) -> None:
        try:
            await self.session_store.segments("")
            await self.checkpointer.load("")
            model = settings.effective_model()
            if model is None or (settings.agent or BUILTIN_CODING) != BUILTIN_CODING:
                return
            check_model(model)
            coding_agent(model, extra_tools=[ask_human(self.channel)])
            await (await Todo().setup()).aclose()
            folders = self.workspace.folders()
            if folders:
                self.workspace.config_for(folders[0]).tools()
            from lovia.providers import provider_from_string

            provider = provider_from_string(model)
            warm_up = getattr(provider, "warm_up", None)
            if warm_up is not None:
                await warm_up()
        except Exception:
            logger.debug("warm_up.first_run_failed", exc_info=True)

    async def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._warm_runs is not None:
            self._warm_runs.cancel()
        await self.supervisor.shutdown()
        await self.mcp.aclose()
        self.channel.close("server shutdown")
        if self._questions_task is not None:
            self._questions_task.cancel()
        await self.workspace.aclose()
        await self.restore_points.aclose()
        for closer in (self.session_store, self.checkpointer):
            aclose = getattr(closer, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except Exception:
                    logger.debug("store.close_failed", exc_info=True)
        await self.store.close()

    def settings_changed(self) -> None:
        self.workspace.settings_changed()
        if self.server.init_options.trusted:
            affected = self.mcp.configure(self.server.settings.mcpServers)
            if affected:
                logger.info("mcp.reconfigured: %s", ", ".join(affected))

    def cancel_from_progress(self, run_id: str) -> None:
        self.supervisor.stop(run_id)

    # ================================================================== requests

    async def _imports_settled(self) -> None:
        """Wait for the background SDK imports: importing the same package from two threads
        at once can hand one of them a partially initialised module."""
        if self._warm_up is not None and not self._warm_up.done():
            await asyncio.shield(self._warm_up)

    async def run(self, params: p.RunParams) -> p.LaunchResult:
        await self._imports_settled()
        folders = self.workspace.folders()
        if not folders:
            raise p.ProtocolError(
                p.PATH_OUTSIDE_WORKSPACE,
                "The editor has no workspace folder open",
                {"field": "cwd", "hint": "Open a folder in the editor first."},
            )
        cwd = self.workspace.resolve_cwd(params.cwd)
        session_id = await self.supervisor.claim_session(params.session_id)
        context = await self.workspace.context(params.context)
        spec = await self._spec(
            agent=params.agent, model=params.model, cwd=cwd, session_id=session_id
        )
        model_input = params.prompt if not context.text else f"{params.prompt}\n\n{context.text}"
        return await self.supervisor.start(
            session_id=session_id,
            prompt=params.prompt,
            model_input=model_input,
            spec=spec,
            max_turns=self.server.settings.maxTurns,
            context=context.summaries,
            new_session=params.session_id is None,
        )

    async def _spec(
        self,
        *,
        agent: str | None,
        model: str | None,
        cwd: Path,
        session_id: str,
    ) -> RunSpec:
        settings = self.server.settings
        folders = self.workspace.folders()
        root = self.workspace.root_for(cwd)
        choice = agent or settings.agent or BUILTIN_CODING
        model_label = model or settings.effective_model()
        if choice == BUILTIN_CODING:
            model_name = check_model(model_label)
            built = coding_agent(
                model_name,
                extra_tools=[ask_human(self.channel)],
                plugins=[*self._mcp_plugins(root), *self._subagent_plugins()],
            )
        elif choice == BUILTIN_DEMO:
            from lovia_server.demo import demo_agent

            built = demo_agent(root)
            model_label = "demo (scripted)"
        else:
            if not self.server.init_options.trusted:
                raise p.ProtocolError(
                    p.INVALID_PARAMS,
                    "User agents are only loaded in a trusted workspace",
                    {"field": "agent"},
                )
            built = load_user_agent(choice, folders)
            if model:
                built = built.clone(model=check_model(model))
            if model_label is None or not model:
                model_label = _model_label(built.model)
        built = await self.workspace.attach(built, root, session_id)
        window = self._context_window(built)
        return RunSpec(
            agent=built,
            agent_label=choice,
            model_label=model_label,
            root=root,
            cwd=cwd,
            context_window=window,
            price=price_for(model_label, prices_from_settings(settings.modelPrices)),
        )

    def _mcp_plugins(self, root: Path) -> list[Any]:
        servers = self.server.settings.mcpServers
        if not servers:
            return []
        if not self.server.init_options.trusted:
            if not self._warned_untrusted_mcp:
                self._warned_untrusted_mcp = True
                self.server.log_to_client(
                    "lovia: MCP servers (lovia.mcpServers) are not started in an untrusted "
                    "workspace",
                    lsp.MessageType.Warning,
                )
            return []
        if self.mcp.settings is not servers:
            self.mcp.configure(servers)
        if not any(self.mcp._enabled()):
            return []
        return [PooledMCP(self.mcp, root)]

    def _subagent_plugins(self) -> list[Any]:
        """The built-in agent's Subagents plugin (bare: children clone the agent), by setting."""
        limits = self.server.settings.subagents
        if not limits.active(self.server.init_options.trusted):
            return []
        from lovia.plugins.subagents import Subagents
        from lovia.reliability import RunBudget

        budget = RunBudget(max_total_tokens=limits.maxTotalTokens, max_seconds=limits.maxSeconds)
        return [
            Subagents(
                max_concurrent=limits.maxConcurrent,
                max_turns=limits.maxTurns,
                budget=budget,
            )
        ]

    def _context_window(self, agent: Any) -> int | None:
        from lovia.providers.base import context_window

        model = agent.model
        if model is None or isinstance(model, str):
            return None
        try:
            return context_window(model)
        except Exception:
            return None

    async def _spec_for_record(self, record: RunRecord) -> RunSpec:
        cwd = Path(record.cwd) if record.cwd else self.workspace.resolve_cwd(None)
        agent = record.agent if record.agent not in (None, BUILTIN_CODING) else None
        model = record.model if agent is None else None
        return await self._spec(agent=agent, model=model, cwd=cwd, session_id=record.session_id)

    async def steer(self, params: p.SteerParams) -> p.SteerResult:
        return await self.supervisor.steer(params.run_id, params.message)

    async def unsteer(self, params: p.UnsteerParams) -> p.UnsteerResult:
        return await self.supervisor.unsteer(params.run_id, params.message_id)

    async def approve(self, params: p.ApproveParams) -> p.ApproveResult:
        return await self.supervisor.approve(
            params.run_id, params.approval_id, params.decision, params.message, params.edits
        )

    async def answer(self, params: p.AnswerParams) -> p.AnswerResult:
        return await self.supervisor.answer(params.run_id, params.question_id, params.answer)

    async def cancel(self, params: p.RunIdParams) -> p.CancelResult:
        return await self.supervisor.cancel(params.run_id)

    async def resume(self, params: p.RunIdParams) -> p.LaunchResult:
        await self._imports_settled()
        return await self.supervisor.resume(
            params.run_id, self._spec_for_record, max_turns=self.server.settings.maxTurns
        )

    async def replay(self, params: p.ReplayParams) -> p.ReplayResult:
        return await self.supervisor.replay(params.run_id, params.after_seq)

    async def sessions(self, params: p.SessionsParams) -> p.SessionsResult:
        return await self.supervisor.list_sessions(
            limit=params.limit, offset=params.offset, query=params.query
        )

    async def session(self, params: p.SessionParams) -> p.SessionResult:
        return await self.supervisor.session_view(params.session_id)

    async def delete_session(self, params: p.SessionParams) -> p.DeleteSessionResult:
        result = await self.supervisor.delete_session(params.session_id)
        if result.deleted:
            await self.workspace.close_session(params.session_id)
            await self._restore_points_ready()
            await self.restore_points.delete_session(params.session_id)
        return result

    async def checkpoints(self, params: p.SessionParams) -> p.CheckpointsResult:
        await self._restore_points_ready()
        if await self.store.get_session(params.session_id) is None:
            raise p.ProtocolError(
                p.RUN_NOT_FOUND,
                f"Unknown session {params.session_id}",
                {"sessionId": params.session_id},
            )
        return await self.restore_points.checkpoints(params.session_id)

    async def restore_preview(self, params: p.CheckpointParams) -> p.RestorePreviewResult:
        await self._restore_points_ready()
        return await self.restore_points.preview(params.checkpoint_id)

    async def restore(self, params: p.RestoreParams) -> p.RestoreResult:
        await self._restore_points_ready()
        return await self.restore_points.restore(params, self.supervisor.cut_conversation)

    async def status(self, params: p.StatusParams) -> p.StatusResult:
        settings = self.server.settings
        return p.StatusResult(
            version=lovia.__version__,
            protocol_version=p.PROTOCOL_VERSION,
            model=settings.effective_model(),
            agent=settings.agent or BUILTIN_CODING,
            state_dir=str(self.state_dir),
            approvals=self.server.init_options.approval_mode,
            edit_mode=self.workspace.edit_mode(),
            folders=self.workspace.describe(),
            live_runs=self.supervisor.live_runs(),
            session_rules=self.supervisor.rules_view(),
            settings_problems=list(self.server.settings_problems),
            mcp_servers=self._mcp_view(),
            sandbox=sandbox_status(settings.sandbox),
            delivery=self._delivery(),
        )

    def _delivery(self) -> p.DeliveryStats | None:
        stats = self.editor.writer_stats()
        if stats is None:
            return None
        return p.DeliveryStats(
            queued_bytes=stats["queued"],
            limit_bytes=stats["limit"],
            dropped_events=stats["dropped"],
            dropped_bytes=stats["droppedBytes"],
            skipped_deltas=self.publisher.skipped,
        )

    def _mcp_view(self) -> list[p.MCPServerInfo]:
        folders = self.workspace.folders()
        if self.mcp.settings is not self.server.settings.mcpServers:
            self.mcp.configure(self.server.settings.mcpServers)  # never starts a server
        if not self.server.init_options.trusted:
            return [
                info.model_copy(update={"state": "stopped", "error": _UNTRUSTED_MCP})
                for info in self.mcp.infos(None)
            ]
        return self.mcp.infos(self.workspace.root_for(folders[0]) if folders else None)

    async def mcp_restart(self, params: p.MCPRestartParams) -> p.MCPRestartResult:
        if not self.server.init_options.trusted:
            raise p.invalid_params(_UNTRUSTED_MCP, "name")
        folders = self.workspace.folders()
        if not folders:
            raise p.invalid_params("The editor has no workspace folder open", "name")
        if self.mcp.settings is not self.server.settings.mcpServers:
            self.mcp.configure(self.server.settings.mcpServers)
        info = await self.mcp.restart(params.name, self.workspace.root_for(folders[0]))
        return p.MCPRestartResult(server=info)


_UNTRUSTED_MCP = UNTRUSTED_MCP


def _state_dir(server: LoviaServer) -> Path:
    configured = server.init_options.stateDir
    if configured:
        return Path(configured).expanduser()
    return default_state_dir(server.folders[0] if server.folders else None)


def _model_label(model: Any) -> str | None:
    if model is None:
        return None
    if isinstance(model, str):
        return model
    return str(
        getattr(model, "model", None) or getattr(model, "name", None) or type(model).__name__
    )


__all__ = ["ServerRuntime"]
