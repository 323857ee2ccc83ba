"""What a ``/compact`` run says when it ends (``Runner.stream(..., compact=CompactNow())``).

The run compacts its session's conversation instead of calling the model (see
``RunLoop._compact_now``); its output is one of these lines, for the user, never the model.
"""

from __future__ import annotations

from lovia.context.policy import ContextResult

EMPTY = "Nothing to compact: the conversation is empty."


def compacted(result: ContextResult) -> str:
    """The compaction that was made: the estimated size before and after, and the detail."""
    before, after = result.tokens_before, result.tokens_after
    sizes = f" from about {before:,} to {after:,} tokens" if before and after else ""
    detail = [d for d in result.detail if not d.startswith("context was")]
    said = f" ({'; '.join(detail)})" if detail else ""
    return f"Compacted the conversation{sizes}{said}. Later turns continue from the summary."


def not_compacted(result: ContextResult) -> str:
    """Why nothing was compacted: a failed summary, or nothing new to summarise."""
    failed = [d for d in result.detail if "could not" in d]
    if failed:
        return f"The conversation was not compacted: {failed[0]}."
    return (
        "Nothing new to compact: the summary already covers the conversation (or this agent's "
        "context policy does not compact on request)."
    )


__all__ = ["EMPTY", "compacted", "not_compacted"]
