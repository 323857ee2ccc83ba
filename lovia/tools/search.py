"""Web search: the ``web_search`` tool over a :class:`WebSearch` backend.

Backends: :class:`DuckDuckGoSearch` (the optional ``ddgs`` package, ``pip install
ddgs``) and :class:`TavilySearch` (Tavily's HTTP API, key in ``TAVILY_API_KEY``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import os
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from lovia._httpx import httpx
from lovia.exceptions import ToolError, UserError
from lovia.http_config import resolve_verify
from lovia.run_context import RunContext
from lovia.tools.base import Tool, default_result_renderer, invalid_arguments
from lovia.tools.presentation import short

MAX_SEARCH_RESULTS = 20
TAVILY_BASE_URL = "https://api.tavily.com"
"""Where :class:`TavilySearch` POSTs ``/search`` unless ``base_url=`` / ``TAVILY_BASE_URL``."""


@dataclass
class SearchResult:
    title: str
    url: str
    snippet: str = ""


@runtime_checkable
class WebSearch(Protocol):
    """A search backend; ``search`` must be concurrency-safe.

    ``time_range`` is ``"d"``, ``"w"``, ``"m"``, ``"y"`` (past day/week/month/year) or None.
    """

    async def search(
        self, query: str, *, max_results: int = 5, time_range: str | None = None
    ) -> list[SearchResult]: ...


# --------------------------------------------------------------------------- tool


class _SearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str
    max_results: int = 5
    time_range: Literal["d", "w", "m", "y"] | None = None

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


_SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What to search for."},
        "max_results": {
            "type": "integer",
            "default": 5,
            "description": f"How many results to return (1-{MAX_SEARCH_RESULTS}).",
        },
        "time_range": {
            "type": ["string", "null"],
            "enum": ["d", "w", "m", "y", None],
            "default": None,
            "description": "Only results from the past day (d), week (w), month (m) or year (y).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}


def _as_dict(result: Any) -> dict[str, str]:
    if isinstance(result, SearchResult):
        return dataclasses.asdict(result)
    if isinstance(result, dict):
        return {
            "title": str(result.get("title") or ""),
            "url": str(result.get("url") or ""),
            "snippet": str(result.get("snippet") or ""),
        }
    return {
        "title": str(getattr(result, "title", "") or ""),
        "url": str(getattr(result, "url", "") or ""),
        "snippet": str(getattr(result, "snippet", "") or ""),
    }


def render_results(results: Any) -> str:
    """Numbered blocks of title, URL and snippet; ``"No results."`` when empty."""
    if not isinstance(results, list):
        return default_result_renderer(results)
    if not results:
        return "No results."
    blocks = []
    for i, item in enumerate(results, 1):
        row = item if isinstance(item, dict) else _as_dict(item)
        title = str(row.get("title") or "").strip()
        block = f"{i}. {title or '(untitled)'}"
        url = str(row.get("url") or "").strip()
        if url:
            block += f"\n{url}"
        snippet = str(row.get("snippet") or "").strip()
        if snippet:
            block += f"\n{snippet}"
        blocks.append(block)
    return "\n\n".join(blocks)


def web_search(impl: WebSearch, *, name: str = "web_search") -> Tool:
    """A search tool over ``impl``; returns ``[{"title", "url", "snippet"}, ...]``."""

    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> list[dict[str, str]]:
        try:
            parsed = _SearchArgs.model_validate(args)
        except ValidationError as exc:
            raise invalid_arguments(name, exc, strip_value_error=True) from None
        count = max(1, min(MAX_SEARCH_RESULTS, parsed.max_results))
        results = await impl.search(parsed.query, max_results=count, time_range=parsed.time_range)
        return [_as_dict(r) for r in results]

    return Tool(
        name=name,
        description=(
            "Search the web. Returns results with title, URL and snippet; read a promising "
            "result with read_page if available. time_range limits results to the past day "
            "(d), week (w), month (m) or year (y)."
        ),
        parameters=_SEARCH_SCHEMA,
        invoke=invoke,
        retries=2,
        result_renderer=lambda result, ctx: render_results(result),
        parallel=True,
        kind="search",
        title=lambda args: f"Search the web for {short(args.get('query', ''), 50)!r}",
    )


# --------------------------------------------------------------------------- DuckDuckGo


def _load_ddgs() -> Any:
    for module_name in ("ddgs", "duckduckgo_search"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        cls = getattr(module, "DDGS", None)
        if cls is not None:
            return cls
    raise UserError(
        "DuckDuckGoSearch requires the 'ddgs' package.",
        hint="pip install ddgs (or, in a lovia clone, pip install -e '.[ddg]')",
    )


class DuckDuckGoSearch:
    """Search through the ``ddgs`` package (or its predecessor ``duckduckgo_search``)."""

    def __init__(self) -> None:
        self._ddgs = _load_ddgs()

    async def search(
        self, query: str, *, max_results: int = 5, time_range: str | None = None
    ) -> list[SearchResult]:
        return await asyncio.to_thread(self._search, query, max_results, time_range)

    def _search(self, query: str, max_results: int, time_range: str | None) -> list[SearchResult]:
        try:
            rows = self._ddgs().text(query, max_results=max_results, timelimit=time_range)
        except Exception as exc:
            if str(exc).strip().lower().startswith("no results found"):
                return []
            raise
        results = []
        for row in list(rows or []):
            if not isinstance(row, dict):
                continue
            results.append(
                SearchResult(
                    title=str(row.get("title") or ""),
                    url=str(row.get("href") or row.get("url") or ""),
                    snippet=str(row.get("body") or ""),
                )
            )
        return results


# --------------------------------------------------------------------------- Tavily


class TavilySearch:
    """Search through Tavily's API (``POST {base_url}/search``, bearer key).

    ``api_key`` falls back to ``TAVILY_API_KEY``; ``base_url`` to ``TAVILY_BASE_URL`` and
    then ``https://api.tavily.com`` (point it at a proxy or a local fake).
    """

    def __init__(
        self, *, api_key: str | None = None, timeout: float = 30.0, base_url: str | None = None
    ) -> None:
        key = api_key or os.environ.get("TAVILY_API_KEY", "").strip()
        if not key:
            raise UserError(
                "TavilySearch requires an API key.",
                hint="Pass TavilySearch(api_key=...) or set TAVILY_API_KEY.",
            )
        self._api_key = key
        self.timeout = timeout
        root = base_url or os.environ.get("TAVILY_BASE_URL", "").strip() or TAVILY_BASE_URL
        self.url = root.rstrip("/") + "/search"
        self.host = urlsplit(self.url).netloc or "api.tavily.com"

    def __repr__(self) -> str:  # never show the key
        return f"TavilySearch(url={self.url!r})"

    async def search(
        self, query: str, *, max_results: int = 5, time_range: str | None = None
    ) -> list[SearchResult]:
        payload: dict[str, Any] = {"query": query, "max_results": max_results}
        if time_range is not None:
            payload["time_range"] = time_range
        try:
            async with httpx.AsyncClient(verify=resolve_verify(), timeout=self.timeout) as client:
                response = await client.post(
                    self.url, json=payload, headers={"Authorization": f"Bearer {self._api_key}"}
                )
        except httpx.HTTPError as exc:
            raise ToolError(
                f"could not reach {self.host}: {str(exc) or type(exc).__name__}",
                hint="Check the network connection and any proxy settings.",
            ) from exc
        if response.status_code != 200:
            raise self._status_error(response)
        try:
            data = response.json()
        except ValueError:
            raise ToolError(f"Tavily search failed: non-JSON response from {self.host}.") from None
        if not isinstance(data, dict):
            return []
        rows = data.get("results")
        results = []
        for row in rows if isinstance(rows, list) else []:
            if not isinstance(row, dict):
                continue
            results.append(
                SearchResult(
                    title=str(row.get("title") or ""),
                    url=str(row.get("url") or ""),
                    snippet=str(row.get("content") or ""),
                )
            )
        return results[:max_results]

    @staticmethod
    def _status_error(response: httpx.Response) -> ToolError:
        code = response.status_code
        try:
            body = response.json()
        except ValueError:
            body = None
        detail: str | None = None
        if isinstance(body, dict) and "detail" in body:
            inner = body["detail"]
            if isinstance(inner, dict) and "error" in inner:
                detail = str(inner["error"])
            else:
                detail = str(inner)
        if detail is None:
            detail = response.text[:200]
        hint: str | None = None
        if code == 401:
            hint = "Check the Tavily API key (TavilySearch(api_key=...) or TAVILY_API_KEY)."
        elif code in (432, 433):
            hint = "The Tavily plan's usage limit is reached; check the plan and credits."
        return ToolError(f"Tavily search failed (HTTP {code}): {detail}", hint=hint)


# --------------------------------------------------------------------------- factories


def duckduckgo_search(*, name: str = "web_search") -> Tool:
    """``web_search`` over DuckDuckGo; raises ``UserError`` now if ``ddgs`` is missing."""
    return web_search(DuckDuckGoSearch(), name=name)


def tavily_search(*, api_key: str | None = None, name: str = "web_search") -> Tool:
    """``web_search`` over Tavily; raises ``UserError`` now if no API key is configured."""
    return web_search(TavilySearch(api_key=api_key), name=name)


__all__ = [
    "DuckDuckGoSearch",
    "SearchResult",
    "TavilySearch",
    "WebSearch",
    "duckduckgo_search",
    "render_results",
    "tavily_search",
    "web_search",
]
