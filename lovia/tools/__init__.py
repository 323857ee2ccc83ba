"""Tools: the ``@tool`` decorator, the ``Tool`` type and the opt-in built-in tools.

Nothing here is attached to an agent automatically: pass the tools you want in
``Agent(tools=[...])``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lovia._lazy import lazy_exports
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

if TYPE_CHECKING:
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

_LAZY: dict[str, str] = {
    "http_request": "lovia.tools.http",
    "writes_need_approval": "lovia.tools.http",
    "HumanChannel": "lovia.tools.human",
    "HumanQuestion": "lovia.tools.human",
    "QuestionOption": "lovia.tools.human",
    "ask_human": "lovia.tools.human",
    "HttpReader": "lovia.tools.page",
    "Page": "lovia.tools.page",
    "PageImage": "lovia.tools.page",
    "PageReader": "lovia.tools.page",
    "html_to_markdown": "lovia.tools.page",
    "page_reader": "lovia.tools.page",
    "read_page": "lovia.tools.page",
    "make_recall_tool": "lovia.tools.recall",
    "recall_tool_result": "lovia.tools.recall",
    "DuckDuckGoSearch": "lovia.tools.search",
    "SearchResult": "lovia.tools.search",
    "TavilySearch": "lovia.tools.search",
    "WebSearch": "lovia.tools.search",
    "duckduckgo_search": "lovia.tools.search",
    "tavily_search": "lovia.tools.search",
    "web_search": "lovia.tools.search",
    "current_date": "lovia.tools.time",
    "now": "lovia.tools.time",
    "sleep": "lovia.tools.time",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)


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
