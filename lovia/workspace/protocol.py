"""The seams: what a workspace session, a workspace config and a shell executor look like."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from lovia.workspace.policy import Decision, WorkspacePolicy
from lovia.workspace.types import (
    CommandResult,
    DirEntry,
    EditResult,
    FileBytes,
    FileChange,
    FileContent,
    GrepMatch,
    ProcessOutput,
    ProcessStart,
    ProcessStatus,
)

if TYPE_CHECKING:
    from lovia.plugins.base import ViewInjector
    from lovia.tools.base import Tool


@runtime_checkable
class WorkspaceSession(Protocol):
    """A live workspace. Every op resolves and judges its paths; ``deny`` raises.

    ``ask`` is the tool layer's job (approval predicates call ``decide_path`` /
    ``decide_command`` before the op runs).
    """

    policy: WorkspacePolicy

    def decide_path(self, path: str, *, write: bool = False) -> Decision: ...

    def decide_command(self, command: str, cwd: str = ".") -> Decision: ...

    async def read_text(
        self, path: str, *, start: int | None = None, end: int | None = None
    ) -> FileContent: ...

    async def read_bytes(self, path: str, *, max_bytes: int | None = None) -> FileBytes: ...

    async def write_text(
        self, path: str, content: str, *, create_only: bool = False
    ) -> FileChange: ...

    async def edit_text(
        self, path: str, old: str, new: str, *, replace_all: bool = False
    ) -> EditResult: ...

    async def list_files(
        self,
        path: str = ".",
        *,
        pattern: str | None = None,
        include_hidden: bool = False,
        max_results: int | None = None,
    ) -> list[DirEntry]: ...

    async def grep(
        self,
        pattern: str,
        *,
        path: str = ".",
        glob: str | None = None,
        ignore_case: bool = False,
        include_hidden: bool = False,
        max_matches: int | None = None,
    ) -> list[GrepMatch]: ...

    async def run(
        self,
        command: str,
        *,
        cwd: str = ".",
        timeout: float | None = None,  # noqa: ASYNC109 - spec'd API
        env: Mapping[str, str] | None = None,
    ) -> CommandResult: ...

    async def spawn(
        self, command: str, *, cwd: str = ".", env: Mapping[str, str] | None = None
    ) -> ProcessStart: ...

    async def read_process_output(self, process_id: str) -> ProcessOutput: ...

    async def kill_process(self, process_id: str) -> ProcessOutput: ...

    def background_processes(self) -> list[ProcessStatus]: ...

    async def close(self) -> None: ...


@runtime_checkable
class WorkspaceLike(Protocol):
    """What ``Agent(workspace=...)`` accepts."""

    @property
    def close_after_run(self) -> bool: ...

    async def open(self) -> WorkspaceSession: ...

    def tools(self) -> list[Tool]: ...

    def instructions(self) -> str: ...

    def view_injectors(self) -> list[ViewInjector]: ...


@runtime_checkable
class ShellExecutor(Protocol):
    """Runs one command after the policy and approval gates (decides *how*, never *whether*).

    May return unclipped output (the session clips). Owns and kills its processes,
    also when cancelled. One-shot only.
    """

    async def run(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        timeout: float | None,  # noqa: ASYNC109 - spec'd API
        policy: WorkspacePolicy,
        root: Path,
    ) -> CommandResult: ...


__all__ = ["ShellExecutor", "WorkspaceLike", "WorkspaceSession"]
