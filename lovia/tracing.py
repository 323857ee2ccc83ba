"""Tracing: a tiny span protocol with no-op, console and in-memory tracers."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager as ContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol


class SpanName(StrEnum):
    RUN = "run"
    MODEL_CALL = "model_call"
    TOOL_CALL = "tool_call"
    HANDOFF = "handoff"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class Span(Protocol):
    def set_attribute(self, key: str, value: Any) -> None: ...

    def record_exception(self, exc: BaseException) -> None: ...


class Tracer(Protocol):
    def span(self, name: str, /, **attributes: Any) -> ContextManager[Span]: ...


class _NoopSpan:
    def set_attribute(self, key: str, value: Any) -> None:
        pass

    def record_exception(self, exc: BaseException) -> None:
        pass


_NOOP_SPAN = _NoopSpan()


class _NoopContext:
    def __enter__(self) -> _NoopSpan:
        return _NOOP_SPAN

    def __exit__(self, *exc: object) -> None:
        return None


_NOOP_CONTEXT = _NoopContext()


class NoopTracer:
    """The default tracer; costs one attribute lookup per span."""

    def span(self, name: str, /, **attributes: Any) -> ContextManager[Span]:
        return _NOOP_CONTEXT


_depth: contextvars.ContextVar[int] = contextvars.ContextVar("lovia_trace_depth", default=0)


@dataclass
class _ConsoleSpan:
    attrs: dict[str, Any]
    exception: BaseException | None = None

    def set_attribute(self, key: str, value: Any) -> None:
        self.attrs[key] = value

    def record_exception(self, exc: BaseException) -> None:
        self.exception = exc


class ConsoleTracer:
    """Logs one INFO line per finished span, indented by nesting depth."""

    def __init__(self, *, logger: logging.Logger | None = None, min_duration_ms: float = 0.0):
        self.logger = logger or logging.getLogger("lovia.trace")
        self.min_duration_ms = min_duration_ms

    @contextlib.contextmanager
    def span(self, name: str, /, **attributes: Any) -> Iterator[Span]:
        depth = _depth.get()
        token = _depth.set(depth + 1)
        span = _ConsoleSpan(dict(attributes))
        start = time.perf_counter()
        try:
            yield span
        except BaseException as exc:
            span.record_exception(exc)
            raise
        finally:
            _depth.reset(token)
            ms = (time.perf_counter() - start) * 1000
            if span.exception is not None or ms >= self.min_duration_ms:
                attrs = " ".join(f"{k}={v!r}" for k, v in span.attrs.items())
                line = f"{'  ' * depth}{name} ({ms:.1f}ms)"
                if attrs:
                    line += f" {attrs}"
                error = span.exception
                if error is not None:
                    line += f" ! {type(error).__name__}: {error}"
                self.logger.info(line)


@dataclass
class RecordedSpan:
    name: str
    attrs: dict[str, Any] = field(default_factory=dict)
    duration_ms: float = 0.0
    exception: BaseException | None = None

    def set_attribute(self, key: str, value: Any) -> None:
        self.attrs[key] = value

    def record_exception(self, exc: BaseException) -> None:
        self.exception = exc


class InMemoryTracer:
    """Records spans (appended at span start) for tests and inspection."""

    def __init__(self) -> None:
        self.spans: list[RecordedSpan] = []

    @contextlib.contextmanager
    def span(self, name: str, /, **attributes: Any) -> Iterator[Span]:
        span = RecordedSpan(str(name), dict(attributes))
        self.spans.append(span)
        start = time.perf_counter()
        try:
            yield span
        except BaseException as exc:
            span.record_exception(exc)
            raise
        finally:
            span.duration_ms = (time.perf_counter() - start) * 1000


def run_span(tracer: Tracer, *, agent: str, run_id: str | None) -> ContextManager[Span]:
    return tracer.span(SpanName.RUN.value, agent=agent, run_id=run_id or "")


def model_call_span(tracer: Tracer, *, model: str, turn: int) -> ContextManager[Span]:
    return tracer.span(SpanName.MODEL_CALL.value, model=model, turn=turn)


def tool_call_span(tracer: Tracer, *, name: str, call_id: str) -> ContextManager[Span]:
    return tracer.span(SpanName.TOOL_CALL.value, name=name, call_id=call_id)


def handoff_span(tracer: Tracer, *, from_agent: str, to_agent: str) -> ContextManager[Span]:
    return tracer.span(SpanName.HANDOFF.value, from_agent=from_agent, to_agent=to_agent)


def record_run_end(span: Span, *, turns: int, total_tokens: int) -> None:
    span.set_attribute("turns", turns)
    span.set_attribute("total_tokens", total_tokens)


__all__ = [
    "ConsoleTracer",
    "InMemoryTracer",
    "NoopTracer",
    "RecordedSpan",
    "Span",
    "SpanName",
    "Tracer",
    "handoff_span",
    "model_call_span",
    "record_run_end",
    "run_span",
    "tool_call_span",
]
