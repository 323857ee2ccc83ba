"""The ACP client's workspace as lovia sees it: the session's folder under the mode's ACL, reads
through ``fs/read_text_file`` (unsaved buffers) and writes through ``fs/write_text_file`` when
the client offers them, one live workspace session per ACP session.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from lovia.agent import Agent
from lovia.run_context import current_tool_call
from lovia.tools.base import Tool
from lovia.tools.presentation import can_preview, preview_call
from lovia.workspace import LocalWorkspace, WorkspaceError
from lovia.workspace.workspace import WorkspaceSessionBinding
from lovia_server.host.acl import folder_config
from lovia_server.host.editor_waits import UNCONFIRMED_HINT, editor_file_timeout, unconfirmed_write
from lovia_server.host.payloads import file_diffs
from lovia_server.host.ports import RunSpec
from lovia_server.host.workspace_sessions import OutputListener, WorkspaceSessions
from lovia_server.protocol import FileDiff
from lovia_server.protocol.settings import LoviaSettings, Preset

logger = logging.getLogger("lovia_server.acp.workspace")

ModeId = Preset | Literal["plan"]
"""The modes are the permission presets, and plan mode: the ``coding`` preset narrowed so the
agent reads, searches and runs read-only commands only (docs/customization.md#plan-mode)."""


@dataclass(frozen=True)
class Mode:
    id: ModeId
    name: str
    description: str


MODES: dict[str, Mode] = {
    mode.id: mode
    for mode in (
        Mode(
            "coding",
            "Coding (review edits)",
            "Every write and edit asks first, with its diff; commands ask.",
        ),
        Mode("readonly", "Read only", "Reads and searches; no writes, no commands."),
        Mode(
            "trusted",
            "Trusted",
            "Writes and commands run without asking; writes outside the folder ask.",
        ),
        Mode(
            "plan",
            "Plan",
            "Explores and proposes a plan: reads, searches and read-only commands only; "
            "writes, other commands and MCP tools are refused without asking. Switch to "
            "Coding to act on the plan.",
        ),
    )
}
DEFAULT_MODE: ModeId = "coding"


class ClientFiles(Protocol):
    """The client's file system methods (``fs/*``), bound to an ACP session."""

    async def read_text_file(self, session_id: str, path: str) -> str: ...

    async def write_text_file(self, session_id: str, path: str, content: str) -> None: ...


@dataclass
class FileAccess:
    """What the client offered in ``initialize`` (``clientCapabilities.fs``)."""

    client: ClientFiles | None = None
    read: bool = False
    write: bool = False


class ClientBuffers:
    """Reads a file as the client has it (an unsaved buffer), after the ACL allowed the read."""

    def __init__(self, access: FileAccess, session_id: str) -> None:
        self.access = access
        self.session_id = session_id

    def text_for(self, path: Path) -> str | None:
        return None  # grep runs in a worker thread: it reads the disk

    def open_paths(self) -> list[Path]:
        return []  # text_for has none

    async def read_text_for(self, path: Path) -> str | None:
        client = self.access.client
        if client is None or not self.access.read:
            return None
        if not await asyncio.to_thread(path.is_file):
            return None  # nothing the client could have open as this file
        try:
            return await asyncio.wait_for(
                client.read_text_file(self.session_id, str(path)), editor_file_timeout()
            )
        except Exception:
            logger.debug("fs/read_text_file failed for %s", path, exc_info=True)
            return None  # not open and not readable by the client: the disk decides


@dataclass
class SessionFolders:
    """One ACP session's place: its folder (the ACL's root), extra folders, and mode."""

    session_id: str
    root: Path
    extra: list[Path] = field(default_factory=list)
    mode: ModeId = DEFAULT_MODE
    isolated: bool = False
    """A worktree of the session's (``isolation: worktree``): the run writes its disk
    directly, never through the client's buffers."""

    @property
    def folders(self) -> list[Path]:
        return [self.root, *[f for f in self.extra if f != self.root]]


class AcpWorkspace:
    def __init__(
        self,
        settings: Callable[[], LoviaSettings],
        access: FileAccess,
        *,
        on_output: OutputListener | None = None,
    ) -> None:
        self.settings = settings
        self.access = access
        self.declined_calls: set[str] = set()
        self._buffers: dict[str, ClientBuffers] = {}
        self.sessions = WorkspaceSessions(on_output)

    def config_for(self, place: SessionFolders) -> LocalWorkspace:
        settings = self.settings()
        config = folder_config(
            place.root,
            place.folders,
            settings.permissions,
            "coding" if place.mode == "plan" else place.mode,
            agent=settings.agent,
            sandbox=settings.sandbox,
            plan=place.mode == "plan",
        )
        buffers = self._buffers.setdefault(
            place.session_id, ClientBuffers(self.access, place.session_id)
        )
        direct = place.isolated
        return dataclasses.replace(
            config,
            close_after_run=False,
            overlay=buffers if self.access.read and not direct else None,
            write_sink=self._write_sink(place.session_id)
            if self.access.write and not direct
            else None,
        )

    def _write_sink(self, session_id: str) -> Callable[[Path, str | None, str], Awaitable[bool]]:
        async def sink(path: Path, old_text: str | None, new_text: str) -> bool:
            client = self.access.client
            if client is None:
                return False
            limit = editor_file_timeout()
            try:
                await asyncio.wait_for(
                    client.write_text_file(session_id, str(path), new_text), limit
                )
            except TimeoutError:
                raise WorkspaceError(
                    unconfirmed_write(path, limit), hint=UNCONFIRMED_HINT
                ) from None
            except Exception as exc:
                call = current_tool_call.get()
                if call is not None:
                    self.declined_calls.add(call.id)
                raise WorkspaceError(
                    f"The editor did not write {path}: {exc}",
                    hint="The editor refused or failed this change; do not retry it unchanged.",
                ) from None
            return True

        return sink

    async def session_for(self, place: SessionFolders) -> Any:
        """The session's live workspace session (rebuilt when the configuration changed)."""
        return await self.sessions.session(place.session_id, self.config_for(place))

    def apply_mode(self, place: SessionFolders) -> None:
        """A mode change reaches a run already working in the session at once."""
        if self.sessions.held(place.session_id) is not None:
            self.sessions.repolicy(place.session_id, self.config_for(place))

    async def attach_to(self, agent: Agent[Any], place: SessionFolders) -> Agent[Any]:
        """Bind the ACP session's live workspace to an agent that has none."""
        if agent.workspace is not None:
            return agent
        session = await self.session_for(place)
        return agent.clone(workspace=self.config_for(place).bind(session))

    async def attach(self, agent: Agent[Any], root: Path, session_id: str) -> Agent[Any]:
        """WorkspacePort: a subagent child shares its parent session's workspace session."""
        held = self.sessions.held(session_id)
        if agent.workspace is not None or held is None:
            return await self.attach_to(agent, SessionFolders(session_id=session_id, root=root))
        config, session = held
        return agent.clone(workspace=config.bind(session))

    # ------------------------------------------------------------------ WorkspacePort

    async def preview(
        self, spec: RunSpec, tool: Tool | None, args: Mapping[str, Any]
    ) -> list[FileDiff]:
        """What an edit call would change, against the run's live workspace session."""
        workspace = spec.agent.workspace
        if not can_preview(tool) or not isinstance(workspace, WorkspaceSessionBinding):
            return []
        diffs = await preview_call(tool, dict(args), await workspace.open())
        return file_diffs(diffs)

    def declined(self, call_id: str) -> bool:
        return call_id in self.declined_calls

    def can_review(self, spec: RunSpec) -> bool:
        """An ACP permission answer carries no edited text: an approved edit runs as proposed."""
        return False

    async def read_back(self, spec: RunSpec, path: str) -> str | None:
        """What a completed write left: the client owns the text when it wrote it."""
        if self.access.write and self.access.client is not None:
            return None
        try:
            return await asyncio.to_thread(Path(path).read_text, encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    async def close_session(self, session_id: str) -> None:
        self._buffers.pop(session_id, None)
        await self.sessions.close(session_id)

    async def aclose(self) -> None:
        await self.sessions.aclose()


__all__ = [
    "DEFAULT_MODE",
    "MODES",
    "AcpWorkspace",
    "ClientBuffers",
    "ClientFiles",
    "FileAccess",
    "Mode",
    "SessionFolders",
]
