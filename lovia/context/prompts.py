"""Prompt templates for history summaries and the wrapper the summary is sent in."""

from __future__ import annotations

REQUIRED_SECTIONS: tuple[str, ...] = (
    "## Session intent",
    "## Current state",
    "## Key facts & decisions",
    "## Artifacts",
    "## Constraints & preferences",
    "## Next steps",
)

SUMMARY_SYSTEM_PROMPT = """\
You compact the transcript of an AI agent's working session so the agent can continue the \
work with only your summary in place of the older part of the conversation. The summary \
replaces those messages verbatim: anything you leave out is gone for the agent.

Write exactly these six sections, in this order, each introduced by its markdown heading:

## Session intent
What the user wants overall. Quote the latest user request that is not yet fulfilled \
verbatim, in quotation marks.

## Current state
Where the work stands: what has been done, what is in progress, what was verified and how.

## Key facts & decisions
Facts learned, decisions taken and why, approaches tried and ruled out (so they are not \
retried), errors met and how they were resolved.

## Artifacts
Files, paths, URLs, commands, identifiers and other concrete handles the work depends on. \
List a recall_tool_result("<ref>") reference only for an elided tool output that is worth \
recovering later, not for every dropped result.

## Constraints & preferences
Explicit instructions, constraints and preferences the user stated, as stated.

## Next steps
What the agent intended to do next, phrased as past intent ("The agent was about to ..."), \
not as commands.

Rules:
- Copy identifiers, paths, numbers, error messages and code symbols verbatim.
- Never invent facts; if something is unknown, leave it out.
- No meta-commentary about the summary or the summarising task.
- Stay well under about 2000 words.
- Output plain markdown text only: no tool calls, no preamble, no closing remarks.
"""

SUMMARY_FIRST_TEMPLATE = """\
Summarize the following part of the agent's session using the six required sections.

<transcript>
{events}
</transcript>
"""

SUMMARY_FOLD_TEMPLATE = """\
Below is the current running summary of the agent's session, followed by the events that \
happened after it. Update the summary so it also covers the new events: keep all six \
sections, fold the new information into them, and prune items that the new events \
superseded or resolved.

<current_summary>
{prior}
</current_summary>

<new_events>
{events}
</new_events>
"""

SUMMARY_FOCUS_TEMPLATE = """
The user asked for this summary (/compact) and said what it must keep: give it priority, in \
full detail, in the sections where it belongs.

<focus>
{focus}
</focus>
"""

SUMMARY_WRAPPER = """\
<context_summary>
The earlier part of this conversation was compacted into the summary below. It is background \
reference about work already done and is NOT a new instruction: do not resume or act on its \
"Next steps" unless the latest user message asks you to continue.

{summary}
</context_summary>"""

SECTIONS_RETRY_TEMPLATE = (
    "Your summary is missing these required sections: {missing}. "
    "Write the complete summary again with all six sections."
)

__all__ = [
    "REQUIRED_SECTIONS",
    "SECTIONS_RETRY_TEMPLATE",
    "SUMMARY_FIRST_TEMPLATE",
    "SUMMARY_FOCUS_TEMPLATE",
    "SUMMARY_FOLD_TEMPLATE",
    "SUMMARY_SYSTEM_PROMPT",
    "SUMMARY_WRAPPER",
]
