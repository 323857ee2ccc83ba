"""Framework exceptions. Every error may carry a ``hint`` telling the user what to do."""

from __future__ import annotations

from typing import Any


class LoviaError(Exception):
    """Base class of every lovia error; ``hint`` says how to fix it."""

    hint: str | None = None

    def __init__(self, message: str = "", *, hint: str | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        for key, value in extra.items():
            setattr(self, key, value)

    def __str__(self) -> str:
        if self.hint:
            if not self.message:
                return self.hint
            return f"{self.message}\n  hint: {self.hint}"
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        extra = {k: v for k, v in self.__dict__.items() if k not in ("message", "hint")}
        return (_rebuild, (type(self), self.message, self.hint, extra))


def _rebuild(cls: type[LoviaError], message: str, hint: str | None, extra: dict[str, Any]) -> Any:
    return cls(message, hint=hint, **extra)


class UserError(LoviaError):
    """The caller misconfigured something."""


class ProviderError(LoviaError):
    """A model provider or its HTTP transport failed.

    ``retryable is None`` counts as retryable; only an explicit ``False`` is final.
    ``retry_after`` is the server's requested wait in seconds (``Retry-After``), if any.
    """

    vendor: str | None = None
    model: str | None = None
    status_code: int | None = None
    retryable: bool | None = None
    retry_after: float | None = None
    body: str | None = None


class ToolError(LoviaError):
    """A tool's structured failure; the text reaches the model."""

    tool_name: str | None = None


class InvalidToolArguments(ToolError):
    """The model's tool arguments failed validation (never retried)."""


class MaxTurnsExceeded(LoviaError):
    """The run reached ``max_turns`` without producing output."""


class OutputValidationError(LoviaError):
    """The final output could not be parsed into the requested type."""

    raw: str | None = None
    output_type_name: str | None = None


class BudgetExceeded(LoviaError):
    """A :class:`~lovia.reliability.RunBudget` limit was crossed."""


class RunCancelled(LoviaError):
    """The run's :class:`~lovia.reliability.CancelToken` was tripped."""


class GuardrailTripped(LoviaError):
    """An input or output guardrail vetoed the run."""


class ContextOverflowError(LoviaError):
    """The prompt exceeded the model's context window."""

    reported_window: int | None = None


class MCPError(LoviaError):
    """A Model Context Protocol server failed."""

    tool_name: str | None = None


__all__ = [
    "BudgetExceeded",
    "ContextOverflowError",
    "GuardrailTripped",
    "InvalidToolArguments",
    "LoviaError",
    "MCPError",
    "MaxTurnsExceeded",
    "OutputValidationError",
    "ProviderError",
    "RunCancelled",
    "ToolError",
    "UserError",
]
