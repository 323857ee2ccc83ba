"""A batch task (one line of the task file) and the reading of task files.

A task is everything a worker on another machine needs to redo one agent run: where its
tree comes from, the prompt, the agent, the model, the permission preset and how approvals
are answered when nobody is there to answer them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from lovia.exceptions import UserError

BUILTIN_AGENT = "coding"

_FORMAT_HINT = (
    'Each line is a JSON object such as {"id": "t1", "prompt": "...", '
    '"source": {"git": "https://...", "commit": "abc123"}} (see docs/batch.md).'
)


_USAGE_HINT = (
    "Give the path of a JSON Lines task file: lovia batch tasks.jsonl [--ray [ADDRESS]] "
    "(see docs/batch.md)."
)


class TaskSource(BaseModel):
    """The task's tree: a local directory (shipped to the worker) or a git repository at a
    commit (cloned by the worker)."""

    model_config = ConfigDict(extra="forbid")

    path: str | None = None
    git: str | None = None
    commit: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> TaskSource:
        if (self.path is None) == (self.git is None):
            raise ValueError("source needs exactly one of 'path' or 'git'")
        if self.commit is not None and self.git is None:
            raise ValueError("'commit' goes with 'git'")
        return self


class ApprovalPolicy(BaseModel):
    """How a headless run answers approval requests: ``default`` for every call no rule
    names; ``allow`` rules are ``tool``, ``tool:path-pattern`` (``write_file:src/*``) or, for
    commands, ``shell:words*`` (``shell:pytest*``: pytest with any arguments). They are
    judged by the workspace's own matchers: :mod:`lovia_server.batch.approvals`."""

    model_config = ConfigDict(extra="forbid")

    default: Literal["deny", "allow"] = "deny"
    allow: list[str] = Field(default_factory=list)

    @field_validator("allow")
    @classmethod
    def _rule_shapes(cls, rules: list[str]) -> list[str]:
        for rule in rules:
            tool, sep, pattern = rule.partition(":")
            if not tool or (sep and not pattern.strip()):
                raise ValueError(f"approval rule {rule!r}: use 'tool' or 'tool:pattern'")
            if tool == "shell" and any(c in pattern.removesuffix("*") for c in "*?["):
                raise ValueError(
                    f"approval rule {rule!r}: a command rule is the command's first words, "
                    "with an optional '*' at the end (e.g. 'shell:pytest*', "
                    "'shell:python -m pytest*')"
                )
        return rules


class BatchTask(BaseModel):
    """One line of the task file."""

    model_config = ConfigDict(extra="forbid")

    id: str
    prompt: str
    source: TaskSource
    agent: str = BUILTIN_AGENT
    model: str | None = None
    preset: Literal["readonly", "coding", "trusted"] = "coding"
    approvals: ApprovalPolicy = Field(default_factory=ApprovalPolicy)
    max_turns: int = Field(default=50, ge=1)
    timeout: float | None = Field(default=None, gt=0)
    keep_tree: bool = False

    @field_validator("approvals", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"default": value} if isinstance(value, str) else value

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not value or "/" in value or value.startswith("."):
            raise ValueError("id must be non-empty, without '/', not starting with '.'")
        return value


def parse_tasks(
    text: str, *, base: Path, origin: str = "tasks", source_root: Path | None = None
) -> list[BatchTask]:
    """Tasks from JSON Lines; relative ``source.path`` and agent files resolve against
    ``base`` (the task file's folder). Blank lines and ``#`` comments are skipped. A local
    source (``path``, or a ``git`` path) must resolve inside ``source_root`` (default:
    ``base``), symlinks resolved: a task file cannot ship a folder above its own."""
    allowed = (source_root or base).resolve()
    tasks: list[BatchTask] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            task = BatchTask.model_validate_json(line)
        except ValidationError as exc:
            raise UserError(f"{origin}:{number}: {_first_error(exc)}", hint=_FORMAT_HINT) from exc
        if task.id in seen:
            raise UserError(
                f"{origin}:{number}: task id {task.id!r} is used twice",
                hint="Give every task its own id: results are keyed by it.",
            )
        seen.add(task.id)
        tasks.append(_resolved(task, base, allowed, f"{origin}:{number}"))
    return tasks


def load_tasks(path: str | Path, *, source_root: str | Path | None = None) -> list[BatchTask]:
    """The tasks of the file at ``path``; see :func:`parse_tasks` for ``source_root``."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise UserError(f"There is no task file {file}", hint=_USAGE_HINT) from exc
    except IsADirectoryError as exc:
        raise UserError(f"{file} is a folder, not a task file", hint=_USAGE_HINT) from exc
    except UnicodeDecodeError as exc:
        raise UserError(f"The task file {file} is not UTF-8 text", hint=_FORMAT_HINT) from exc
    except OSError as exc:
        raise UserError(f"Cannot read the task file {file}: {exc.strerror or exc}") from exc
    root = Path(source_root) if source_root is not None else None
    return parse_tasks(text, base=file.resolve().parent, origin=str(file), source_root=root)


def _resolved(task: BatchTask, base: Path, allowed: Path, where: str) -> BatchTask:
    source = task.source
    if source.path is not None:
        path = _inside(base, source.path, allowed, where)
        source = source.model_copy(update={"path": path})
    if source.git is not None and not _looks_remote(source.git):
        local = source.git.removeprefix("file://")
        source = source.model_copy(update={"git": _inside(base, local, allowed, where)})
    agent = task.agent
    if agent != BUILTIN_AGENT:
        file, sep, attr = agent.rpartition(":")
        if not sep or not file or not attr:
            raise UserError(
                f"{where}: agent must be 'coding' or 'path/to/file.py:name', got {agent!r}"
            )
        agent_file = (base / file).resolve()
        if not agent_file.is_file():
            raise UserError(
                f"{where}: agent file {file} not found (looked for {agent_file})",
                hint="'agent' is 'coding' or 'path/to/file.py:name', the path relative to the "
                "task file's folder.",
            )
        agent = f"{agent_file}:{attr}"
    return task.model_copy(update={"source": source, "agent": agent})


def _inside(base: Path, path: str, allowed: Path, where: str) -> str:
    """``path`` resolved against ``base``, refused unless it lies in ``allowed``."""
    resolved = (base / Path(path).expanduser()).resolve()
    if not resolved.is_relative_to(allowed):
        raise UserError(
            f"{where}: the source {path!r} resolves to {resolved}, outside {allowed}",
            hint=f"A task's local source must lie inside {allowed} (the task file's folder "
            "unless --source-root names another): move the task file next to its sources, "
            "or pass --source-root DIR for a folder that holds them.",
        )
    return str(resolved)


def _looks_remote(url: str) -> bool:
    if url.startswith("file:"):
        return False
    return "://" in url or (":" in url and not url.startswith("/") and "@" in url)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(part) for part in err.get("loc", ())) or "line"
    return f"{where}: {err.get('msg', 'invalid')}"


__all__ = [
    "BUILTIN_AGENT",
    "ApprovalPolicy",
    "BatchTask",
    "TaskSource",
    "load_tasks",
    "parse_tasks",
]
