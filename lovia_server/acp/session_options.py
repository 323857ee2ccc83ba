"""An ACP session as the agent keeps it, and the options a client picks for it: the mode (how
freely the agent may act on the folders), the model, and the isolation (the session's folder or
a git worktree of its own: :mod:`lovia_server.acp.worktrees`).

The mode and the model are offered twice, as ACP's session modes and as config options;
both read the same session state, so a client sees one answer whichever it uses.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from acp import schema as a

from lovia_server import protocol as p
from lovia_server.acp.mapping import SessionMapper
from lovia_server.acp.request_errors import invalid_params
from lovia_server.acp.workspace import MODES, SessionFolders
from lovia_server.acp.worktrees import IsolationId, isolation_option
from lovia_server.host.core import DEMO_MODEL
from lovia_server.protocol.settings import LoviaSettings, MCPServerSetting

ConfigOption = a.SessionConfigOptionSelect | a.SessionConfigOptionBoolean
CONFIG_IDS = ["mode", "model", "isolation"]


@dataclass
class HostOptions:
    """What ``lovia acp`` was started with (flags, environment, the settings file)."""

    state_dir: Path
    settings: LoviaSettings = field(default_factory=LoviaSettings)
    models: list[str] = field(default_factory=list)
    trusted: bool = True
    """``--untrusted``: the workspace's hooks, agent file and MCP servers are not used."""


@dataclass
class AcpSession:
    place: SessionFolders
    mapper: SessionMapper = field(default_factory=SessionMapper)
    model: str | None = None
    isolation: IsolationId = "workspace"
    mcp: dict[str, MCPServerSetting] = field(default_factory=dict)
    waiters: dict[str, list[asyncio.Future[p.RunFinishedEvent]]] = field(default_factory=dict)
    commands: set[str] = field(default_factory=set)
    # held while a prompt decides between starting a run and steering the live one
    starting: asyncio.Lock = field(default_factory=asyncio.Lock)
    # steers this client's prompts queued that the run has not taken in yet (by message id)
    undelivered: set[str] = field(default_factory=set)
    # the instruction files in use were named to the client (once per session and process)
    instructions_told: bool = False

    @property
    def plan(self) -> bool:
        """The session is in plan mode: its runs change nothing and never ask."""
        return self.place.mode == "plan"


def mode_state(session: AcpSession) -> a.SessionModeState:
    return a.SessionModeState(
        current_mode_id=session.place.mode,
        available_modes=[
            a.SessionMode(id=m.id, name=m.name, description=m.description) for m in MODES.values()
        ],
    )


def check_mode(mode_id: str, field_name: str) -> None:
    if mode_id not in MODES:
        raise invalid_params(f"Unknown mode {mode_id!r}", field_name, allowed=sorted(MODES))


def session_models(session: AcpSession, options: HostOptions) -> list[str]:
    """The models a session may pick: its own, the configured one, those ``lovia acp`` was
    started with, and the offline demo."""
    seen: dict[str, None] = {}
    settings = options.settings
    for model in (session.model, settings.effective_model(), *options.models, DEMO_MODEL):
        if model:
            seen[model] = None
    return list(seen)


def current_model(session: AcpSession, options: HostOptions) -> str:
    return session.model or options.settings.effective_model() or DEMO_MODEL


def config_options(session: AcpSession, options: HostOptions) -> list[ConfigOption]:
    def label(model: str) -> str:
        return "Demo (scripted, offline)" if model == DEMO_MODEL else model

    return [
        a.SessionConfigOptionSelect(
            type="select",
            id="mode",
            name="Mode",
            category="mode",
            current_value=session.place.mode,
            options=[
                a.SessionConfigSelectOption(value=m.id, name=m.name, description=m.description)
                for m in MODES.values()
            ],
        ),
        a.SessionConfigOptionSelect(
            type="select",
            id="model",
            name="Model",
            category="model",
            current_value=current_model(session, options),
            options=[
                a.SessionConfigSelectOption(value=m, name=label(m))
                for m in session_models(session, options)
            ],
        ),
        isolation_option(session.isolation),
    ]


__all__ = [
    "CONFIG_IDS",
    "AcpSession",
    "ConfigOption",
    "HostOptions",
    "check_mode",
    "config_options",
    "current_model",
    "mode_state",
    "session_models",
]
