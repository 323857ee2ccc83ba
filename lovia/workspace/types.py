"""Result types of workspace operations and the size/count caps."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeVar

from pydantic import BaseModel, Field

T = TypeVar("T")


class FileContent(BaseModel):
    path: str
    content: str
    start: int = Field(ge=1)
    end: int = Field(ge=0)
    total_lines: int
    truncated: bool = False


class FileBytes(BaseModel):
    path: str
    data: bytes


class FileChange(BaseModel):
    ok: bool = True
    path: str
    action: Literal["created", "updated", "unchanged"]
    bytes_written: int = 0
    message: str | None = None


class EditResult(BaseModel):
    ok: bool
    path: str
    replacements: int = 0
    changed: bool = False
    message: str | None = None


class DirEntry(BaseModel):
    path: str
    is_dir: bool
    size: int | None = None
    mtime: float | None = None
    symlink_target: str | None = None


class GrepMatch(BaseModel):
    path: str
    line: int = Field(ge=1)
    text: str


class CommandResult(BaseModel):
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class ProcessStart(BaseModel):
    process_id: str
    pid: int
    command: str


ProcessState = Literal["running", "exited", "killed"]


class ProcessOutput(BaseModel):
    process_id: str
    status: ProcessState
    exit_code: int | None
    output: str = ""
    truncated: bool = False


class ProcessStatus(BaseModel):
    process_id: str
    command: str
    status: ProcessState
    exit_code: int | None
    exit_seen: bool = False


@dataclass(frozen=True)
class WorkspaceLimits:
    """Every size and count cap of the workspace, in one place."""

    max_file_read_chars: int = 50_000
    max_file_read_bytes: int = 10_000_000
    max_shell_output_chars: int = 30_000
    max_grep_file_bytes: int = 5_000_000
    max_grep_line_chars: int = 400
    max_list_results: int = 500
    max_grep_matches: int = 100


class ClippedList(list[T]):
    """A list that remembers whether it was cut at a cap (``truncated``)."""

    truncated: bool

    def __init__(self, items: Iterable[T] = (), *, truncated: bool = False) -> None:
        super().__init__(items)
        self.truncated = truncated


__all__ = [
    "ClippedList",
    "CommandResult",
    "DirEntry",
    "EditResult",
    "FileBytes",
    "FileChange",
    "FileContent",
    "GrepMatch",
    "ProcessOutput",
    "ProcessStart",
    "ProcessState",
    "ProcessStatus",
    "WorkspaceLimits",
]
