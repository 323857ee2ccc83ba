"""Error codes the server answers with, and the exception that carries one to the client."""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ErrorCode(IntEnum):
    """JSON-RPC error codes: the standard ones lovia uses, then lovia's own (-32010..-32021)."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    SERVER_NOT_INITIALIZED = -32002
    REQUEST_CANCELLED = -32800
    RUN_NOT_FOUND = -32010
    RUN_NOT_ACTIVE = -32011
    RUN_ALREADY_ACTIVE = -32012
    APPROVAL_NOT_FOUND = -32013
    NOT_RESUMABLE = -32014
    PATH_OUTSIDE_WORKSPACE = -32015
    MODEL_NOT_CONFIGURED = -32016
    RESTORE_WHILE_RUNNING = -32017
    CHECKPOINT_NOT_FOUND = -32018
    WORKTREE_UNAVAILABLE = -32019
    WORKTREE_NOT_FOUND = -32020
    PROTECTED_PATHS_UNCONFIRMED = -32021

    @property
    def title(self) -> str:
        """The documented name, e.g. ``RunNotFound``."""
        return "".join(part.capitalize() for part in self.name.split("_"))


ERROR_DESCRIPTIONS: dict[ErrorCode, str] = {
    ErrorCode.PARSE_ERROR: "a frame that is not valid JSON (answered with `id: null`)",
    ErrorCode.INVALID_REQUEST: "not a JSON-RPC object (array, number, ...), a bad "
    "`jsonrpc`/`id`/`method`, or a request after `shutdown`; `id` is the request's if "
    "readable, else `null`",
    ErrorCode.METHOD_NOT_FOUND: "a method the server does not serve (standard LSP methods "
    "included)",
    ErrorCode.INVALID_PARAMS: "bad params; `data.field` names the field (e.g. `prompt`, "
    "`context.0.uri`, `agent`)",
    ErrorCode.INTERNAL_ERROR: "unexpected failure: a generic message and `data.type`, never the "
    "exception text or a traceback",
    ErrorCode.SERVER_NOT_INITIALIZED: "a request before `initialize`",
    ErrorCode.REQUEST_CANCELLED: "the request was cancelled with `$/cancelRequest`",
    ErrorCode.RUN_NOT_FOUND: "unknown `runId` / `sessionId`",
    ErrorCode.RUN_NOT_ACTIVE: "steer/cancel/approve/answer on a finished run",
    ErrorCode.RUN_ALREADY_ACTIVE: "`run`/`resume`/`deleteSession` while the session has a live "
    "run (`data.activeRunId`)",
    ErrorCode.APPROVAL_NOT_FOUND: "unknown or already resolved approval or question",
    ErrorCode.NOT_RESUMABLE: "nothing to resume",
    ErrorCode.PATH_OUTSIDE_WORKSPACE: "`cwd`, a `context` item or the agent file outside every "
    "folder",
    ErrorCode.MODEL_NOT_CONFIGURED: "no model or no API key; `data.hint` says what to set",
    ErrorCode.RESTORE_WHILE_RUNNING: "`restore` while a run is live in the checkpoint's "
    "workspace folder (`data.activeRunId`, `data.sessionId`): cancel it or wait for it to end",
    ErrorCode.CHECKPOINT_NOT_FOUND: "unknown `checkpointId` (deleted with its session, pruned "
    "by the size cap, or restore points are off: `data.hint`)",
    ErrorCode.WORKTREE_UNAVAILABLE: '`isolation: "worktree"` refused: `data.reason` is '
    "`git-missing`, `not-a-repo`, `no-commits` or `git-failed`, with `data.hint`; never a "
    "silent run in the workspace",
    ErrorCode.WORKTREE_NOT_FOUND: "`runId` is not a worktree run this server knows, or its "
    "worktree was already applied, discarded or kept (`data.state`)",
    ErrorCode.PROTECTED_PATHS_UNCONFIRMED: "`worktree/apply` or `restore` would write protected "
    "paths (`data.paths`: editor, git, CI or agent configuration) not listed in "
    "`confirmProtected`; nothing was written. Show the message (the warning) and send the "
    "request again with the paths the user confirmed",
}

# Module-level names kept for callers that predate the enum.
SERVER_NOT_INITIALIZED = ErrorCode.SERVER_NOT_INITIALIZED
INVALID_PARAMS = ErrorCode.INVALID_PARAMS
INTERNAL_ERROR = ErrorCode.INTERNAL_ERROR
RUN_NOT_FOUND = ErrorCode.RUN_NOT_FOUND
RUN_NOT_ACTIVE = ErrorCode.RUN_NOT_ACTIVE
RUN_ALREADY_ACTIVE = ErrorCode.RUN_ALREADY_ACTIVE
APPROVAL_NOT_FOUND = ErrorCode.APPROVAL_NOT_FOUND
NOT_RESUMABLE = ErrorCode.NOT_RESUMABLE
PATH_OUTSIDE_WORKSPACE = ErrorCode.PATH_OUTSIDE_WORKSPACE
MODEL_NOT_CONFIGURED = ErrorCode.MODEL_NOT_CONFIGURED
RESTORE_WHILE_RUNNING = ErrorCode.RESTORE_WHILE_RUNNING
CHECKPOINT_NOT_FOUND = ErrorCode.CHECKPOINT_NOT_FOUND
WORKTREE_UNAVAILABLE = ErrorCode.WORKTREE_UNAVAILABLE
WORKTREE_NOT_FOUND = ErrorCode.WORKTREE_NOT_FOUND
PROTECTED_PATHS_UNCONFIRMED = ErrorCode.PROTECTED_PATHS_UNCONFIRMED


class ProtocolError(Exception):
    """An error answered to the client with a documented code and ``data``."""

    def __init__(self, code: ErrorCode, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data or {}


def invalid_params(message: str, field: str, **extra: Any) -> ProtocolError:
    return ProtocolError(ErrorCode.INVALID_PARAMS, message, {"field": field, **extra})


__all__ = [
    "APPROVAL_NOT_FOUND",
    "CHECKPOINT_NOT_FOUND",
    "ERROR_DESCRIPTIONS",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "MODEL_NOT_CONFIGURED",
    "NOT_RESUMABLE",
    "PATH_OUTSIDE_WORKSPACE",
    "PROTECTED_PATHS_UNCONFIRMED",
    "RESTORE_WHILE_RUNNING",
    "RUN_ALREADY_ACTIVE",
    "RUN_NOT_ACTIVE",
    "RUN_NOT_FOUND",
    "SERVER_NOT_INITIALIZED",
    "WORKTREE_NOT_FOUND",
    "WORKTREE_UNAVAILABLE",
    "ErrorCode",
    "ProtocolError",
    "invalid_params",
]
