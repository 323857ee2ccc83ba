"""Params and results of every ``lovia/*`` request, and the list of methods.

Each method is one ``Method`` row: its name, params model, result model and a one-line note
for the docs. The server registers its handlers against these rows.

Long because it is the protocol's one list of requests: the schema, the generated TypeScript
and the docs tables are made from it, and a reader compares methods side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Generic, Literal, TypeAlias, TypeVar, get_args

from pydantic import AfterValidator, Field, ValidationError
from typing_extensions import TypeAliasType

from lovia_server.protocol.command_methods import *  # noqa: F403
from lovia_server.protocol.command_methods import CommandsParams, CommandsResult
from lovia_server.protocol.command_methods import __all__ as _command_all
from lovia_server.protocol.errors import invalid_params
from lovia_server.protocol.events import (
    ApprovalChoice,
    CheckpointKind,
    LoviaEvent,
    TodoItem,
    ToolKind,
    Usage,
)
from lovia_server.protocol.wire import WireModel, WireParams, omitted
from lovia_server.protocol.worktree_methods import *  # noqa: F403
from lovia_server.protocol.worktree_methods import (
    Isolation,
    WorktreeApplyParams,
    WorktreeApplyResult,
    WorktreeCounts,
    WorktreeDiffResult,
    WorktreeDiscardResult,
    WorktreeKeepResult,
    WorktreeListParams,
    WorktreeListResult,
    WorktreeRunParams,
)
from lovia_server.protocol.worktree_methods import __all__ as _worktree_all

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
RunMode = TypeAliasType("RunMode", Literal["plan", "act"])
Id = Annotated[str, Field(min_length=1)]

# ----------------------------------------------------------------------------- params


class Position(WireParams):
    line: int = Field(default=0, ge=0)
    character: int = Field(default=0, ge=0)


class Range(WireParams):
    start: Position
    end: Position


ContextKind = TypeAliasType(
    "ContextKind", Literal["file", "folder", "symbol", "selection", "problems"]
)
ProblemSeverity = TypeAliasType("ProblemSeverity", Literal["error", "warning", "info", "hint"])


class Problem(WireParams):
    """One diagnostic of the editor's Problems list."""

    uri: str
    range: Range | None = None
    severity: ProblemSeverity = "error"
    message: str
    source: str | None = None


class ContextItem(WireParams):
    """Something the user attached to a prompt (an ``@`` mention): a file or a line range of
    it, a folder, a workspace symbol, the selection, or Problems. ``kind`` defaults to
    ``folder`` for a directory and ``file`` otherwise; ``label`` is what the user picked (a
    symbol's name); ``problems`` carries the diagnostics for ``kind: "problems"`` (``uri`` is
    then the folder or file they are for)."""

    uri: str
    range: Range | None = None
    kind: ContextKind | None = None
    label: str | None = None
    problems: list[Problem] | None = None


class RunParams(WireParams):
    prompt: NonBlank
    session_id: Id | None = None
    cwd: str | None = None
    context: list[ContextItem] = Field(default_factory=list)
    model: Id | None = None
    agent: Id | None = None
    isolation: Isolation = "workspace"
    """``worktree``: the run works in a git worktree of its own (docs/worktrees.md)."""
    include_uncommitted: bool = True
    """A worktree run starts from HEAD plus the workspace's uncommitted changes."""
    mode: RunMode = "act"
    """``plan``: the agent may read, search and run read-only commands, nothing else (the
    workspace policy refuses the rest, with no approval card) and ends with a plan; ``act``: the
    session's preset (docs/customization.md#plan-mode)."""


class SteerParams(WireParams):
    run_id: Id
    message: NonBlank


class UnsteerParams(WireParams):
    run_id: Id
    message_id: Id


class EditedFile(WireParams):
    """What the user approved for one file of an edit's preview: the whole new text after
    accepting some of its hunks or editing the proposal. ``path`` is one of the approval's
    ``diff`` paths."""

    path: Id
    new_text: str


class ApproveParams(WireParams):
    run_id: Id
    approval_id: Id
    decision: ApprovalChoice
    message: str | None = None
    edits: list[EditedFile] | None = None


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


class CheckpointParams(WireParams):
    checkpoint_id: Id


class RestoreParams(WireParams):
    checkpoint_id: Id
    conversation: bool = False
    """Also cut the conversation back to the checkpoint's turn (like an edit-and-resend)."""
    force_paths: list[str] = Field(default_factory=list)
    """Hand-changed files to overwrite anyway (paths as the preview lists them)."""
    force_all: bool = False
    confirm_protected: list[str] = Field(default_factory=list)
    """Protected files (``protected: true`` in the preview) the user confirmed after seeing the
    warning (paths as the preview lists them); restoring the content of one not listed
    refuses the restore (-32021, ``data.paths``). Removing one needs no confirmation."""


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
    """A run that started (or resumed) and now streams events; a worktree run over the
    ``lovia.worktrees.maxConcurrent`` limit is ``queued`` and starts when a slot frees."""

    session_id: str
    run_id: str
    status: Literal["running", "queued"]


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

    events: list[LoviaEvent]
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
    protected_paths: list[str] = Field(default_factory=list)
    """Writes here always ask, whatever the rules (editor, git and agent configuration)."""
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


class InstructionFileInfo(WireModel):
    """A project instruction file in use (``AGENTS.md`` and friends, docs/customization.md)."""

    path: str
    """Absolute path."""
    folder: str
    """The workspace folder it belongs to (the user's own file: every folder's)."""
    scope: Literal["user", "root", "scoped"]
    """``user``: the user's file; ``root``: a file at the folder's root, in every system prompt;
    ``scoped``: a ``.github/instructions`` file that joins when a file matches ``apply_to``."""
    apply_to: list[str] = Field(default_factory=list)
    cut: bool = False
    """Longer than the size limit: the model sees its start and a note."""

    def label(self) -> str:
        """How a door names it to the user: relative to its folder, with what it covers."""
        folder = self.folder.rstrip("/") + "/"
        shown = self.path[len(folder) :] if self.path.startswith(folder) else self.path
        if self.scope == "scoped" and self.apply_to:
            shown += f" (for {', '.join(self.apply_to)})"
        return shown + (" (cut)" if self.cut else "")


def instructions_line(files: list[InstructionFileInfo]) -> str | None:
    """The one line a door shows once per session (``lovia chat``, ACP)."""
    return f"instructions: {', '.join(f.label() for f in files)}" if files else None


class SessionRule(WireModel):
    """An ``allow_always`` / ``reject_always`` answer remembered for a session."""

    session_id: str
    subject: str
    decision: Literal["allow", "reject"]


FileChangeStatus = TypeAliasType("FileChangeStatus", Literal["added", "modified", "deleted"])
RestoreAction = TypeAliasType("RestoreAction", Literal["create", "modify", "delete"])
SkipReason = TypeAliasType(
    "SkipReason",
    Literal["too_large", "unreadable", "denied", "unsaved_file_in_the_way", "failed"],
)


class ChangedFile(WireModel):
    path: str
    uri: str
    status: FileChangeStatus


class CheckpointInfo(WireModel):
    """A restore point: the files of a workspace folder as they were before a turn changed
    them (``turn``), or just before a restore (``restore``: restoring it undoes that)."""

    checkpoint_id: str
    kind: CheckpointKind
    session_id: str | None
    run_id: str | None
    turn_index: int | None
    created_at: int
    label: str
    user_message: str | None
    changed_files: list[ChangedFile]
    """What changed from this point to the state recorded after it: for a turn, the files
    the turn changed (hand changes excluded); at most 200 are listed."""
    changed_count: int
    restores: str | None
    """For a ``restore`` point: the checkpoint that restore went back to."""
    root: str
    root_uri: str


class CheckpointsResult(WireModel):
    session_id: str
    available: bool
    """False when restore points are off (``reason`` says why: no git, or the setting)."""
    reason: str | None = omitted()
    checkpoints: list[CheckpointInfo]


class SkippedFile(WireModel):
    path: str
    reason: SkipReason
    detail: str | None = omitted()


class RestoreFile(WireModel):
    """What a restore does to one file; ``oldText`` is the file now, ``newText`` after."""

    path: str
    uri: str
    action: RestoreAction
    hand_changed: bool
    """Changed by hand after the checkpoint (or unsaved in the editor): kept unless forced."""
    unsaved: bool
    """The editor holds unsaved changes of this file."""
    binary: bool
    old_text: str | None
    new_text: str | None
    diff: str
    text_omitted: bool
    """Text and diff left out: the file is binary or too big, or the preview reached its
    size budget."""
    protected: bool = False
    """Editor, git, CI or agent configuration (the workspace's protected paths): restoring its
    content needs ``confirmProtected``."""


class RestorePreviewResult(WireModel):
    checkpoint: CheckpointInfo
    files: list[RestoreFile]
    hand_changed: list[str]
    skipped: list[SkippedFile]


class RestoreResult(WireModel):
    """Named as it is: the wire form of ``lovia.workspace.restore_points.RestoreResult``."""

    checkpoint: CheckpointInfo
    undo_checkpoint: CheckpointInfo | None
    """Taken just before restoring: restoring it undoes this restore."""
    restored: list[ChangedFile]
    kept: list[str]
    """Hand-changed files left as they were (pass them in ``forcePaths`` to overwrite)."""
    skipped: list[SkippedFile]
    removed_runs: list[str]
    """With ``conversation``: the runs cut from the session."""
    prompt: str | None
    """With ``conversation``: the cut turn's prompt, to edit and send again."""


class DeliveryStats(WireModel):
    """How far the client is behind reading the server's output (see "A slow or stopped
    client" in docs/server.md): what waits for it, and what it was not sent live."""

    queued_bytes: int
    """Notifications queued for the client, not yet in its pipe."""
    limit_bytes: int
    """Above this, replayable events are not sent until the client catches up
    (``LOVIA_WRITE_QUEUE_MB``)."""
    dropped_events: int
    """Events not sent live since start-up (they stay replayable: ``lovia/replay``)."""
    dropped_bytes: int
    skipped_deltas: int
    """Events the transport refused while the client was behind (replayable too)."""


class SandboxStatus(WireModel):
    """How the shell commands of this server's runs are confined (``lovia.sandbox``)."""

    kind: Literal["bubblewrap"] | None
    """The sandbox in use; null when commands run unconfined."""
    enabled: bool
    """Commands run in the sandbox (false: not available here, or ``enabled: off``)."""
    setting: Literal["auto", "on", "off"]
    network: Literal["allow", "ask", "deny"]
    """``allow``: every command; ``ask``: approved network commands; ``deny``: allowlist only."""
    allowed_domains: list[str]
    reason: str | None
    """Why commands are not sandboxed (or refuse to run), for the user; null when they are."""


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
    sandbox: SandboxStatus
    delivery: DeliveryStats | None = omitted()
    """Present when the server writes to a pipe it queues for (stdio)."""
    worktrees: WorktreeCounts | None = omitted()
    """Open worktree runs by where they stand (docs/worktrees.md)."""
    instructions: list[InstructionFileInfo] = Field(default_factory=list)
    """The project instruction files in use; an ``AGENTS.md`` below a folder's root joins a
    conversation when the agent works there and is not listed (docs/customization.md)."""


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
    "so an accepted message is never dropped. A message that starts with `/name` is a command, "
    'not a steer: -32602 (`field: "message"`) with a hint to send it when the run has ended (a '
    "path such as `/usr/bin/env is old`, or a line begun with a space, steers)",
)
UNSTEER = Method(
    "lovia/unsteer", UnsteerParams, UnsteerResult, "false once delivered or after the run"
)
APPROVE = Method(
    "lovia/approve",
    ApproveParams,
    ApproveResult,
    "`allow_always`/`reject_always` remember the decision for the session (the file; the exact "
    "command text, whitespace included, together with the resolved directory it runs in — "
    '`lovia/status` lists it as `shell:["<cwd>", "<command>"]`; or the tool); '
    "a rejection `message` is what the model is told; `edits` (with an "
    "allow decision, for an approval with a `diff`) is the text the user approved per file — "
    "some hunks accepted, or the proposal edited: that text is written instead of the tool's and "
    "the model is told exactly what was applied",
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
CHECKPOINTS = Method(
    "lovia/checkpoints",
    SessionParams,
    CheckpointsResult,
    "oldest first; a turn gets one before its first call that may change files",
)
RESTORE_PREVIEW = Method(
    "lovia/restorePreview",
    CheckpointParams,
    RestorePreviewResult,
    "what `lovia/restore` would change, with each file's text and diff; files changed by hand "
    "after the checkpoint (or unsaved in the editor) are flagged",
)
RESTORE = Method(
    "lovia/restore",
    RestoreParams,
    RestoreResult,
    "takes an undo checkpoint first; hand-changed files are kept unless forced; refused with "
    "-32017 while a run is live in that folder, and with -32021 when it would write a "
    "protected file not listed in `confirmProtected`",
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
COMMANDS = Method(
    "lovia/commands",
    CommandsParams,
    CommandsResult,
    "the `/` commands a prompt may start with (built-in, the workspace's, the user's); "
    "`lovia/run` expands such a prompt, answers `/help` without the model and refuses an "
    "unknown `/name` with -32602 and `data.hint`",
)
WORKTREE_LIST = Method(
    "lovia/worktree/list",
    WorktreeListParams,
    WorktreeListResult,
    "the worktree runs of this state directory with their state, newest first",
)
WORKTREE_DIFF = Method(
    "lovia/worktree/diff",
    WorktreeRunParams,
    WorktreeDiffResult,
    "the files a worktree run changed against its base, judged against the workspace now",
)
WORKTREE_APPLY = Method(
    "lovia/worktree/apply",
    WorktreeApplyParams,
    WorktreeApplyResult,
    "lands the reviewed changes after a restore point; any conflict and nothing is written "
    "(a folder that is a symbolic link is one); a protected file lands only when listed in "
    "`confirmProtected` (-32021 otherwise); the worktree and branch go once applied; "
    "`alsoDiscard` discards the other candidates",
)
WORKTREE_DISCARD = Method(
    "lovia/worktree/discard",
    WorktreeRunParams,
    WorktreeDiscardResult,
    "removes the worktree and its branch (-32012 while the run is live)",
)
WORKTREE_KEEP = Method(
    "lovia/worktree/keep",
    WorktreeRunParams,
    WorktreeKeepResult,
    "commits the run's work on its branch, removes the worktree, leaves the branch to the user",
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
    CHECKPOINTS,
    RESTORE_PREVIEW,
    RESTORE,
    STATUS,
    MCP_RESTART,
    COMMANDS,
    WORKTREE_LIST,
    WORKTREE_DIFF,
    WORKTREE_APPLY,
    WORKTREE_DISCARD,
    WORKTREE_KEEP,
)
METHODS: list[str] = [m.name for m in METHOD_TABLE]
EVENT_METHOD = "lovia/event"


__all__ = [
    "ANSWER",
    "APPROVE",
    "CANCEL",
    "CHECKPOINTS",
    "COMMANDS",
    "DELETE_SESSION",
    "EDIT_MODES",
    "EVENT_METHOD",
    "MCP_RESTART",
    "METHODS",
    "METHOD_TABLE",
    "REPLAY",
    "RESTORE",
    "RESTORE_PREVIEW",
    "RESUME",
    "RUN",
    "RUN_STATUSES",
    "SESSION",
    "SESSIONS",
    "STATUS",
    "STEER",
    "UNSTEER",
    "WORKTREE_APPLY",
    "WORKTREE_DIFF",
    "WORKTREE_DISCARD",
    "WORKTREE_KEEP",
    "WORKTREE_LIST",
    "AnswerParams",
    "AnswerResult",
    "ApproveParams",
    "ApproveResult",
    "AssistantEntry",
    "CancelResult",
    "ChangedFile",
    "CheckpointInfo",
    "CheckpointParams",
    "CheckpointsResult",
    "ChildRun",
    "CommandRuleView",
    "ContextItem",
    "ContextKind",
    "DeleteSessionResult",
    "DeliveryStats",
    "EditMode",
    "EditedFile",
    "FileChangeStatus",
    "FolderAcl",
    "InstructionFileInfo",
    "instructions_line",
    "LaunchResult",
    "LiveRun",
    "MCPRestartParams",
    "MCPRestartResult",
    "MCPServerInfo",
    "MCPServerState",
    "Method",
    "PathRuleView",
    "Position",
    "Problem",
    "ProblemSeverity",
    "Range",
    "ReplayParams",
    "ReplayResult",
    "RestoreAction",
    "RestoreFile",
    "RestoreParams",
    "RestorePreviewResult",
    "RestoreResult",
    "RunIdParams",
    "RunInfo",
    "RunParams",
    "RunMode",
    "RunStatus",
    "SandboxStatus",
    "ServerCapabilities",
    "SessionParams",
    "SessionResult",
    "SessionRule",
    "SessionSummary",
    "SessionsParams",
    "SessionsResult",
    "SkipReason",
    "SkippedFile",
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
    *_worktree_all,
    *_command_all,
]
