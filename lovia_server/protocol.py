"""The lovia editor protocol: method names, error codes, event kinds (parameter models live in
``params``). Kept free of heavy imports so the server answers ``initialize`` quickly.
"""

from __future__ import annotations

from typing import Any

PROTOCOL_VERSION = 1

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


__all__ = [
    "EDIT_MODES",
    "EVENT_KINDS",
    "METHODS",
    "PROTOCOL_VERSION",
    "TOOL_KINDS",
    "ProtocolError",
    "command_name",
    "invalid_params",
]
