"""Checks: anything ``(RunResult) -> CheckResult | bool`` (sync or async), plus ready-made ones.

Every factory here returns a plain function whose ``__name__`` is the check's display name
(``contains('Paris')``, ``no_error`` …), so a custom check is just a function too.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from lovia.runtime.result import RunResult
from lovia.transcript import ToolCallEntry, ToolResultEntry, to_json_safe


@dataclass
class CheckResult:
    """The outcome of one check on one run. ``score`` is optional (``0.0``–``1.0``)."""

    name: str
    passed: bool
    score: float | None = None
    reason: str = ""


CheckOutcome: TypeAlias = CheckResult | bool
Check: TypeAlias = Callable[[RunResult], CheckOutcome | Awaitable[CheckOutcome]]


def check_name(check: Any) -> str:
    """The display name of ``check``: its ``__name__``, else its type's name."""
    name = getattr(check, "__name__", None)
    return name if isinstance(name, str) and name else type(check).__name__


async def run_check(check: Check, result: RunResult) -> CheckResult:
    """Run one check, normalising its outcome; a raising check fails itself, never the suite."""
    name = check_name(check)
    try:
        outcome: Any = check(result)
        if inspect.isawaitable(outcome):
            outcome = await outcome
    except Exception as exc:
        return CheckResult(name, False, reason=f"check raised {type(exc).__name__}: {exc}")
    if isinstance(outcome, CheckResult):
        return outcome
    return CheckResult(name, bool(outcome))


def _snip(value: Any, limit: int = 120) -> str:
    text = str(value).replace("\n", "\\n")
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


_F = TypeVar("_F", bound=Callable[..., Any])


def _named(fn: _F, name: str) -> _F:
    fn.__name__ = name
    fn.__qualname__ = name
    return fn


def _output_text(result: RunResult) -> str:
    output = result.output
    return output if isinstance(output, str) else str(output)


# --------------------------------------------------------------------------- output checks


def contains(value: str, *, ignore_case: bool = False) -> Check:
    """Pass when ``value`` occurs in ``str(output)``."""
    name = f"contains({value!r})"

    def check(result: RunResult) -> CheckResult:
        text = _output_text(result)
        found = (value.casefold() in text.casefold()) if ignore_case else (value in text)
        return CheckResult(
            name, found, reason="" if found else f"not found in output: {_snip(text)}"
        )

    return _named(check, name)


def not_contains(value: str, *, ignore_case: bool = False) -> Check:
    """Pass when ``value`` does not occur in ``str(output)``."""
    name = f"not_contains({value!r})"

    def check(result: RunResult) -> CheckResult:
        text = _output_text(result)
        found = (value.casefold() in text.casefold()) if ignore_case else (value in text)
        return CheckResult(
            name, not found, reason=f"found in output: {_snip(text)}" if found else ""
        )

    return _named(check, name)


def regex(pattern: str | re.Pattern[str], *, flags: int = 0) -> Check:
    """Pass when ``re.search(pattern, str(output))`` matches."""
    compiled = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern, flags)
    name = f"regex({compiled.pattern!r})"

    def check(result: RunResult) -> CheckResult:
        text = _output_text(result)
        ok = compiled.search(text) is not None
        return CheckResult(name, ok, reason="" if ok else f"no match in output: {_snip(text)}")

    return _named(check, name)


def equals(value: Any) -> Check:
    """Pass when ``output == value`` (a pydantic model compares field by field)."""
    name = f"equals({_snip(repr(value), 40)})"

    def check(result: RunResult) -> CheckResult:
        ok = bool(result.output == value)
        return CheckResult(name, ok, reason="" if ok else f"got: {_snip(repr(result.output))}")

    return _named(check, name)


def _plain(value: Any) -> Any:
    """``value`` as plain JSON-like data, or ``value`` itself when it cannot be converted."""
    converted = to_json_safe(value)
    return value if converted is None and value is not None else converted


def _subset(expected: Any, actual: Any) -> bool:
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return False
        return all(key in actual and _subset(sub, actual[key]) for key, sub in expected.items())
    if isinstance(expected, Sequence) and not isinstance(expected, str | bytes | bytearray):
        if not isinstance(actual, Sequence) or isinstance(actual, str | bytes | bytearray):
            return False
        return len(expected) == len(actual) and all(
            _subset(e, a) for e, a in zip(expected, actual, strict=True)
        )
    return bool(expected == actual)


def matches(spec: Mapping[str, Any] | Callable[[Any], Any]) -> Check:
    """Structural check of the output.

    A mapping is a recursive subset: every expected key must be present and match (extra keys
    in the output are ignored; lists must have equal length and match element-wise; scalars
    compare with ``==``). A callable is a predicate on the output.
    """
    if isinstance(spec, Mapping):
        expected = dict(spec)
        name = f"matches({_snip(expected, 60)})"

        def mapping_check(result: RunResult) -> CheckResult:
            data = _plain(result.output)
            ok = _subset(expected, data)
            return CheckResult(name, ok, reason="" if ok else f"got: {_snip(data)}")

        return _named(mapping_check, name)

    predicate = spec
    label = getattr(predicate, "__name__", None)
    name = f"matches({label if isinstance(label, str) and label else 'predicate'})"

    def predicate_check(result: RunResult) -> CheckResult:
        ok = bool(predicate(result.output))
        return CheckResult(
            name, ok, reason="" if ok else f"predicate rejected: {_snip(result.output)}"
        )

    return _named(predicate_check, name)


# --------------------------------------------------------------------------- behaviour checks


def tool_called(tool_name: str) -> Check:
    """Pass when the run called ``tool_name`` at least once."""
    name = f"tool_called({tool_name!r})"

    def check(result: RunResult) -> CheckResult:
        ok = any(isinstance(e, ToolCallEntry) and e.name == tool_name for e in result.entries)
        return CheckResult(name, ok, reason="" if ok else "tool was never called")

    return _named(check, name)


def tool_not_called(tool_name: str) -> Check:
    """Pass when the run never called ``tool_name``."""
    name = f"tool_not_called({tool_name!r})"

    def check(result: RunResult) -> CheckResult:
        called = any(isinstance(e, ToolCallEntry) and e.name == tool_name for e in result.entries)
        return CheckResult(name, not called, reason="tool was called" if called else "")

    return _named(check, name)


def max_turns(n: int) -> Check:
    """Pass when the run took at most ``n`` turns."""
    name = f"max_turns({n})"

    def check(result: RunResult) -> CheckResult:
        ok = result.turns <= n
        return CheckResult(name, ok, reason="" if ok else f"took {result.turns} turns")

    return _named(check, name)


def max_tokens(n: int) -> Check:
    """Pass when the run used at most ``n`` tokens in total (input + output)."""
    name = f"max_tokens({n})"

    def check(result: RunResult) -> CheckResult:
        used = result.usage.total_tokens
        ok = used <= n
        return CheckResult(name, ok, reason="" if ok else f"used {used} tokens")

    return _named(check, name)


def no_error() -> Check:
    """Pass when no tool call of the run ended in an error result."""
    name = "no_error"

    def check(result: RunResult) -> CheckResult:
        errors = [e for e in result.entries if isinstance(e, ToolResultEntry) and e.is_error]
        if not errors:
            return CheckResult(name, True)
        reason = f"{len(errors)} tool error(s): {_snip(errors[0].output)}"
        return CheckResult(name, False, reason=reason)

    return _named(check, name)


# --------------------------------------------------------------------------- composition


def all_of(*checks: Check, name: str = "all_of") -> Check:
    """Pass when every check passes (vacuously true when empty); runs them in order."""

    async def check(result: RunResult) -> CheckResult:
        failures = [r for r in [await run_check(c, result) for c in checks] if not r.passed]
        reason = "; ".join(f"{r.name}: {r.reason or 'failed'}" for r in failures)
        return CheckResult(name, not failures, reason=reason)

    return _named(check, name)


def any_of(*checks: Check, name: str = "any_of") -> Check:
    """Pass when at least one check passes; stops at the first that does. Empty fails."""

    async def check(result: RunResult) -> CheckResult:
        if not checks:
            return CheckResult(name, False, reason="no checks provided")
        names: list[str] = []
        for c in checks:
            outcome = await run_check(c, result)
            if outcome.passed:
                return CheckResult(name, True)
            names.append(outcome.name)
        return CheckResult(name, False, reason="no alternative passed: " + "; ".join(names))

    return _named(check, name)


def weighted(
    weights: Mapping[Check, float], *, threshold: float = 0.7, name: str = "weighted"
) -> Check:
    """A weighted mean of child scores; passes when it reaches ``threshold``.

    A child's score is its ``score`` when it reports one, else ``1.0`` / ``0.0`` by pass/fail
    (a raising child counts ``0.0``).
    """
    items = list(weights.items())
    if not items:
        raise ValueError("weighted() needs at least one check")
    if any(w <= 0 for _, w in items):
        raise ValueError("weighted() weights must be > 0")
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    total = sum(w for _, w in items)

    async def check(result: RunResult) -> CheckResult:
        scored: list[tuple[str, float, float]] = []
        for child, weight in items:
            outcome = await run_check(child, result)
            if outcome.score is not None:
                score = float(outcome.score)
            else:
                score = 1.0 if outcome.passed else 0.0
            scored.append((outcome.name, score, weight))
        value = sum(s * w for _, s, w in scored) / total
        reason = ", ".join(f"{n}={s:.2f}" for n, s, _ in scored)
        return CheckResult(name, value >= threshold, score=value, reason=reason)

    return _named(check, name)


__all__ = [
    "Check",
    "CheckResult",
    "all_of",
    "any_of",
    "check_name",
    "contains",
    "equals",
    "matches",
    "max_tokens",
    "max_turns",
    "no_error",
    "not_contains",
    "regex",
    "run_check",
    "tool_called",
    "tool_not_called",
    "weighted",
]
