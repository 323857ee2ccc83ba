"""AgentFactory: a run's agent and what its record shows, built one way for every front door.

The agent is the built-in coding agent (with ``ask_human``, the MCP policy's plugin and, by
setting, subagents), the scripted demo, or a user agent from the workspace's agent file
(trusted workspaces only). The front door says where its conversations work
(:class:`RunPlaces`: the host adds the worktree a run is in), how an agent is bound to that
conversation's workspace, and any plugins of its own (ACP's skills).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lovia.agent import Agent
from lovia.tools.human import ask_human
from lovia_server import protocol as p
from lovia_server.host.agents import (
    BUILTIN_CODING,
    BUILTIN_DEMO,
    check_model,
    coding_agent,
    load_user_agent,
)
from lovia_server.host.plan_runs import PlanRefusedPlugin
from lovia_server.host.ports import RunSpec
from lovia_server.host.prices import price_for, prices_from_settings

if TYPE_CHECKING:
    from lovia.plugins.base import Plugin
    from lovia_server.host.core import HostCore
    from lovia_server.host.store import RunRecord
    from lovia_server.protocol.settings import InvalidMCPServerSetting, MCPServerSetting

DEMO_LABEL = "demo (scripted)"
"""The model label of the scripted demo agent's runs."""


@dataclass(frozen=True)
class RunPlace:
    """Where a run works: its conversation, its workspace folder and working directory, and
    every folder a user agent's file may be loaded from."""

    session_id: str
    root: Path
    cwd: Path
    folders: list[Path] = field(default_factory=list)


Attach = Callable[[Agent[Any], RunPlace], Awaitable[Agent[Any]]]
ExtraPlugins = Callable[[RunPlace], Awaitable[list["Plugin"]]]
MCPServers = Mapping[str, "MCPServerSetting | InvalidMCPServerSetting"]


@dataclass(frozen=True)
class AgentChoice:
    """What a conversation picked itself (ACP's model picker and session MCP servers)."""

    agent: str | None = None
    model: str | None = None
    mcp_servers: MCPServers | None = None
    picked: bool = False
    """The pick overrides the agent and model a stored run ran on."""
    plan: bool = False
    """The conversation is in plan mode (its workspace is): a stored run continues in it."""


class RunPlaces(Protocol):
    """Where a front door's conversations work (a session the door does not know raises)."""

    def folders(self, session_id: str) -> list[Path]:
        """Every folder a user agent's file may be loaded from."""
        ...

    def default_cwd(self, session_id: str) -> Path:
        """Where a run works when nothing names a directory."""
        ...

    def root_for(self, session_id: str, cwd: Path) -> Path:
        """The workspace folder ``cwd`` is in."""
        ...

    def resumed_cwd(self, record: RunRecord, worktree: Path | None) -> Path | None:
        """Where a stored run continues (``None``: :meth:`default_cwd`); ``worktree``: the one
        it worked in, if any."""
        ...

    def choice(self, session_id: str) -> AgentChoice:
        """The conversation's own pick, if any."""
        ...

    def continue_plan(self, session_id: str) -> None:
        """A stored plan-mode run continues (after a restart, say): the conversation's workspace
        is in plan mode again, whatever the door last knew."""
        ...


class AgentFactory:
    def __init__(
        self,
        core: HostCore,
        *,
        places: RunPlaces,
        attach: Attach,
        extra_plugins: ExtraPlugins | None = None,
        worktree_root: Callable[[Path], Path | None] = lambda cwd: None,
    ) -> None:
        """``attach`` binds an agent without a workspace to the conversation's; the built-in
        agent also gets ``extra_plugins``; ``worktree_root`` is the host's worktree a
        directory is in."""
        self.core = core
        self.places = places
        self.attach = attach
        self.extra_plugins = extra_plugins
        self.worktree_root = worktree_root

    def place(
        self, session_id: str, cwd: Path | None = None, *, worktree: Path | None = None
    ) -> RunPlace:
        """Where a run of ``session_id`` in ``cwd`` works: in its worktree when it is in one."""
        places = self.places
        cwd = cwd or places.default_cwd(session_id)
        root = worktree or self.worktree_root(cwd) or places.root_for(session_id, cwd)
        return RunPlace(session_id, root, cwd, places.folders(session_id))

    async def for_run(
        self,
        session_id: str,
        cwd: Path | None = None,
        *,
        agent: str | None = None,
        model: str | None = None,
        worktree: Path | None = None,
        record: RunRecord | None = None,
        plan: bool = False,
    ) -> RunSpec:
        """A run's agent: the request's ``agent`` and ``model``, else the conversation's pick,
        else (``record``: a stored run continues) the agent and model it ran with. ``plan``: a
        plan-mode run (the front door has put the conversation's workspace in plan mode)."""
        place = self.place(session_id, cwd, worktree=worktree)
        choice = self.places.choice(session_id)
        plan = plan or choice.plan
        if record is not None and not choice.picked:
            spec = await self.spec_for_record(place, record, choice.mcp_servers, plan=plan)
        else:
            spec = await self.spec(
                place,
                agent=agent or choice.agent,
                model=model or choice.model,
                mcp_servers=choice.mcp_servers,
                plan=plan,
            )
        return spec

    async def for_record(self, record: RunRecord) -> RunSpec:
        """The agent a stored run continues with (``RunSupervisor.resume``'s ``spec_for``)."""
        worktree = self.worktree_root(Path(record.cwd)) if record.cwd else None
        cwd = self.places.resumed_cwd(record, worktree)
        plan = record.mode == "plan"
        if plan:
            self.places.continue_plan(record.session_id)
        return await self.for_run(record.session_id, cwd, record=record, plan=plan)

    async def spec(
        self,
        place: RunPlace,
        *,
        agent: str | None = None,
        model: str | None = None,
        mcp_servers: Mapping[str, MCPServerSetting | InvalidMCPServerSetting] | None = None,
        plan: bool = False,
    ) -> RunSpec:
        """The run's agent: ``agent`` (else the ``agent`` setting, else the built-in one) with
        ``model`` (else the configured model, or the user agent's own); ``mcp_servers`` are
        the conversation's own servers, on top of the settings'. ``plan``: MCP tools are
        refused (:mod:`lovia_server.host.plan_runs`)."""
        settings = self.core.settings()
        choice = agent or settings.agent or BUILTIN_CODING
        label = model or settings.effective_model()
        if choice == BUILTIN_CODING:
            built = coding_agent(
                check_model(label),
                extra_tools=[ask_human(self.core.channel)],
                plugins=await self._builtin_plugins(place, mcp_servers, plan=plan),
                provider_options=settings.provider_options(),
            )
        elif choice == BUILTIN_DEMO:
            from lovia_server.host.demo_model import demo_agent

            built, label = demo_agent(place.root), DEMO_LABEL
        else:
            if not self.core.trusted():
                raise p.ProtocolError(
                    p.INVALID_PARAMS,
                    "User agents are only loaded in a trusted workspace",
                    {"field": "agent"},
                )
            built = load_user_agent(choice, place.folders)
            if model:
                built = built.clone(model=check_model(model))
            label = model or model_label(built.model)
        built = await self.attach(built, place)
        return RunSpec(
            agent=built,
            agent_label=choice,
            model_label=label,
            root=place.root,
            cwd=place.cwd,
            context_window=context_window_of(built),
            price=price_for(
                label,
                prices_from_settings(settings.modelPrices),
                long_cache=choice == BUILTIN_CODING and settings.long_cache(),
            ),
            plan=plan,
        )

    async def spec_for_record(
        self,
        place: RunPlace,
        record: RunRecord,
        mcp_servers: Mapping[str, MCPServerSetting | InvalidMCPServerSetting] | None = None,
        *,
        plan: bool = False,
    ) -> RunSpec:
        """The agent a stored run continues with: its own agent, or the built-in one with the
        model it ran on."""
        agent = record.agent if record.agent not in (None, BUILTIN_CODING) else None
        model = record.model if agent is None else None
        return await self.spec(place, agent=agent, model=model, mcp_servers=mcp_servers, plan=plan)

    async def _builtin_plugins(
        self,
        place: RunPlace,
        mcp_servers: Mapping[str, MCPServerSetting | InvalidMCPServerSetting] | None,
        *,
        plan: bool = False,
    ) -> list[Plugin]:
        plugins = self.core.mcp.plugins(place.root, place.session_id, mcp_servers)
        if plan:
            plugins = [PlanRefusedPlugin(plugin) for plugin in plugins]
        plugins += self._subagents()
        plugins.append(self._project_hooks(place))
        if self.extra_plugins is not None:
            plugins += await self.extra_plugins(place)
        return plugins

    def _project_hooks(self, place: RunPlace) -> Plugin:
        """The user's hooks, and the workspace's own in a trusted workspace only."""
        from lovia.workspace.project_hooks import ProjectHooksPlugin

        return ProjectHooksPlugin(place.root, workspace=self.core.trusted())

    def _subagents(self) -> list[Plugin]:
        """The built-in agent's Subagents plugin (bare: children clone the agent), by setting."""
        limits = self.core.settings().subagents
        if not limits.active(self.core.trusted()):
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


def model_label(model: Any) -> str | None:
    """How a run record names an agent's model: the string it was given, else the provider's
    model name."""
    if model is None or isinstance(model, str):
        return model
    return str(
        getattr(model, "model", None) or getattr(model, "name", None) or type(model).__name__
    )


def context_window_of(agent: Agent[Any]) -> int | None:
    """The model's context window where the provider knows it without asking: its bundled
    table, also for a model string (the built-in agent's), so usage can show the context
    meter and ACP its ``usage_update``. ``None`` when unknown (a model behind a custom
    endpoint, a missing key)."""
    from lovia.providers.base import context_window

    model = agent.model
    if model is None:
        return None
    try:
        if isinstance(model, str):
            from lovia.providers import provider_from_string

            model = provider_from_string(model)
        return context_window(model)
    except Exception:
        return None


__all__ = [
    "DEMO_LABEL",
    "AgentChoice",
    "AgentFactory",
    "Attach",
    "ExtraPlugins",
    "RunPlace",
    "RunPlaces",
    "context_window_of",
    "model_label",
]
