"""What ties a child run (a subagent) to its parent, and how a run ended for whoever waits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lovia_server import protocol as p


@dataclass(frozen=True)
class ChildLink:
    """What makes a run a subagent: its parent run and the spawn it answers."""

    parent_run_id: str
    parent_session_id: str
    task_id: str
    name: str
    spawn_key: str

    def ref(self, run_id: str) -> p.SubagentRef:
        return p.SubagentRef(run_id=run_id, task_id=self.task_id, name=self.name)


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended, for whoever waits on it (a subagent's parent)."""

    status: p.FinalStatus
    result: Any
    error: BaseException | None
    run_error: p.RunError | None


__all__ = ["ChildLink", "RunOutcome"]
