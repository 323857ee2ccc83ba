"""Context-window management: policies that shape the per-call view of the transcript."""

from lovia.context.policy import CompactionRequest, ContextPolicy, ContextResult, NoopContextPolicy


def default_policy() -> ContextPolicy:
    """The policy an ``Agent`` gets when it names none."""
    return NoopContextPolicy()


__all__ = [
    "CompactionRequest",
    "ContextPolicy",
    "ContextResult",
    "NoopContextPolicy",
    "default_policy",
]
