"""Request parameter models: one pydantic model per method; field names are the wire's camelCase."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from lovia_server.protocol import invalid_params

M = TypeVar("M", bound=BaseModel)


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
    "AnswerParams",
    "ApproveParams",
    "ReplayParams",
    "RunIdParams",
    "RunParams",
    "SessionParams",
    "SessionsParams",
    "StatusParams",
    "SteerParams",
    "UnsteerParams",
    "parse_params",
]
