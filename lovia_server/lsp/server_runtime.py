"""ServerRuntime: the language server's front door over the host core.

Built on ``initialized``: the editor's pieces (the LSP editor port and event sink, the editor
workspace, restore points) as the :class:`~lovia_server.host.core.DoorPorts` the host is
opened on (:meth:`HostCore.open <lovia_server.host.core.HostCore.open>` assembles the rest).
Each request method resolves what the request names (folders, cwd, context, runs) and hands
it to the host.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

import lovia
from lovia_server import protocol as p
from lovia_server.host.agent_factory import AgentChoice, AgentFactory
from lovia_server.host.agents import BUILTIN_CODING
from lovia_server.host.core import DoorPorts, HostCore
from lovia_server.host.event_log import Publisher
from lovia_server.host.sandbox_setup import sandbox_status
from lovia_server.host.store import RunRecord, ServerStore
from lovia_server.host.supervisor import RunSupervisor
from lovia_server.host.worktree_runs import WorktreeRequest, WorktreeRuns
from lovia_server.lsp.editor_port import LspEditor
from lovia_server.lsp.editor_workspace import EditorWorkspace
from lovia_server.lsp.restore_point_service import LiveRun, RestorePointService
from lovia_server.protocol.settings import default_state_dir

if TYPE_CHECKING:
    from lovia_server.lsp.language_server import LoviaServer

logger = logging.getLogger("lovia_server.lsp.server_runtime")


class EditorPlaces:
    """Where the editor's runs work: the workspace's folders, whatever the conversation."""

    def __init__(self, workspace: EditorWorkspace) -> None:
        self.workspace = workspace

    def folders(self, session_id: str) -> list[Path]:
        return self.workspace.folders()

    def default_cwd(self, session_id: str) -> Path:
        return self.workspace.resolve_cwd(None)

    def root_for(self, session_id: str, cwd: Path) -> Path:
        return self.workspace.root_for(cwd)

    def resumed_cwd(self, record: RunRecord, worktree: Path | None) -> Path | None:
        return Path(record.cwd) if record.cwd else None

    def choice(self, session_id: str) -> AgentChoice:
        return AgentChoice()  # each lovia/run names its agent and model


class ServerRuntime:
    """The language server's front door: LSP requests in, the host core's runs out."""

    core: HostCore
    """Opened by :meth:`start`."""

    def __init__(self, server: LoviaServer, state_dir: Path) -> None:
        self.server = server
        self.state_dir = state_dir
        self.editor = LspEditor(server)
        self.workspace = EditorWorkspace(
            server, on_output=lambda *args: self.supervisor.tool_output(*args)
        )
        self.restore_points = RestorePointService(
            server,
            self.workspace,
            state_dir / "restore-points",
            live_runs=lambda: [
                LiveRun(t.run_id, t.session_id, t.root) for t in self.supervisor.live_turns()
            ],
            never_store=(state_dir,),
        )
        self._recovery: asyncio.Task[None] | None = None

    def ports(self) -> DoorPorts:
        server = self.server
        return DoorPorts(
            editor=self.editor,
            sink=self.editor,
            workspace=self.workspace,
            places=EditorPlaces(self.workspace),
            attach=lambda agent, place: self.workspace.attach(agent, place.root, place.session_id),
            policy=lambda root: self.workspace.config_for(root).policy,
            unsaved=self.workspace.unsaved_paths,
            restore=self.restore_points,
            trusted=lambda: server.init_options.trusted,
            mcp_refused=lambda: server.log_to_client(
                "lovia: MCP servers (lovia.mcpServers) are not started in an untrusted workspace",
                lsp.MessageType.Warning,
            ),
        )

    @classmethod
    async def start(cls, server: LoviaServer) -> ServerRuntime:
        state_dir = _state_dir(server)
        runtime = cls(server, state_dir)
        runtime.core = await HostCore.open(state_dir, runtime.ports(), lambda: server.settings)
        await runtime.core.start(warm_workspace=runtime._warm_workspace)
        # Finish a restore a crash interrupted (in the background: start-up stays quick).
        runtime._recovery = asyncio.get_running_loop().create_task(runtime._recover_restores())
        return runtime

    @property
    def store(self) -> ServerStore:
        return self.core.store

    @property
    def supervisor(self) -> RunSupervisor:
        return self.core.supervisor

    @property
    def publisher(self) -> Publisher:
        return self.core.publisher

    @property
    def agents(self) -> AgentFactory:
        return self.core.agents

    @property
    def worktrees(self) -> WorktreeRuns:
        return self.core.worktrees

    def _warm_workspace(self) -> None:
        folders = self.workspace.folders()
        if folders:
            self.workspace.config_for(folders[0]).tools()

    async def _recover_restores(self) -> None:
        try:
            await self.restore_points.recover()
        except Exception:
            logger.warning("restore_points.recover_failed", exc_info=True)

    async def _restore_points_ready(self) -> None:
        if self._recovery is not None and not self._recovery.done():
            await asyncio.shield(self._recovery)

    async def shutdown(self) -> None:
        if self.core.stopped:
            return
        await self.core.stop("server shutdown")
        await self.restore_points.aclose()
        await self.core.close_stores()

    def settings_changed(self) -> None:
        self.workspace.settings_changed()
        self.core.mcp.settings_changed()

    def cancel_from_progress(self, run_id: str) -> None:
        self.supervisor.stop(run_id)

    # ================================================================== requests

    async def run(self, params: p.RunParams) -> p.LaunchResult:
        await self.core.imports_settled()
        folders = self.workspace.folders()
        if not folders:
            raise p.ProtocolError(
                p.PATH_OUTSIDE_WORKSPACE,
                "The editor has no workspace folder open",
                {"field": "cwd", "hint": "Open a folder in the editor first."},
            )
        cwd = self.workspace.resolve_cwd(params.cwd)
        if params.session_id is not None:
            worktree = await self.worktrees.of_session(params.session_id)
            if worktree is not None:
                # a prompt in a worktree run's session runs in the same worktree: ``at`` is in
                # it (the request's own ``cwd`` names the workspace's folders)
                return await self.worktrees.follow_up(worktree, lambda at: self._launch(params, at))
        if params.isolation == "worktree":
            return await self._run_in_worktree(params, cwd)
        return await self._launch(params, cwd)

    async def _launch(self, params: p.RunParams, cwd: Path) -> p.LaunchResult:
        session_id = await self.supervisor.claim_session(params.session_id)
        context = await self.workspace.context(params.context)
        spec = await self.agents.for_run(session_id, cwd, agent=params.agent, model=params.model)
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

    async def _run_in_worktree(self, params: p.RunParams, cwd: Path) -> p.LaunchResult:
        if params.session_id is not None:
            raise p.invalid_params(
                "A worktree run starts a conversation of its own: steer it, or omit sessionId "
                "(a follow-up in a worktree run's session continues in its worktree)",
                "sessionId",
            )
        context = await self.workspace.context(params.context)
        model_input = params.prompt if not context.text else f"{params.prompt}\n\n{context.text}"
        return await self.worktrees.start(
            WorktreeRequest(
                prompt=params.prompt,
                model_input=model_input,
                cwd=cwd,
                agent=params.agent,
                model=params.model,
                include_uncommitted=params.include_uncommitted,
            )
        )

    async def steer(self, params: p.SteerParams) -> p.SteerResult:
        return await self.supervisor.steer(params.run_id, params.message)

    async def unsteer(self, params: p.UnsteerParams) -> p.UnsteerResult:
        return await self.supervisor.unsteer(params.run_id, params.message_id)

    async def approve(self, params: p.ApproveParams) -> p.ApproveResult:
        return await self.supervisor.approve(params)

    async def answer(self, params: p.AnswerParams) -> p.AnswerResult:
        return await self.supervisor.answer(params.run_id, params.question_id, params.answer)

    async def cancel(self, params: p.RunIdParams) -> p.CancelResult:
        if await self.worktrees.cancel_queued(params.run_id):
            return p.CancelResult(run_id=params.run_id, status="cancelling")
        return await self.supervisor.cancel(params.run_id)

    async def resume(self, params: p.RunIdParams) -> p.LaunchResult:
        await self.core.imports_settled()
        if await self.worktrees.owns(params.run_id):
            return await self.worktrees.resume(params.run_id)
        return await self.core.resume(params.run_id)

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
            await self.worktrees.forget_session(params.session_id)
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
            worktrees=await self.worktrees.counts(),
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
        return self.core.mcp.infos(self.workspace.root_for(folders[0]) if folders else None)

    async def mcp_restart(self, params: p.MCPRestartParams) -> p.MCPRestartResult:
        folders = self.workspace.folders()
        root = self.workspace.root_for(folders[0]) if folders else None
        return p.MCPRestartResult(server=await self.core.mcp.restart(params.name, root))

    # ================================================================== worktree runs

    async def worktree_list(self, params: p.WorktreeListParams) -> p.WorktreeListResult:
        return await self.worktrees.listing(params.include_closed)

    async def worktree_diff(self, params: p.WorktreeRunParams) -> p.WorktreeDiffResult:
        return await self.worktrees.diff(params.run_id)

    async def worktree_apply(self, params: p.WorktreeApplyParams) -> p.WorktreeApplyResult:
        await self._restore_points_ready()
        return await self.worktrees.apply(params)

    async def worktree_discard(self, params: p.WorktreeRunParams) -> p.WorktreeDiscardResult:
        return await self.worktrees.discard(params.run_id)

    async def worktree_keep(self, params: p.WorktreeRunParams) -> p.WorktreeKeepResult:
        return await self.worktrees.keep(params.run_id)


def _state_dir(server: LoviaServer) -> Path:
    configured = server.init_options.stateDir
    if configured:
        return Path(configured).expanduser()
    return default_state_dir(server.folders[0] if server.folders else None)


__all__ = ["ServerRuntime"]
