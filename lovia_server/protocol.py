"""The lovia editor protocol: method names, parameter models, error codes, event kinds.

One pydantic model per request validates its params; field names are the wire's camelCase.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

PROTOCOL_VERSION = 1

M = TypeVar("M", bound=BaseModel)

# ----------------------------------------------------------------------------- methods

RUN = "lovia/run"
STEER = "lovia/steer"
UNSTEER = "lovia/unsteer"
APPROVE = "lovia/approve"
ANSWER = "lovia/answer"
CANCEL = "lovia/cancel"
RESUME = "lovia/resume"
REPLAY = "lovia/replay"
SESSIONS = "lovia/sessions"
SESSION = "lovia/session"
DELETE_SESSION = "lovia/deleteSession"
STATUS = "lovia/status"
EVENT = "lovia/event"

METHODS = [
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
]


def command_name(method: str) -> str:
    """``lovia/deleteSession`` -> ``lovia.deleteSession`` (the executeCommand alias)."""
    return method.replace("/", ".", 1)


EVENT_KINDS = [
    "run.started",
    "user.message",
    "message.delta",
    "reasoning.delta",
    "message.completed",
    "output.discarded",
    "tool.call",
    "tool.update",
    "tool.result",
    "approval.requested",
    "approval.resolved",
    "question.requested",
    "question.answered",
    "todo.updated",
    "handoff",
    "compaction",
    "usage.updated",
    "run.finished",
]

EDIT_MODES = ["server", "workspaceEdit"]
TOOL_KINDS = ["read", "edit", "delete", "move", "search", "execute", "fetch", "think", "other"]
DECISIONS = ["allow_once", "allow_always", "reject_once", "reject_always"]

# ----------------------------------------------------------------------------- errors

SERVER_NOT_INITIALIZED = -32002
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RUN_NOT_FOUND = -32010
RUN_NOT_ACTIVE = -32011
RUN_ALREADY_ACTIVE = -32012
APPROVAL_NOT_FOUND = -32013
NOT_RESUMABLE = -32014
PATH_OUTSIDE_WORKSPACE = -32015
MODEL_NOT_CONFIGURED = -32016


class ProtocolError(Exception):
    """An error answered to the client with a documented code and ``data``."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data or {}


def invalid_params(message: str, field: str, **extra: Any) -> ProtocolError:
    return ProtocolError(INVALID_PARAMS, message, {"field": field, **extra})


# ----------------------------------------------------------------------------- params


class _Params(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)


class Range(BaseModel):
    start: dict[str, int]
    end: dict[str, int]


class ContextItem(BaseModel):
    uri: str
    range: Range | None = None


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


class RunParams(_Params):
    prompt: Annotated[str, AfterValidator(_not_blank)] = Field(min_length=1)
    sessionId: str | None = Field(default=None, min_length=1)
    cwd: str | None = None
    context: list[ContextItem] = Field(default_factory=list)
    model: str | None = Field(default=None, min_length=1)
    agent: str | None = Field(default=None, min_length=1)


class SteerParams(_Params):
    runId: str = Field(min_length=1)
    message: Annotated[str, AfterValidator(_not_blank)] = Field(min_length=1)


class UnsteerParams(_Params):
    runId: str = Field(min_length=1)
    messageId: str = Field(min_length=1)


class ApproveParams(_Params):
    runId: str = Field(min_length=1)
    approvalId: str = Field(min_length=1)
    decision: Literal["allow_once", "allow_always", "reject_once", "reject_always"]
    message: str | None = None


class AnswerParams(_Params):
    runId: str = Field(min_length=1)
    questionId: str = Field(min_length=1)
    answer: str


class RunIdParams(_Params):
    runId: str = Field(min_length=1)


class ReplayParams(_Params):
    runId: str = Field(min_length=1)
    afterSeq: int = Field(default=0, ge=0)


class SessionsParams(_Params):
    limit: int = Field(default=50, ge=1, le=1000)
    offset: int = Field(default=0, ge=0)
    query: str | None = None


class SessionParams(_Params):
    sessionId: str = Field(min_length=1)


class StatusParams(_Params):
    pass


def parse_params(model: type[M], params: Any) -> M:
    """Validate raw params; the first error becomes -32602 with ``data.field``."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise invalid_params("params must be an object", "params")
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        field = ".".join(str(p) for p in err.get("loc", ())) or "params"
        raise invalid_params(f"Invalid {field}: {err.get('msg', 'invalid value')}", field) from None


__all__ = [
    "EDIT_MODES",
    "EVENT_KINDS",
    "METHODS",
    "PROTOCOL_VERSION",
    "TOOL_KINDS",
    "ProtocolError",
    "command_name",
    "invalid_params",
    "parse_params",
]
