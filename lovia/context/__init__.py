"""Context-window management: policies that shape the per-call view of the transcript.

``Compaction`` (the default) keeps long sessions inside the model's window with sticky,
cheap-first decisions; ``NoopContextPolicy`` sends the transcript as is. See
``docs/context.md``.
"""

from lovia.context.compaction import Compaction
from lovia.context.policy import CompactionRequest, ContextPolicy, ContextResult, NoopContextPolicy
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


def default_policy() -> ContextPolicy:
    """The policy an ``Agent`` gets when it names none: a fresh ``Compaction()``."""
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
