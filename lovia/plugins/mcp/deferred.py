"""Deferred MCP tools: the ``search_mcp_tools`` / ``call_mcp_tool`` pair that stands in for
tools kept out of the tool list."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lovia.exceptions import InvalidToolArguments, ToolError
from lovia.tools.base import Tool, render_tool_result, run_tool, truncate_tool_output
from lovia.tools.presentation import ToolLocation, short

if TYPE_CHECKING:
    from lovia.run_context import RunContext


_DEFERRED_INTRO = (
    "These MCP tools exist but are not in your tool list, to save context. To use one, look "
    "it up with `search_mcp_tools` (keywords or its exact name) to get its description and "
    "parameters, then run it with `call_mcp_tool`. Search before concluding that a "
    "capability is missing."
)


def _deferred_instructions(groups: list[tuple[str | None, list[str]]]) -> str:
    lines = ["## Deferred MCP tools", _DEFERRED_INTRO]
    for prefix, names in groups:
        label = prefix or "unnamed server"
        lines.append(f"- {label} ({len(names)} tools): {', '.join(sorted(names))}")
    return "\n".join(lines)


def _make_search_tool(catalog: dict[str, Tool]) -> Tool:
    """``search_mcp_tools``: keyword search over the deferred tools' names and descriptions."""

    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> str:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise InvalidToolArguments(
                "search_mcp_tools needs a non-empty 'query'.",
                hint="Pass keywords or an exact tool name.",
                tool_name="search_mcp_tools",
            )
        limit = args.get("max_results", 5)
        if isinstance(limit, str) and limit.strip().isdigit():
            limit = int(limit)
        if isinstance(limit, bool) or not isinstance(limit, int):
            limit = 5
        limit = min(20, max(1, limit))
        tokens = query.lower().split()
        scored: list[tuple[int, str]] = []
        for name, target in catalog.items():
            lname, ldesc = name.lower(), (target.description or "").lower()
            score = 0
            for token in tokens:
                if token == lname:
                    score += 3
                elif token in lname:
                    score += 2
                if token in ldesc:
                    score += 1
            if score > 0:
                scored.append((-score, name))
        scored.sort()
        if not scored:
            return (
                f"No deferred MCP tool matched {query!r} ({len(catalog)} available — the "
                "names are listed in your instructions; try other keywords or an exact name)."
            )
        shown = scored[:limit]
        text = json.dumps(
            [
                {
                    "name": name,
                    "description": catalog[name].description,
                    "parameters": catalog[name].parameters,
                }
                for _, name in shown
            ],
            ensure_ascii=False,
        )
        rest = len(scored) - len(shown)
        if rest > 0:
            noun = "match" if rest == 1 else "matches"
            text += f"\n({rest} more {noun} not shown; refine the query or raise max_results.)"
        return text

    return Tool(
        name="search_mcp_tools",
        description=(
            "Find deferred MCP tools and get their full definitions (name, description, "
            "parameters JSON schema). Matches keywords against tool names and descriptions; "
            "an exact name ranks first. Look a tool up here before calling it with "
            "call_mcp_tool."
        ),
        parameters={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Keywords, or a tool's exact name.",
                },
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "default": 5,
                    "description": "How many matches to return (1-20).",
                },
            },
            "required": ["query"],
        },
        invoke=invoke,
        kind="search",
        title=lambda args: f"Find MCP tools for {short(args.get('query', ''), 50)!r}",
    )


def _call_arguments(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if isinstance(raw, str) and raw.strip():
        try:
            raw = json.loads(raw)  # a model that sent the arguments as a JSON string
        except json.JSONDecodeError:
            pass
    if isinstance(raw, dict):
        return dict(raw)
    raise InvalidToolArguments(
        f"call_mcp_tool 'arguments' must be a JSON object, got {type(raw).__name__}.",
        hint="Pass the tool's arguments as an object matching its parameters schema.",
        tool_name="call_mcp_tool",
    )


def _make_call_tool(catalog: dict[str, Tool]) -> Tool:
    """``call_mcp_tool``: run a deferred tool by name, with its own policies and renderer."""

    def lookup(name: str) -> Tool:
        target = catalog.get(name)
        if target is not None:
            return target
        near = difflib.get_close_matches(name, list(catalog), n=3, cutoff=0.4)
        raise ToolError(
            f"unknown deferred MCP tool: {name!r}",
            hint=f"Did you mean: {', '.join(near)}?"
            if near
            else "Use search_mcp_tools to discover tools.",
            tool_name="call_mcp_tool",
        )

    def needs_approval(args: dict[str, Any], ctx: RunContext[Any]) -> bool:
        target = catalog.get(str(args.get("tool", "")))
        if target is None:
            return False
        raw = args.get("arguments")
        return target.requires_approval(dict(raw) if isinstance(raw, dict) else {}, ctx)

    def locations(args: Mapping[str, Any]) -> list[ToolLocation]:
        """The deferred tool's judged paths: the approval card and an "always" answer name
        them, so one approval covers no other path."""
        target = catalog.get(str(args.get("tool", "")))
        raw = args.get("arguments")
        if target is None or target.locations is None or not isinstance(raw, dict):
            return []
        return list(target.locations(raw))

    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> str:
        name = args.get("tool")
        if not isinstance(name, str) or not name:
            raise InvalidToolArguments(
                "call_mcp_tool needs 'tool', the exact name of a deferred MCP tool.",
                hint="Use search_mcp_tools to discover tools.",
                tool_name="call_mcp_tool",
            )
        target = lookup(name)
        arguments = _call_arguments(args.get("arguments"))
        raw = await run_tool(target, arguments, ctx)
        agent = getattr(ctx, "agent", None)
        text = await render_tool_result(
            target, raw, ctx, default=getattr(agent, "tool_result_renderer", None)
        )
        if target.max_output_chars is not None:
            text = truncate_tool_output(text, target.max_output_chars)
        return text

    return Tool(
        name="call_mcp_tool",
        description=(
            "Run a deferred MCP tool by its exact name. 'arguments' must match the parameters "
            "schema search_mcp_tools returned for it. Only deferred MCP tools are reachable "
            "here; call regular tools directly."
        ),
        parameters={
            "type": "object",
            "properties": {
                "tool": {
                    "type": "string",
                    "description": "The exact tool name, as search_mcp_tools returned it.",
                },
                "arguments": {
                    "type": "object",
                    "description": "Arguments matching the tool's parameters schema.",
                },
            },
            "required": ["tool"],
        },
        invoke=invoke,
        kind="other",
        title=lambda args: f"Call {args.get('tool', 'an MCP tool')}",
        needs_approval=needs_approval,
        locations=locations,
    )
