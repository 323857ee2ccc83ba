"""HostCore: what every front door runs on, assembled once (:meth:`HostCore.open`) whether the
editor speaks LSP or ACP.

It owns the state database's stores (runs and event logs, the conversation sessions, the
checkpoints), the event publisher, the run supervisor, the agent factory (every run's agent
spec, resumed runs' too), the worktree runs and the subagents' worktrees, the MCP policy and its
pools, and the warm-up that makes the first run as quick as the next. A front door brings only
what its protocol decides, as :class:`DoorPorts`: the editor (approvals, progress), the event
sink (how stored events reach the client), the workspace (folders, buffers, edits), where its
conversations work and, for the language server, restore points; it reads the settings through
a callable so a change applies to the next run.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lovia.stores import SQLiteCheckpointer, SQLiteSession
from lovia.tools.human import HumanChannel, ask_human
from lovia_server.host.agent_factory import AgentFactory, Attach, ExtraPlugins, RunPlaces
from lovia_server.host.agents import BUILTIN_CODING, check_model, coding_agent
from lovia_server.host.event_log import EventSink, Publisher
from lovia_server.host.mcp_policy import MCPPolicy
from lovia_server.host.ports import EditorPort, FolderRestorePoints, WorkspacePort
from lovia_server.host.store import ServerStore
from lovia_server.host.supervisor import RunSupervisor
from lovia_server.host.worktree_children import WorktreeChildren
from lovia_server.host.worktree_runs import Gate, Policy, WorktreeRuns

if TYPE_CHECKING:
    from lovia_server import protocol as p
    from lovia_server.host.worktree_store import WorktreeRecord
    from lovia_server.protocol.settings import LoviaSettings

logger = logging.getLogger("lovia_server.host")

DEMO_MODEL = "demo"
"""A model name that is the scripted demo agent: no SDK to import, no key to check."""


class HostWorkspace(WorkspacePort, Protocol):
    """The front door's workspace as the core closes it."""

    async def close_session(self, session_id: str) -> None: ...

    async def aclose(self) -> None: ...


def _always() -> bool:
    return True


def _nothing_unsaved(root: Path) -> list[str]:
    return []


@dataclass
class DoorPorts:
    """What a front door brings to the host; everything else the host builds itself."""

    editor: EditorPort
    sink: EventSink
    workspace: HostWorkspace
    places: RunPlaces
    """Where the door's conversations work, and any agent a conversation picked itself."""
    attach: Attach
    """Binds an agent without a workspace to the conversation's."""
    policy: Policy
    """A workspace root's policy: what a worktree run never carries nor lands."""
    extra_plugins: ExtraPlugins | None = None
    unsaved: Callable[[Path], list[str]] = field(default=_nothing_unsaved)
    """A root's files with unsaved edits in the editor (a worktree run starts without them)."""
    restore: FolderRestorePoints | None = None
    trusted: Callable[[], bool] = field(default=_always)
    mcp_refused: Callable[[], None] | None = None


class HostCore:
    def __init__(
        self,
        state_dir: Path,
        store: ServerStore,
        ports: DoorPorts,
        settings: Callable[[], LoviaSettings],
    ) -> None:
        """Use :meth:`open`; nothing runs until :meth:`start`."""
        self.state_dir = state_dir
        self.store = store
        self.settings = settings
        self.trusted = ports.trusted
        self.workspace = ports.workspace
        db = state_dir / "state.db"
        self.session_store = SQLiteSession(db)
        self.checkpointer = SQLiteCheckpointer(db)
        self.channel = HumanChannel()
        self.publisher = Publisher(store, ports.sink)
        self.supervisor = RunSupervisor(
            store=store,
            session_store=self.session_store,
            checkpointer=self.checkpointer,
            publisher=self.publisher,
            editor=ports.editor,
            workspace=ports.workspace,
            questions=self.channel,
            approval_timeout=lambda: settings().approvalTimeoutSeconds,
            restore=ports.restore,
        )
        self.mcp = MCPPolicy(
            log_dir=state_dir / "mcp-logs",
            notify=self.supervisor.emit_to_session,
            settings=settings,
            trusted=ports.trusted,
            refused=ports.mcp_refused,
        )
        self.worktrees = WorktreeRuns(
            state_dir=state_dir,
            store=store,
            supervisor=self.supervisor,
            max_concurrent=lambda: settings().worktrees.maxConcurrent,
            policy=ports.policy,
            unsaved=ports.unsaved,
            restore_point=ports.restore.snapshot if ports.restore is not None else None,
            drop_root=ports.restore.drop_root if ports.restore is not None else None,
            launch=self._launch_worktree,
            resume=self.resume,
        )
        self.agents = AgentFactory(
            self,
            places=ports.places,
            attach=ports.attach,
            extra_plugins=ports.extra_plugins,
            worktree_root=self.worktrees.root_of,
        )
        # Subagents may work in worktrees of their own, listed and landed like these runs.
        self.supervisor.subagents.isolation = WorktreeChildren(self.worktrees, self.supervisor)
        self._imports: asyncio.Task[None] | None = None
        self._questions: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    @classmethod
    async def open(
        cls, state_dir: Path, ports: DoorPorts, settings: Callable[[], LoviaSettings]
    ) -> HostCore:
        """The host over ``state_dir``'s database (created if missing), on a door's ports."""
        return cls(state_dir, await cls.open_store(state_dir), ports, settings)

    @staticmethod
    async def open_store(state_dir: Path) -> ServerStore:
        await asyncio.to_thread(state_dir.mkdir, parents=True, exist_ok=True)
        store = ServerStore(state_dir / "state.db")
        await store.open()
        return store

    # ================================================================== runs both doors start

    async def resume(self, run_id: str, gate: Gate | None = None) -> p.LaunchResult:
        """Continue a stored run from its checkpoint, with the agent it ran with (or the one
        its conversation picked since); its tools wait for ``gate``."""
        return await self.supervisor.resume(
            run_id, self.agents.for_record, max_turns=self.settings().maxTurns, gate=gate
        )

    async def _launch_worktree(
        self, record: WorktreeRecord, cwd: Path, gate: Gate
    ) -> p.LaunchResult:
        """Start a recorded worktree run with the worktree as its workspace (its tools wait
        for ``gate``: the checkout)."""
        request = record.request
        spec = await self.agents.for_run(
            record.session_id,
            cwd,
            agent=request.get("agent"),
            model=request.get("model"),
            worktree=Path(record.path),
        )
        return await self.supervisor.start(
            session_id=record.session_id,
            prompt=record.prompt,
            model_input=request.get("modelInput") or record.prompt,
            spec=spec,
            max_turns=self.settings().maxTurns,
            # a run in a conversation of its own (the language server's) has no runs before it
            new_session=await self.store.get_session(record.session_id) is None,
            run_id=record.run_id,
            gate=gate,
        )

    async def start(self, *, warm_workspace: Callable[[], object] | None = None) -> None:
        """Recover what a previous process left running, serve ``ask_human`` questions, and
        warm the provider in the background (``warm_workspace`` builds the workspace's tools
        once, where the front door knows a folder)."""
        await self.supervisor.recover()
        self._questions = self._spawn(self.supervisor.serve_questions())
        self._imports = self._spawn(self._import_sdks())
        self._spawn(self._warm_first_run(warm_workspace))
        # Resume the worktree runs a crash interrupted (docs/worktrees.md), in the background.
        self._spawn(self._recover_worktrees())

    async def _recover_worktrees(self) -> None:
        try:
            await self.imports_settled()
            await self.worktrees.recover()
        except Exception:
            logger.warning("worktrees.recover_failed", exc_info=True)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ================================================================== warm-up

    def _sdk_modules(self) -> list[str]:
        model = self.settings().effective_model() or ""
        modules: list[str] = []
        if model and model != DEMO_MODEL:
            vendor = model.split(":", 1)[0].lower() if ":" in model else "openai"
            modules.append({"anthropic": "anthropic", "claude": "anthropic"}.get(vendor, "openai"))
        if self.settings().mcpServers and self.trusted():
            modules += ["mcp.client.session", "mcp.client.stdio"]  # seconds to import, too
        return modules

    async def _import_sdks(self) -> None:
        """Import the configured vendor SDK in the background (it takes seconds), so the first
        run does not wait for it."""
        modules = self._sdk_modules()
        for module in modules:
            try:
                await asyncio.to_thread(importlib.import_module, module)
            except Exception:
                logger.debug("warm_up.failed: %s", module, exc_info=True)

    async def imports_settled(self) -> None:
        """Wait for the background SDK imports: importing the same package from two threads
        at once can hand one of them a partially initialised module."""
        if self._imports is not None and not self._imports.done():
            await asyncio.shield(self._imports)

    async def _warm_first_run(self, warm_workspace: Callable[[], object] | None) -> None:
        """Make the first run as fast as the next ones, while the editor is still idle.

        Runs do not wait for this (only for the SDK import before it): the stores open their
        connections, the built-in agent is built once (tool schemas are cached by function,
        so every run after reuses them), and the provider builds its SDK client and opens its
        connection, probing the context window, before the first request needs them.
        """
        await self.imports_settled()
        await self._warm_run_path(warm_workspace)

    async def _warm_run_path(self, warm_workspace: Callable[[], object] | None) -> None:
        from lovia.plugins.todo import Todo

        settings = self.settings()
        try:
            await self.session_store.segments("")
            await self.checkpointer.load("")
            model = settings.effective_model()
            if model in (None, DEMO_MODEL) or (settings.agent or BUILTIN_CODING) != BUILTIN_CODING:
                return
            check_model(model)
            coding_agent(model, extra_tools=[ask_human(self.channel)])
            await (await Todo().setup()).aclose()
            if warm_workspace is not None:
                warm_workspace()
            from lovia.providers import provider_from_string

            provider = provider_from_string(model)
            warm_up = getattr(provider, "warm_up", None)
            if warm_up is not None:
                await warm_up()
        except Exception:
            logger.debug("warm_up.first_run_failed", exc_info=True)

    # ================================================================== sessions, shutdown

    async def close_session(self, session_id: str) -> None:
        """A conversation is closed or forgotten: its workspace session and the MCP servers it
        brought itself go."""
        await self.workspace.close_session(session_id)
        await self.mcp.close_session(session_id)

    @property
    def stopped(self) -> bool:
        return self._closed

    async def stop(self, reason: str) -> None:
        """Live runs stop resumable, MCP servers stop, waiting questions end with ``reason``;
        then the workspace closes. The stores stay open (:meth:`close_stores`)."""
        if self._closed:
            return
        self._closed = True
        await self.worktrees.aclose()
        for task in list(self._tasks):
            if task not in (self._imports, self._questions):
                task.cancel()  # the warm-up: nothing waits for it
        await self.supervisor.shutdown()
        await self.mcp.aclose()
        self.channel.close(reason)
        if self._questions is not None:
            self._questions.cancel()
        await self.workspace.aclose()

    async def close_stores(self) -> None:
        for closer in (self.session_store, self.checkpointer):
            aclose = getattr(closer, "aclose", None)
            if aclose is not None:
                try:
                    await aclose()
                except Exception:
                    logger.debug("store.close_failed", exc_info=True)
        await self.store.close()


__all__ = ["DEMO_MODEL", "DoorPorts", "HostCore", "HostWorkspace"]
