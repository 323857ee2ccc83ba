"""Context-window management: policies that shape the per-call view of the transcript.

``Compaction`` (the default) keeps long sessions inside the model's window with sticky,
cheap-first decisions; ``NoopContextPolicy`` sends the transcript as is. See
``docs/context.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lovia._lazy import lazy_exports

if TYPE_CHECKING:
    from lovia.context.compaction import Compaction
    from lovia.context.policy import (
        CompactionRequest,
        ContextPolicy,
        ContextResult,
        NoopContextPolicy,
    )
    from lovia.context.prompts import REQUIRED_SECTIONS, SUMMARY_SYSTEM_PROMPT, SUMMARY_WRAPPER
    from lovia.context.render import clear_marker, offload_marker, render_view, summary_entry
    from lovia.context.stages import (
        ClearToolResults,
        OffloadToolResults,
        Stage,
        StageContext,
        SummarizeHistory,
    )
    from lovia.context.state import CompactionState, OffloadRecord, SummaryState
    from lovia.context.store import FileResultStore, InMemoryResultStore, ResultStore
    from lovia.context.summarizer import LLMSummarizer, Summarizer, transcript_to_text
    from lovia.context.tokens import TokenBudget, TokenCounter

_LAZY: dict[str, str] = {
    "Compaction": "lovia.context.compaction",
    "CompactionRequest": "lovia.context.policy",
    "ContextPolicy": "lovia.context.policy",
    "ContextResult": "lovia.context.policy",
    "NoopContextPolicy": "lovia.context.policy",
    "REQUIRED_SECTIONS": "lovia.context.prompts",
    "SUMMARY_SYSTEM_PROMPT": "lovia.context.prompts",
    "SUMMARY_WRAPPER": "lovia.context.prompts",
    "clear_marker": "lovia.context.render",
    "offload_marker": "lovia.context.render",
    "render_view": "lovia.context.render",
    "summary_entry": "lovia.context.render",
    "ClearToolResults": "lovia.context.stages",
    "OffloadToolResults": "lovia.context.stages",
    "Stage": "lovia.context.stages",
    "StageContext": "lovia.context.stages",
    "SummarizeHistory": "lovia.context.stages",
    "CompactionState": "lovia.context.state",
    "OffloadRecord": "lovia.context.state",
    "SummaryState": "lovia.context.state",
    "FileResultStore": "lovia.context.store",
    "InMemoryResultStore": "lovia.context.store",
    "ResultStore": "lovia.context.store",
    "LLMSummarizer": "lovia.context.summarizer",
    "Summarizer": "lovia.context.summarizer",
    "transcript_to_text": "lovia.context.summarizer",
    "TokenBudget": "lovia.context.tokens",
    "TokenCounter": "lovia.context.tokens",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


def default_policy() -> ContextPolicy:
    """The policy an ``Agent`` gets when it names none: a fresh ``Compaction()``."""
    from lovia.context.compaction import Compaction

    return Compaction()


__all__ = [
    "REQUIRED_SECTIONS",
    "SUMMARY_SYSTEM_PROMPT",
    "SUMMARY_WRAPPER",
    "ClearToolResults",
    "Compaction",
    "CompactionRequest",
    "CompactionState",
    "ContextPolicy",
    "ContextResult",
    "FileResultStore",
    "InMemoryResultStore",
    "LLMSummarizer",
    "NoopContextPolicy",
    "OffloadRecord",
    "OffloadToolResults",
    "ResultStore",
    "Stage",
    "StageContext",
    "SummarizeHistory",
    "Summarizer",
    "SummaryState",
    "TokenBudget",
    "TokenCounter",
    "clear_marker",
    "default_policy",
    "offload_marker",
    "render_view",
    "summary_entry",
    "transcript_to_text",
]
