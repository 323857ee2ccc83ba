"""Tools: the ``@tool`` decorator, the ``Tool`` type and the opt-in built-in tools.

Nothing here is attached to an agent automatically: pass the tools you want in
``Agent(tools=[...])``.
"""

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
from lovia.tools.http import http_request, writes_need_approval
from lovia.tools.human import HumanChannel, HumanQuestion, QuestionOption, ask_human
from lovia.tools.page import (
    HttpReader,
    Page,
    PageImage,
    PageReader,
    html_to_markdown,
    page_reader,
    read_page,
)
from lovia.tools.recall import make_recall_tool, recall_tool_result
from lovia.tools.search import (
    DuckDuckGoSearch,
    SearchResult,
    TavilySearch,
    WebSearch,
    duckduckgo_search,
    tavily_search,
    web_search,
)
from lovia.tools.time import current_date, now, sleep

__all__ = [
    "ApprovalPredicate",
    "DuckDuckGoSearch",
    "HttpReader",
    "HumanChannel",
    "HumanQuestion",
    "Page",
    "PageImage",
    "PageReader",
    "QuestionOption",
    "SearchResult",
    "TavilySearch",
    "Tool",
    "ToolInvoker",
    "ToolPolicy",
    "ToolResultRenderer",
    "WebSearch",
    "apply_tool_policies",
    "ask_human",
    "clip_text",
    "current_date",
    "default_result_renderer",
    "duckduckgo_search",
    "html_to_markdown",
    "http_request",
    "make_recall_tool",
    "now",
    "page_reader",
    "read_page",
    "recall_tool_result",
    "render_tool_result",
    "run_tool",
    "sleep",
    "tavily_search",
    "tool",
    "truncate_tool_output",
    "web_search",
    "writes_need_approval",
]
