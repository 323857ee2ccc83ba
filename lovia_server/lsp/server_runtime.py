"""ServerRuntime: the language server's front door over the host core.

Built on ``initialized``: the editor's pieces (the LSP editor port and event sink, the editor
workspace, restore points) as the :class:`~lovia_server.host.core.DoorPorts` the host is
opened on (:meth:`HostCore.open <lovia_server.host.core.HostCore.open>` assembles the rest).
The requests are served by the handlers of :mod:`lovia_server.lsp.handlers`, one function a
method, over this runtime.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from lovia_server.host.agent_factory import AgentChoice
from lovia_server.host.core import DoorPorts, HostCore
from lovia_server.host.store import RunRecord
from lovia_server.lsp.action_commands import ActionDesk
from lovia_server.lsp.editor_port import LspEditor
from lovia_server.lsp.editor_workspace import EditorWorkspace
from lovia_server.lsp.restore_point_service import LiveRunPlace, RestorePointService
from lovia_server.protocol.settings import default_state_dir

if TYPE_CHECKING:
    from lovia_server.lsp.client_state import LspClient

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
        # each lovia/run names its agent and model; its mode holds for the conversation
        return AgentChoice(plan=session_id in self.workspace.plan_sessions)

    def continue_plan(self, session_id: str) -> None:
        self.workspace.plan_sessions.add(session_id)


class ServerRuntime:
    """The language server's front door: LSP requests in, the host core's runs out."""

    core: HostCore
    """Opened by :meth:`start`."""

    def __init__(self, server: LspClient, state_dir: Path) -> None:
        self.server = server
        self.state_dir = state_dir
        self.editor = LspEditor(server, state_dir)
        self.workspace = EditorWorkspace(
            server, on_output=lambda *args: self.core.supervisor.tool_output(*args)
        )
        self.restore_points = RestorePointService(
            server,
            self.workspace,
            state_dir / "restore-points",
            live_runs=lambda: [
                LiveRunPlace(t.run_id, t.session_id, t.root)
                for t in self.core.supervisor.live_turns()
            ],
            never_store=(state_dir,),
        )
        self._recovery: asyncio.Task[None] | None = None
        self.actions = ActionDesk(self)
        """The code actions' menu and commands."""

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
    async def start(cls, server: LspClient) -> ServerRuntime:
        state_dir = _state_dir(server)
        runtime = cls(server, state_dir)
        runtime.core = await HostCore.open(state_dir, runtime.ports(), lambda: server.settings)
        await runtime.core.start(warm_workspace=runtime._warm_workspace)
        # Finish a restore a crash interrupted (in the background: start-up stays quick).
        runtime._recovery = asyncio.get_running_loop().create_task(runtime._recover_restores())
        return runtime

    def _warm_workspace(self) -> None:
        folders = self.workspace.folders()
        if folders:
            self.workspace.config_for(folders[0]).tools()

    async def _recover_restores(self) -> None:
        try:
            await self.restore_points.recover()
        except Exception:
            logger.warning("restore_points.recover_failed", exc_info=True)

    async def restore_points_ready(self) -> None:
        """Wait for the restore a crash interrupted to be finished (requests on points do)."""
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
        self.core.supervisor.stop(run_id)


def _state_dir(server: LspClient) -> Path:
    configured = server.init_options.stateDir
    if configured:
        return Path(configured).expanduser()
    return default_state_dir(server.folders[0] if server.folders else None)


__all__ = ["ServerRuntime"]
