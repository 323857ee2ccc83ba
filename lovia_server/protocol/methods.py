"""Params and results of every ``lovia/*`` request, and the list of methods.

Each method is one ``Method`` row: its name, params model, result model and a one-line note
for the docs. The server registers its handlers against these rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, TypeAlias, TypeVar, get_args

from pydantic import AfterValidator, Field, ValidationError
from typing_extensions import TypeAliasType

from lovia_server.protocol.errors import invalid_params
from lovia_server.protocol.events import (
    Decision,
    TodoItem,
    ToolKind,
    Usage,
)
from lovia_server.protocol.wire import WireModel, WireParams, omitted

P = TypeVar("P", bound=WireParams)
R = TypeVar("R", bound=WireModel)

RunStatus = TypeAliasType(
    "RunStatus",
    Literal[
        "running",
        "awaiting_approval",
        "cancelling",
        "completed",
        "failed",
        "cancelled",
        "interrupted",
    ],
)
EditMode = TypeAliasType("EditMode", Literal["server", "workspaceEdit"])
EDIT_MODES: list[Literal["server", "workspaceEdit"]] = list(get_args(EditMode.__value__))
RUN_STATUSES: list[str] = list(get_args(RunStatus.__value__))


def as_run_status(value: str) -> RunStatus:
    """A stored status string as a ``RunStatus`` (anything unknown reads as ``failed``)."""
    for status in RUN_STATUSES:
        if status == value:
            return status  # type: ignore[return-value]
    return "failed"


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


NonBlank = Annotated[str, Field(min_length=1), AfterValidator(_not_blank)]
Id = Annotated[str, Field(min_length=1)]

# ----------------------------------------------------------------------------- params


class Position(WireParams):
    line: int = Field(default=0, ge=0)
    character: int = Field(default=0, ge=0)


class Range(WireParams):
    start: Position
    end: Position


class ContextItem(WireParams):
    """A file (or a line range of it) attached to a prompt."""

    uri: str
    range: Range | None = None


class RunParams(WireParams):
    prompt: NonBlank
    session_id: Id | None = None
    cwd: str | None = None
    context: list[ContextItem] = Field(default_factory=list)
    model: Id | None = None
    agent: Id | None = None


class SteerParams(WireParams):
    run_id: Id
    message: NonBlank


class UnsteerParams(WireParams):
    run_id: Id
    message_id: Id


class ApproveParams(WireParams):
    run_id: Id
    approval_id: Id
    decision: Decision
    message: str | None = None


class AnswerParams(WireParams):
    run_id: Id
    question_id: Id
    answer: str


class RunIdParams(WireParams):
    run_id: Id


class ReplayParams(WireParams):
    run_id: Id
    after_seq: int = Field(default=0, ge=0)


class SessionsParams(WireParams):
    limit: int = Field(default=50, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    query: str | None = None


class SessionParams(WireParams):
    session_id: Id


class MCPRestartParams(WireParams):
    name: Id


class StatusParams(WireParams):
    pass


def parse_params(model: type[P], params: object) -> P:
    """Validate raw params; the first error becomes -32602 with ``data.field`` (its dotted path)."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise invalid_params("params must be an object", "params")
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        field = ".".join(str(part) for part in err.get("loc", ())) or "params"
        raise invalid_params(f"Invalid {field}: {err.get('msg', 'invalid value')}", field) from None


# ----------------------------------------------------------------------------- results


class LaunchResult(WireModel):
    """A run that started (or resumed) and now streams events."""

    session_id: str
    run_id: str
    status: Literal["running"]


class SteerResult(WireModel):
    run_id: str
    message_id: str
    accepted: Literal[True]


class UnsteerResult(WireModel):
    withdrawn: bool


class ApproveResult(WireModel):
    approval_id: str
    outcome: Literal["allowed", "rejected"]


class AnswerResult(WireModel):
    question_id: str


class CancelResult(WireModel):
    run_id: str
    status: Literal["cancelling"]


class ReplayResult(WireModel):
    """Stored events after ``afterSeq``: each one a ``LoviaEvent`` exactly as it was sent."""

    events: Annotated[
        list[dict[str, Any]],
        Field(json_schema_extra={"items": {"$ref": "#/$defs/LoviaEvent"}}),
    ]
    last_seq: int
    status: RunStatus


class ChildRun(WireModel):
    """A subagent: a child run in a session of its own, spawned by a run of this session."""

    run_id: str
    session_id: str
    parent_run_id: str
    task_id: str
    name: str
    status: RunStatus
    resumable: bool


class SessionSummary(WireModel):
    session_id: str
    title: str
    updated_at: int
    last_run_id: str | None
    last_run_status: RunStatus | None
    resumable: bool
    children: list[ChildRun] = Field(default_factory=list)
    """The subagent runs of the session's runs (child sessions are not listed on their own)."""


class SessionsResult(WireModel):
    sessions: list[SessionSummary]


class TranscriptToolCall(WireModel):
    id: str
    name: str
    input: dict[str, Any]
    title: str
    tool_kind: ToolKind


class UserEntry(WireModel):
    role: Literal["user"] = "user"
    content: str


class AssistantEntry(WireModel):
    role: Literal["assistant"] = "assistant"
    content: str
    reasoning: str
    tool_calls: list[TranscriptToolCall]


class ToolEntry(WireModel):
    role: Literal["tool"] = "tool"
    tool_call_id: str
    content: str
    is_error: bool


TranscriptMessage: TypeAlias = Annotated[
    UserEntry | AssistantEntry | ToolEntry, Field(discriminator="role")
]


class RunInfo(WireModel):
    """A stored run record."""

    run_id: str
    session_id: str
    status: RunStatus
    error: str | None
    prompt: str | None
    model: str | None
    agent: str | None
    started_at: int
    finished_at: int | None
    usage: Usage | None
    resumable: bool
    parent_run_id: str | None = omitted()
    task_id: str | None = omitted()


class SessionResult(WireModel):
    """A conversation for rendering: messages, the todo list, its runs and their subagents
    (``parentSessionId`` when the session is itself a subagent's)."""

    session_id: str
    title: str
    entries: list[TranscriptMessage]
    todos: list[TodoItem]
    runs: list[RunInfo]
    children: list[ChildRun] = Field(default_factory=list)
    parent_session_id: str | None = omitted()


class DeleteSessionResult(WireModel):
    deleted: bool


class PathRuleView(WireModel):
    pattern: str
    action: str
    ops: list[str]


class CommandRuleView(WireModel):
    pattern: str
    decision: str


class FolderAcl(WireModel):
    """The effective permissions in one workspace folder."""

    uri: str
    path: str
    preset: str
    write: str
    read_outside: str
    write_outside: str
    shell: str
    denied_paths: list[str]
    path_rules: list[PathRuleView]
    command_rules: list[CommandRuleView]


class LiveRun(WireModel):
    run_id: str
    session_id: str
    status: RunStatus
    turns: int
    agent: str
    model: str | None
    started_at: int
    parent_run_id: str | None = omitted()
    task_id: str | None = omitted()


MCPServerState = TypeAliasType(
    "MCPServerState", Literal["idle", "starting", "running", "restarting", "failed", "stopped"]
)


class MCPServerInfo(WireModel):
    """One ``lovia.mcpServers`` entry in the workspace's MCP pool."""

    name: str
    transport: Literal["stdio", "http"]
    state: MCPServerState
    tools: list[str]
    error: str | None
    starts: int
    log: str | None
    """A file with the server's stderr (stdio servers)."""


class SessionRule(WireModel):
    """An ``allow_always`` / ``reject_always`` answer remembered for a session."""

    session_id: str
    subject: str
    decision: Literal["allow", "reject"]


class StatusResult(WireModel):
    version: str
    protocol_version: int
    model: str | None
    agent: str
    state_dir: str
    approvals: Literal["events", "showMessageRequest"]
    edit_mode: EditMode
    folders: list[FolderAcl]
    live_runs: list[LiveRun]
    session_rules: list[SessionRule]
    settings_problems: list[str]
    mcp_servers: list[MCPServerInfo] = Field(default_factory=list)


class MCPRestartResult(WireModel):
    server: MCPServerInfo


class ServerCapabilities(WireModel):
    """``InitializeResult.capabilities.experimental.lovia``: what this server speaks."""

    protocol_version: int
    methods: list[str]
    event_kinds: list[str]
    edit_modes: list[EditMode]
    version: str


# ----------------------------------------------------------------------------- the methods


@dataclass(frozen=True)
class Method(Generic[P, R]):
    """One request: ``lovia/<name>``, also the ``lovia.<name>`` executeCommand command."""

    name: str
    params: type[P]
    result: type[R]
    note: str = ""

    @property
    def command(self) -> str:
        return command_name(self.name)


def command_name(method: str) -> str:
    """``lovia/deleteSession`` -> ``lovia.deleteSession`` (the executeCommand alias)."""
    return method.replace("/", ".", 1)


RUN = Method(
    "lovia/run",
    RunParams,
    LaunchResult,
    "returned at once; the run streams as events and ends with `run.finished`",
)
STEER = Method(
    "lovia/steer",
    SteerParams,
    SteerResult,
    'delivered at the next turn start, echoed as `user.message{source:"steer"}` — a steer that '
    "arrives while the final answer is being written makes the run continue with one more turn, "
    "so an accepted message is never dropped",
)
UNSTEER = Method(
    "lovia/unsteer", UnsteerParams, UnsteerResult, "false once delivered or after the run"
)
APPROVE = Method(
    "lovia/approve",
    ApproveParams,
    ApproveResult,
    "`allow_always`/`reject_always` remember the decision for the session (the file, the exact "
    "command, or the tool); a rejection `message` is what the model is told",
)
ANSWER = Method("lovia/answer", AnswerParams, AnswerResult, "answers an `ask_human` question")
CANCEL = Method(
    "lovia/cancel",
    RunIdParams,
    CancelResult,
    "cooperative, and a tool still running after 3 s is interrupted; completed turns are kept",
)
RESUME = Method(
    "lovia/resume",
    RunIdParams,
    LaunchResult,
    "continues an interrupted run from its checkpoint; pending approvals are asked again",
)
REPLAY = Method("lovia/replay", ReplayParams, ReplayResult, "for any stored run")
SESSIONS = Method("lovia/sessions", SessionsParams, SessionsResult, "newest first")
SESSION = Method(
    "lovia/session", SessionParams, SessionResult, "the transcript as render-ready messages"
)
DELETE_SESSION = Method(
    "lovia/deleteSession",
    SessionParams,
    DeleteSessionResult,
    "refused with -32012 while a run is live",
)
STATUS = Method(
    "lovia/status",
    StatusParams,
    StatusResult,
    "`folders` is the effective ACL per folder; `sessionRules` the remembered decisions",
)
MCP_RESTART = Method(
    "lovia/mcpRestart",
    MCPRestartParams,
    MCPRestartResult,
    "stops one pooled MCP server and starts it again now (-32602 for an unknown name)",
)

METHOD_TABLE: tuple[Method[Any, Any], ...] = (
    RUN,
    STEER,
    UNSTEER,
    APPROVE,
    ANSWER,
    CANCEL,
    RESUME,
    REPLAY,
    SESSIONS,
    SESSION,
    DELETE_SESSION,
    STATUS,
    MCP_RESTART,
)
METHODS: list[str] = [m.name for m in METHOD_TABLE]
EVENT_METHOD = "lovia/event"

__all__ = [
    "ANSWER",
    "APPROVE",
    "CANCEL",
    "DELETE_SESSION",
    "EDIT_MODES",
    "EVENT_METHOD",
    "MCP_RESTART",
    "METHODS",
    "METHOD_TABLE",
    "REPLAY",
    "RESUME",
    "RUN",
    "RUN_STATUSES",
    "SESSION",
    "SESSIONS",
    "STATUS",
    "STEER",
    "UNSTEER",
    "AnswerParams",
    "AnswerResult",
    "ApproveParams",
    "ApproveResult",
    "AssistantEntry",
    "CancelResult",
    "ChildRun",
    "CommandRuleView",
    "ContextItem",
    "DeleteSessionResult",
    "EditMode",
    "FolderAcl",
    "LaunchResult",
    "LiveRun",
    "MCPRestartParams",
    "MCPRestartResult",
    "MCPServerInfo",
    "MCPServerState",
    "Method",
    "PathRuleView",
    "Position",
    "Range",
    "ReplayParams",
    "ReplayResult",
    "RunIdParams",
    "RunInfo",
    "RunParams",
    "RunStatus",
    "ServerCapabilities",
    "SessionParams",
    "SessionResult",
    "SessionRule",
    "SessionSummary",
    "SessionsParams",
    "SessionsResult",
    "StatusParams",
    "StatusResult",
    "SteerParams",
    "SteerResult",
    "ToolEntry",
    "TranscriptMessage",
    "TranscriptToolCall",
    "UnsteerParams",
    "UnsteerResult",
    "UserEntry",
    "as_run_status",
    "command_name",
    "parse_params",
]
