"""Declarative evals: ``Case`` + checks -> ``evaluate()`` -> ``Report``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lovia._lazy import lazy_exports

if TYPE_CHECKING:
    from lovia.eval.checks import (
        Check,
        CheckResult,
        all_of,
        any_of,
        contains,
        equals,
        matches,
        max_tokens,
        max_turns,
        no_error,
        not_contains,
        regex,
        run_check,
        tool_called,
        tool_not_called,
        weighted,
    )
    from lovia.eval.judge import Verdict, llm_judge
    from lovia.eval.report import CaseResult, Diff, Report, SampleResult
    from lovia.eval.runner import AgentSource, Case, evaluate

_LAZY: dict[str, str] = {
    "Check": "lovia.eval.checks",
    "CheckResult": "lovia.eval.checks",
    "all_of": "lovia.eval.checks",
    "any_of": "lovia.eval.checks",
    "contains": "lovia.eval.checks",
    "equals": "lovia.eval.checks",
    "matches": "lovia.eval.checks",
    "max_tokens": "lovia.eval.checks",
    "max_turns": "lovia.eval.checks",
    "no_error": "lovia.eval.checks",
    "not_contains": "lovia.eval.checks",
    "regex": "lovia.eval.checks",
    "run_check": "lovia.eval.checks",
    "tool_called": "lovia.eval.checks",
    "tool_not_called": "lovia.eval.checks",
    "weighted": "lovia.eval.checks",
    "Verdict": "lovia.eval.judge",
    "llm_judge": "lovia.eval.judge",
    "CaseResult": "lovia.eval.report",
    "Diff": "lovia.eval.report",
    "Report": "lovia.eval.report",
    "SampleResult": "lovia.eval.report",
    "AgentSource": "lovia.eval.runner",
    "Case": "lovia.eval.runner",
    "evaluate": "lovia.eval.runner",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


__all__ = [
    "AgentSource",
    "Case",
    "CaseResult",
    "Check",
    "CheckResult",
    "Diff",
    "Report",
    "SampleResult",
    "Verdict",
    "all_of",
    "any_of",
    "contains",
    "equals",
    "evaluate",
    "llm_judge",
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
