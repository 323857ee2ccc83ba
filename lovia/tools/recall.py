"""``recall_tool_result``: lets the model recover a tool output that compaction elided.

Markers in the compacted view name a reference: the call id for a cleared result, the
content digest for an offloaded one. The tool resolves it from the result store (when one is
bound), else from the live transcript, which always keeps the full output.
"""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING, Any

from lovia.context.state import result_digest
from lovia.exceptions import InvalidToolArguments
from lovia.tools.base import Tool
from lovia.transcript import ToolResultEntry

if TYPE_CHECKING:
    from lovia.context.store import ResultStore
    from lovia.run_context import RunContext

logger = logging.getLogger("lovia.tools.recall")

RECALL_TOOL_NAME = "recall_tool_result"

RECALL_DESCRIPTION = (
    "Retrieve the full output of an earlier tool call that was cleared or trimmed to save "
    "context. Pass the reference quoted in the marker, e.g. "
    'recall_tool_result("call_abc123"). Only recall what you actually need: the output comes '
    "back in full."
)

RECALL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ref": {
            "type": "string",
            "description": "The reference from the marker: a tool call id or an output digest.",
        }
    },
    "required": ["ref"],
    "additionalProperties": False,
}


async def recall(ref: str, ctx: RunContext[Any], store: ResultStore | None = None) -> str:
    """Resolve ``ref``: store, then call id, then output digest (both newest first)."""
    if store is not None:
        try:
            stored = await store.get(ref)
        except Exception:
            logger.warning(
                "recall.store_failed: ref=%r; searching the transcript", ref, exc_info=True
            )
            stored = None
        if stored is not None:
            return stored
    entries = ctx.entries
    for entry in reversed(entries):
        if isinstance(entry, ToolResultEntry) and entry.call_id == ref:
            return entry.output
    for entry in reversed(entries):
        if isinstance(entry, ToolResultEntry) and result_digest(entry.output) == ref:
            return entry.output
    return f"No tool result found for reference {ref!r}."


def make_recall_tool(store: ResultStore | None = None) -> Tool:
    """A ``recall_tool_result`` tool bound to ``store`` (``None``: transcript only)."""

    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> Any:
        ref = args.get("ref")
        if not isinstance(ref, str):
            raise InvalidToolArguments(
                f"Invalid arguments for tool '{RECALL_TOOL_NAME}': ref: a string is required"
            )
        return await recall(ref, ctx, store)

    return Tool(
        name=RECALL_TOOL_NAME,
        description=RECALL_DESCRIPTION,
        parameters=copy.deepcopy(RECALL_PARAMETERS),
        invoke=invoke,
        kind="read",
        title=lambda args: f"Recall tool result {args.get('ref', '')}".rstrip(),
    )


recall_tool_result: Tool = make_recall_tool(None)
"""The store-less recall tool, for agents that use a custom context policy."""

__all__ = [
    "RECALL_DESCRIPTION",
    "RECALL_PARAMETERS",
    "RECALL_TOOL_NAME",
    "make_recall_tool",
    "recall",
    "recall_tool_result",
]
