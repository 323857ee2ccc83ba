"""Checkpoints: the append-only log of one in-flight run, keyed by its global ``run_id``."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, get_args, runtime_checkable

from lovia.exceptions import UserError
from lovia.messages import Usage
from lovia.transcript import TranscriptEntry, entry_from_dict, entry_to_dict, to_json_safe

RunStatus: TypeAlias = Literal["running", "interrupted", "completed", "failed"]
IfRunExists: TypeAlias = Literal["resume", "restart", "fail", "resume_only"]


def _usage_to_dict(usage: Usage) -> dict[str, int]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    }


def _usage_from_dict(d: Any) -> Usage:
    d = d if isinstance(d, dict) else {}
    return Usage(
        int(d.get("input_tokens", 0) or 0),
        int(d.get("output_tokens", 0) or 0),
        int(d.get("cache_read_tokens", 0) or 0),
        int(d.get("cache_write_tokens", 0) or 0),
    )


@dataclass
class RunHead:
    """The small, overwritten part of a checkpoint: where the run stands."""

    agent_name: str
    usage: Usage
    turns: int
    status: RunStatus = "running"
    output: Any = None
    error: Any = None
    last_input_tokens: int | None = None
    context_state: dict[str, Any] = field(default_factory=dict)
    updated_at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent_name": self.agent_name,
            "usage": _usage_to_dict(self.usage),
            "turns": self.turns,
            "status": self.status,
            "output": to_json_safe(self.output),
            "error": to_json_safe(self.error),
            "last_input_tokens": self.last_input_tokens,
            "context_state": to_json_safe(self.context_state) or {},
            "updated_at": self.updated_at,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunHead:
        if "agent_name" not in d or "status" not in d:
            raise ValueError("RunHead requires agent_name and status")
        state = d.get("context_state")
        return cls(
            agent_name=d["agent_name"],
            usage=_usage_from_dict(d.get("usage")),
            turns=int(d.get("turns", 0) or 0),
            status=d["status"],
            output=d.get("output"),
            error=d.get("error"),
            last_input_tokens=d.get("last_input_tokens"),
            context_state=state if isinstance(state, dict) else {},
            updated_at=float(d.get("updated_at") or time.time()),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> RunHead:
        return cls.from_dict(json.loads(text))


@dataclass
class RunSnapshot:
    """A stored run: its own entries plus its head."""

    run_id: str
    agent_name: str
    entries: list[TranscriptEntry]
    usage: Usage
    turns: int
    status: RunStatus = "running"
    output: Any = None
    error: Any = None
    last_input_tokens: int | None = None
    context_state: dict[str, Any] = field(default_factory=dict)
    updated_at: float = field(default_factory=time.time)

    @property
    def head(self) -> RunHead:
        return RunHead(
            agent_name=self.agent_name,
            usage=self.usage,
            turns=self.turns,
            status=self.status,
            output=self.output,
            error=self.error,
            last_input_tokens=self.last_input_tokens,
            context_state=self.context_state,
            updated_at=self.updated_at,
        )

    @classmethod
    def from_parts(cls, run_id: str, entries: list[TranscriptEntry], head: RunHead) -> RunSnapshot:
        return cls(
            run_id=run_id,
            agent_name=head.agent_name,
            entries=entries,
            usage=head.usage,
            turns=head.turns,
            status=head.status,
            output=head.output,
            error=head.error,
            last_input_tokens=head.last_input_tokens,
            context_state=head.context_state,
            updated_at=head.updated_at,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "entries": [entry_to_dict(e) for e in self.entries],
            **self.head.to_dict(),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunSnapshot:
        head = RunHead.from_dict(d)
        entries = [entry_from_dict(e) for e in d.get("entries") or []]
        return cls.from_parts(d["run_id"], entries, head)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> RunSnapshot:
        return cls.from_dict(json.loads(text))


@runtime_checkable
class Checkpointer(Protocol):
    async def append(self, run_id: str, entries: list[TranscriptEntry], head: RunHead) -> None: ...

    async def load(self, run_id: str) -> RunSnapshot | None: ...

    async def delete(self, run_id: str) -> None: ...


@dataclass(frozen=True, slots=True)
class CheckpointOptions:
    """How a run is checkpointed and what happens when its ``run_id`` already exists."""

    checkpointer: Checkpointer | None = None
    run_id: str | None = None
    if_run_exists: IfRunExists = "resume"
    delete_on_success: bool = False
    resume_from: RunSnapshot | None = None

    def __post_init__(self) -> None:
        if self.if_run_exists not in get_args(IfRunExists):
            raise UserError(
                f"Invalid if_run_exists={self.if_run_exists!r}",
                hint="Use one of 'resume', 'restart', 'fail', 'resume_only'.",
            )
        if self.run_id is not None and (not isinstance(self.run_id, str) or not self.run_id):
            raise UserError(
                "checkpoint run_id must be a non-empty string",
                hint="Pass a stable id such as a uuid4().hex.",
            )
        if self.resume_from is None and self.checkpointer is None:
            raise UserError(
                "checkpoint requires both checkpointer and run_id, or a resume_from snapshot",
                hint="CheckpointOptions(checkpointer=SQLiteCheckpointer(path), run_id=...)",
            )
        if self.checkpointer is not None and self.run_id is None and self.resume_from is None:
            raise UserError(
                "checkpoint run_id is required with checkpointer",
                hint="Pass run_id=... so the run can be found again.",
            )
        if (
            self.resume_from is not None
            and self.run_id is not None
            and self.run_id != self.resume_from.run_id
        ):
            raise UserError(
                f"checkpoint run_id={self.run_id!r} does not match "
                f"resume_from.run_id={self.resume_from.run_id!r}",
                hint="Omit run_id when passing resume_from, or pass the snapshot's own id.",
            )
        if self.delete_on_success and self.checkpointer is None:
            raise UserError(
                "delete_on_success requires a checkpointer",
                hint="Pass checkpointer=... or drop delete_on_success.",
            )

    @property
    def resolved_run_id(self) -> str | None:
        if self.run_id is not None:
            return self.run_id
        return self.resume_from.run_id if self.resume_from is not None else None


__all__ = [
    "CheckpointOptions",
    "Checkpointer",
    "IfRunExists",
    "RunHead",
    "RunSnapshot",
    "RunStatus",
]
