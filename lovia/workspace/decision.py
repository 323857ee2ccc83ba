"""The allow/ask/deny vocabulary shared by the policy and the command guard.

A leaf module (no workspace imports), so :mod:`lovia.workspace.policy` and
:mod:`lovia.workspace.command_guard` can both use it without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeAlias

Decision: TypeAlias = Literal["allow", "ask", "deny"]
FileOp: TypeAlias = Literal["read", "write"]
CommandDecider: TypeAlias = Callable[[str], "Decision | None"]

SEVERITY: dict[str, int] = {"allow": 0, "ask": 1, "deny": 2}
DECISIONS: tuple[Decision, ...] = ("allow", "ask", "deny")


def normalize(decision: Any) -> Decision:
    """Anything that is not a valid decision fails closed to ``deny``."""
    if decision == "allow":
        return "allow"
    if decision == "ask":
        return "ask"
    return "deny"


def merge_decisions(*decisions: Decision) -> Decision:
    """The most restrictive decision (allow < ask < deny); ``allow`` for no arguments."""
    worst: Decision = "allow"
    for d in decisions:
        nd = normalize(d)
        if SEVERITY[nd] > SEVERITY[worst]:
            worst = nd
            if worst == "deny":
                break
    return worst


__all__ = [
    "DECISIONS",
    "SEVERITY",
    "CommandDecider",
    "Decision",
    "FileOp",
    "merge_decisions",
    "normalize",
]
