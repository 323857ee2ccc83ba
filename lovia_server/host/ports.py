"""The narrow ports a run supervisor is built on: the editor that shows runs, the workspace
that runs act on, and (optionally) the restore points kept around runs.

The supervisor owns run state and nothing else. Everything it needs from the outside reaches
it through these protocols, given once at construction, so another host (the terminal client,
an ACP adapter) can serve the same runs by implementing them over its own transport.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from lovia.agent import Agent
from lovia.context.policy import CompactNow
from lovia.reliability import RunBudget
from lovia.tools.base import Tool
from lovia_server.host.prices import Price
from lovia_server.protocol import (
    ApprovalChoice,
    ApprovalRequested,
    CheckpointCreated,
    FileDiff,
)

ProgressStage = Literal["begin", "report", "end"]


@dataclass
class RunSpec:
    """Everything needed to (re)start a run: the agent and what the run record shows."""

    agent: Agent[Any]
    agent_label: str
    model_label: str | None
    root: Path
    cwd: Path
    context_window: int | None = None
    budget: RunBudget | None = None
    price: Price | None = None  # the model's, when known: usage payloads carry a cost
    plan: bool = False
    """A plan-mode run (docs/customization.md#plan-mode): nothing it would ask is asked."""
    remembered: bool = True
    """False: the run is not part of the conversation the model sees later (a reply lovia
    gives itself, such as ``/help``)."""
    compact: CompactNow | None = None
    """A ``/compact`` run: it compacts the conversation instead of calling the model."""


class EditorPort(Protocol):
    """The editor a run is shown in."""

    @property
    def asks_approvals(self) -> bool:
        """True when approvals are asked through the editor's own UI (``ask_approval``) rather
        than answered by the client with ``lovia/approve``."""
        ...

    def backlog(self) -> int:
        """Bytes queued for the editor that it has not read yet (0 when unknown)."""
        ...

    async def ask_approval(self, payload: ApprovalRequested) -> ApprovalChoice | None:
        """Ask the user through the editor's UI; ``None`` when the prompt was dismissed: the
        approval then stays pending (asked again on request, answered otherwise, or settled
        by the timeout or a cancel)."""
        ...

    def progress(self, stage: ProgressStage, run_id: str, message: str) -> None:
        """Show the run's progress (never blocks; sends happen in order per run)."""
        ...


class WorkspacePort(Protocol):
    """The workspace as a run's presentation needs it (reads see the editor's buffers)."""

    async def preview(
        self, spec: RunSpec, tool: Tool | None, args: Mapping[str, Any]
    ) -> list[FileDiff]:
        """What an edit call would change, before it runs (the approval diff)."""
        ...

    async def read_back(self, spec: RunSpec, path: str) -> str | None:
        """What a completed write left in ``path``; ``None`` when the preview stands."""
        ...

    def declined(self, call_id: str) -> bool:
        """Whether the editor refused to apply that call's edit."""
        ...

    async def attach(self, agent: Agent[Any], root: Path, session_id: str) -> Agent[Any]:
        """The agent bound to the conversation's workspace (as is when it has its own); a
        subagent is bound to its parent's conversation."""
        ...

    def can_review(self, spec: RunSpec) -> bool:
        """Whether the run's edits can be replaced by a version the user approved."""
        ...


@dataclass(frozen=True)
class RunTurn:
    """A run as one turn of its conversation: which one, its prompt, where it works."""

    session_id: str
    run_id: str
    turn_index: int
    """The run's place among its session's runs (0 for the first)."""
    prompt: str
    root: Path


class RestorePort(Protocol):
    """Restore points of the files around runs (optional): a run's turn gets one before the
    first of its calls that may change files."""

    def run_started(self, turn: RunTurn) -> None:
        """A run started (a chance to prepare while the model thinks; never blocks)."""
        ...

    async def before_write(
        self, turn: RunTurn, tools: list[Tool | None]
    ) -> CheckpointCreated | None:
        """Tool calls are about to run: take the turn's point when one of ``tools`` may
        change files and the turn has none yet; the created point, else ``None``."""
        ...

    def run_ended(self, turn: RunTurn) -> None:
        """A run ended: its writes are the agent's (never blocks)."""
        ...


class FolderRestorePoints(RestorePort, Protocol):
    """Restore points a host keeps of whole folders too: one before a worktree run lands, and
    a worktree's go once it is."""

    async def snapshot(self, root: Path, session_id: str, label: str) -> str | None:
        """A point of ``root`` now, outside any run; its id (``None``: none was taken)."""
        ...

    async def drop_root(self, root: Path) -> None:
        """``root`` is gone for good: its points go too."""
        ...


__all__ = [
    "EditorPort",
    "FolderRestorePoints",
    "ProgressStage",
    "RestorePort",
    "RunSpec",
    "RunTurn",
    "WorkspacePort",
]
