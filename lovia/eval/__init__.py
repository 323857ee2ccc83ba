"""Declarative evals: ``Case`` + checks -> ``evaluate()`` -> ``Report``."""

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
