"""Where an ACP session's runs work, as the host's agent factory asks it
(:class:`~lovia_server.host.agent_factory.RunPlaces`): the session's folder and extra
directories, and the model the session picked in the client's picker.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lovia.workspace.policy import WorkspacePolicy
from lovia_server.acp.request_errors import session_not_found
from lovia_server.acp.session_options import AcpSession, HostOptions, current_model
from lovia_server.host.acl import folder_config
from lovia_server.host.agent_factory import AgentChoice
from lovia_server.host.agents import BUILTIN_DEMO
from lovia_server.host.core import DEMO_MODEL
from lovia_server.host.store import RunRecord
from lovia_server.protocol.settings import LoviaSettings


class SessionPlaces:
    """The open sessions of one ``lovia acp`` (a session it has not opened is not found)."""

    def __init__(self, sessions: dict[str, AcpSession], options: HostOptions) -> None:
        self.sessions = sessions
        self.options = options

    def session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise session_not_found(session_id)
        return session

    def folders(self, session_id: str) -> list[Path]:
        return self.session(session_id).place.folders

    def default_cwd(self, session_id: str) -> Path:
        return self.session(session_id).place.root

    def root_for(self, session_id: str, cwd: Path) -> Path:
        return self.session(session_id).place.root

    def resumed_cwd(self, record: RunRecord, worktree: Path | None) -> Path | None:
        return worktree  # a run in the session's folder continues where the session is now

    def choice(self, session_id: str) -> AgentChoice:
        """The model picked in the client (``demo``: the scripted demo); a stored run
        continues on its own agent and model unless the session picked another."""
        session = self.session(session_id)
        picked = session.model is not None
        if current_model(session, self.options) == DEMO_MODEL:
            return AgentChoice(
                agent=BUILTIN_DEMO, mcp_servers=session.mcp, picked=picked, plan=session.plan
            )
        return AgentChoice(
            model=session.model, mcp_servers=session.mcp, picked=picked, plan=session.plan
        )

    def continue_plan(self, session_id: str) -> None:
        self.session(session_id).place.mode = "plan"


def session_policy(settings: Callable[[], LoviaSettings]) -> Callable[[Path], WorkspacePolicy]:
    """A folder's policy under the settings' permissions (what a worktree run leaves out)."""

    def policy(root: Path) -> WorkspacePolicy:
        current = settings()
        config = folder_config(root, [root], current.permissions, "coding", agent=current.agent)
        return config.policy

    return policy


__all__ = ["SessionPlaces", "session_policy"]
