"""The results file: one JSON line per finished task, appended as tasks finish.

Each line is written with a single ``write`` and flushed, so an interrupted batch leaves
whole lines behind; a torn last line (a crash mid-write) is cut off when the file is opened
again. That makes the file its own resume point.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lovia.exceptions import UserError

Status = Literal["done", "failed", "lost"]
"""``done``: the agent finished; ``failed``: the task failed for a cause (bad workspace,
model error, timeout) and was not retried; ``lost``: its worker died more often than the
retry limit allows."""


class TaskUsage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


class TaskResult(BaseModel):
    """One line of ``results.jsonl``."""

    model_config = ConfigDict(extra="ignore")

    id: str
    status: Status
    output: Any = None
    error: str | None = None
    patch: str = ""
    usage: TaskUsage = Field(default_factory=TaskUsage)
    cost: float | None = None
    turns: int = 0
    duration: float = 0.0
    attempts: int = 1
    node: str | None = None
    sandboxed: bool = False
    model: str | None = None
    transcript: Any = None
    tree: str | None = None


class ResultsFile:
    """Appends results and reads back which tasks are already settled."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def load(self) -> dict[str, TaskResult]:
        """The latest result per task id; a torn last line is removed from the file."""
        if not self.path.exists():
            return {}
        raw = self.path.read_bytes()
        keep = raw if raw.endswith(b"\n") or not raw else raw[: raw.rfind(b"\n") + 1]
        if keep != raw:
            with self.path.open("r+b") as fh:
                fh.truncate(len(keep))
        results: dict[str, TaskResult] = {}
        for number, line in enumerate(keep.decode("utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                result = TaskResult.model_validate_json(line)
            except ValidationError as exc:
                raise UserError(
                    f"{self.path}:{number} is not a batch result: {exc.errors()[0]['msg']}",
                    hint="Point --results at a results file lovia wrote, or at a new path.",
                ) from exc
            results[result.id] = result
        return results

    def append(self, result: TaskResult, *, redact: tuple[str, ...] = ()) -> None:
        line = json.dumps(result.model_dump(mode="json"), ensure_ascii=False)
        for secret in redact:
            line = line.replace(secret, "[redacted]")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())


__all__ = ["ResultsFile", "Status", "TaskResult", "TaskUsage"]
