"""Tools: the ``@tool`` decorator and the ``Tool`` type (built-in tools live in submodules)."""

from lovia.tools.base import (
    ApprovalPredicate,
    Tool,
    ToolInvoker,
    ToolPolicy,
    ToolResultRenderer,
    apply_tool_policies,
    clip_text,
    default_result_renderer,
    render_tool_result,
    run_tool,
    tool,
    truncate_tool_output,
)
from lovia.tools.human import HumanChannel, HumanQuestion, QuestionOption, ask_human
from lovia.tools.recall import make_recall_tool, recall_tool_result

__all__ = [
    "ApprovalPredicate",
    "HumanChannel",
    "HumanQuestion",
    "QuestionOption",
    "Tool",
    "ToolInvoker",
    "ToolPolicy",
    "ToolResultRenderer",
    "apply_tool_policies",
    "ask_human",
    "clip_text",
    "default_result_renderer",
    "make_recall_tool",
    "recall_tool_result",
    "render_tool_result",
    "run_tool",
    "tool",
    "truncate_tool_output",
]
