"""Web search: the ``web_search`` tool, DuckDuckGo (through a stand-in ``ddgs`` module) and
Tavily (against a local server speaking its wire format)."""

from __future__ import annotations

import json
import sys
import types
from typing import Any

import pytest

from lovia.exceptions import InvalidToolArguments, ToolError, UserError
from lovia.run_context import RunContext
from lovia.tools import (
    DuckDuckGoSearch,
    SearchResult,
    TavilySearch,
    WebSearch,
    duckduckgo_search,
    render_tool_result,
    run_tool,
    tavily_search,
    web_search,
)
from lovia.tools.search import TAVILY_BASE_URL
from tests.support.web_server import (
    WebRequest,
    WebResponse,
    WebServer,
    closed_port,
    json_response,
    text,
)


class FakeSearch:
    def __init__(self, results: list[SearchResult] | None = None, *, fail: int = 0) -> None:
        self.results = results if results is not None else []
        self.calls: list[dict[str, Any]] = []
        self.fail = fail

    async def search(
        self, query: str, *, max_results: int = 5, time_range: str | None = None
    ) -> list[SearchResult]:
        self.calls.append({"query": query, "max_results": max_results, "time_range": time_range})
        if self.fail:
            self.fail -= 1
            raise ConnectionError("flaky")
        return self.results[:max_results]


RESULTS = [
    SearchResult("Lovia docs", "https://lovia.example/docs", "The framework's documentation."),
    SearchResult("", "https://untitled.example/", ""),
    SearchResult("No link", "", "only a snippet"),
]


# --------------------------------------------------------------------------- the tool


def test_web_search_tool_shape() -> None:
    tool = web_search(FakeSearch())
    assert tool.name == "web_search" and tool.retries == 2 and tool.parallel is True
    assert tool.needs_approval is False
    params = tool.parameters
    assert params["required"] == ["query"]
    assert set(params["properties"]) == {"query", "max_results", "time_range"}
    assert params["properties"]["max_results"]["default"] == 5
    assert "maximum" not in params["properties"]["max_results"]
    assert params["properties"]["time_range"]["enum"] == ["d", "w", "m", "y", None]
    assert web_search(FakeSearch(), name="search_the_web").name == "search_the_web"
    assert isinstance(FakeSearch(), WebSearch)


async def test_web_search_returns_dicts(ctx: RunContext[Any]) -> None:
    backend = FakeSearch(RESULTS)
    out = await web_search(backend).invoke({"query": "lovia"}, ctx)
    assert out[0] == {
        "title": "Lovia docs",
        "url": "https://lovia.example/docs",
        "snippet": "The framework's documentation.",
    }
    assert all(isinstance(r, dict) for r in out) and len(out) == 3
    assert backend.calls == [{"query": "lovia", "max_results": 5, "time_range": None}]


@pytest.mark.parametrize(("asked", "sent"), [(100, 20), (20, 20), (7, 7), (1, 1), (0, 1), (-3, 1)])
async def test_max_results_is_clamped(asked: int, sent: int, ctx: RunContext[Any]) -> None:
    backend = FakeSearch()
    await web_search(backend).invoke({"query": "q", "max_results": asked}, ctx)
    assert backend.calls[0]["max_results"] == sent


@pytest.mark.parametrize("value", ["d", "w", "m", "y", None])
async def test_time_range_values_reach_the_backend(value: str | None, ctx: RunContext[Any]) -> None:
    backend = FakeSearch()
    await web_search(backend).invoke({"query": "q", "time_range": value}, ctx)
    assert backend.calls[0]["time_range"] == value


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"query": "   "},
        {"query": "q", "time_range": "day"},
        {"query": "q", "max_results": "many"},
        {"query": "q", "page": 2},
    ],
)
async def test_invalid_arguments(args: dict[str, Any], ctx: RunContext[Any]) -> None:
    backend = FakeSearch()
    with pytest.raises(InvalidToolArguments, match="Invalid arguments for tool 'web_search'"):
        await web_search(backend).invoke(args, ctx)
    assert backend.calls == []


async def test_renderer(ctx: RunContext[Any]) -> None:
    tool = web_search(FakeSearch(RESULTS))
    out = await tool.invoke({"query": "q"}, ctx)
    assert await render_tool_result(tool, out, ctx) == (
        "1. Lovia docs\nhttps://lovia.example/docs\nThe framework's documentation.\n\n"
        "2. (untitled)\nhttps://untitled.example/\n\n"
        "3. No link\nonly a snippet"
    )
    assert await render_tool_result(tool, [], ctx) == "No results."
    assert await render_tool_result(tool, "a message", ctx) == "a message"
    assert json.loads(await render_tool_result(tool, {"k": 1}, ctx)) == {"k": 1}


async def test_transient_failures_are_retried_three_attempts_in_all(ctx: RunContext[Any]) -> None:
    backend = FakeSearch(RESULTS, fail=2)
    out = await run_tool(web_search(backend), {"query": "q"}, ctx)
    assert len(out) == 3 and len(backend.calls) == 3
    broken = FakeSearch(fail=10)
    with pytest.raises(ConnectionError):
        await run_tool(web_search(broken), {"query": "q"}, ctx)
    assert len(broken.calls) == 3


# --------------------------------------------------------------------------- DuckDuckGo


class _StandInDDGS:
    """Speaks the ``ddgs.DDGS().text(...)`` interface."""

    calls: list[dict[str, Any]] = []
    rows: list[Any] = []
    error: Exception | None = None

    def text(self, query: str, **kwargs: Any) -> list[Any]:
        type(self).calls.append({"query": query, **kwargs})
        if type(self).error is not None:
            raise type(self).error
        return list(type(self).rows)


@pytest.fixture
def ddgs_module(monkeypatch: pytest.MonkeyPatch) -> type[_StandInDDGS]:
    cls = type("DDGS", (_StandInDDGS,), {"calls": [], "rows": [], "error": None})
    module = types.ModuleType("ddgs")
    module.DDGS = cls  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ddgs", module)
    return cls


def test_duckduckgo_requires_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ddgs", None)  # import fails
    monkeypatch.setitem(sys.modules, "duckduckgo_search", None)
    with pytest.raises(UserError) as info:
        DuckDuckGoSearch()
    assert info.value.message == "DuckDuckGoSearch requires the 'ddgs' package."
    assert info.value.hint == "pip install ddgs (or, in a lovia clone, pip install -e '.[ddg]')"
    with pytest.raises(UserError, match="requires the 'ddgs' package"):
        duckduckgo_search()  # built eagerly: fails at build time


def test_duckduckgo_falls_back_to_duckduckgo_search(monkeypatch: pytest.MonkeyPatch) -> None:
    legacy = types.ModuleType("duckduckgo_search")
    legacy.DDGS = type("DDGS", (_StandInDDGS,), {"calls": [], "rows": [], "error": None})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ddgs", None)
    monkeypatch.setitem(sys.modules, "duckduckgo_search", legacy)
    assert DuckDuckGoSearch()._ddgs is legacy.DDGS  # type: ignore[attr-defined]


async def test_duckduckgo_maps_rows_and_passes_options(ddgs_module: type[_StandInDDGS]) -> None:
    ddgs_module.rows = [
        {"title": "A", "href": "https://a.example/", "body": "about a"},
        {"title": "B", "url": "https://b.example/", "body": ""},
        "not a row",
    ]
    results = await DuckDuckGoSearch().search("lovia agents", max_results=3, time_range="w")
    assert results == [
        SearchResult("A", "https://a.example/", "about a"),
        SearchResult("B", "https://b.example/", ""),
    ]
    assert ddgs_module.calls == [{"query": "lovia agents", "max_results": 3, "timelimit": "w"}]
    await DuckDuckGoSearch().search("q")
    assert ddgs_module.calls[-1] == {"query": "q", "max_results": 5, "timelimit": None}


@pytest.mark.parametrize("message", ["No results found.", "  no results found for 'x'  "])
async def test_duckduckgo_no_results_is_empty(
    ddgs_module: type[_StandInDDGS], message: str
) -> None:
    ddgs_module.error = RuntimeError(message)
    assert await DuckDuckGoSearch().search("zzz") == []


async def test_duckduckgo_other_errors_propagate(
    ddgs_module: type[_StandInDDGS], ctx: RunContext[Any]
) -> None:
    ddgs_module.error = RuntimeError("Ratelimit")
    with pytest.raises(RuntimeError, match="Ratelimit"):
        await DuckDuckGoSearch().search("q")
    tool = duckduckgo_search()
    with pytest.raises(RuntimeError):
        await run_tool(tool, {"query": "q"}, ctx)
    assert len(ddgs_module.calls) == 1 + 3  # the tool retried twice


async def test_duckduckgo_tool_end_to_end(
    ddgs_module: type[_StandInDDGS], ctx: RunContext[Any]
) -> None:
    ddgs_module.rows = [{"title": "T", "href": "https://t.example/", "body": "snip"}]
    tool = duckduckgo_search(name="search")
    out = await tool.invoke({"query": "q", "max_results": 50, "time_range": "d"}, ctx)
    assert out == [{"title": "T", "url": "https://t.example/", "snippet": "snip"}]
    assert ddgs_module.calls[-1] == {"query": "q", "max_results": 20, "timelimit": "d"}
    assert tool.name == "search"


# --------------------------------------------------------------------------- Tavily


def tavily_ok(request: WebRequest) -> WebResponse:
    return json_response(
        {
            "query": request.json["query"],
            "results": [
                {"title": "One", "url": "https://one.example/", "content": "first", "score": 0.9},
                {"title": "Two", "url": "https://two.example/", "content": "second", "score": 0.5},
                "junk",
            ],
            "response_time": 0.3,
        }
    )


def test_tavily_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UserError) as info:
        TavilySearch()
    assert info.value.message == "TavilySearch requires an API key."
    with pytest.raises(UserError, match="requires an API key"):
        tavily_search()  # built eagerly
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-env")
    assert TavilySearch()._api_key == "tvly-env"
    assert TavilySearch(api_key="tvly-arg")._api_key == "tvly-arg"
    assert tavily_search().name == "web_search"


def test_tavily_default_endpoint_and_key_hidden() -> None:
    backend = TavilySearch(api_key="tvly-secret")
    assert TAVILY_BASE_URL == "https://api.tavily.com"
    assert backend.url == "https://api.tavily.com/search" and backend.host == "api.tavily.com"
    assert "tvly-secret" not in repr(backend)


async def test_tavily_request_wire_format(web: WebServer) -> None:
    web.route("/search", tavily_ok)
    backend = TavilySearch(api_key="tvly-k", base_url=web.origin)
    results = await backend.search("what is lovia", max_results=4)
    assert results == [
        SearchResult("One", "https://one.example/", "first"),
        SearchResult("Two", "https://two.example/", "second"),
    ]
    hit = web.hits("/search")[0]
    assert hit.method == "POST"
    assert hit.header("authorization") == "Bearer tvly-k"
    assert hit.header("content-type") == "application/json"
    assert hit.json == {"query": "what is lovia", "max_results": 4}  # no time_range key
    await backend.search("recent", max_results=2, time_range="m")
    assert web.hits("/search")[1].json == {"query": "recent", "max_results": 2, "time_range": "m"}


async def test_tavily_base_url_from_env(
    web: WebServer, monkeypatch: pytest.MonkeyPatch, ctx: RunContext[Any]
) -> None:
    web.route("/search", tavily_ok)
    monkeypatch.setenv("TAVILY_BASE_URL", web.origin + "/")
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-env")
    tool = tavily_search()
    out = await tool.invoke({"query": "q"}, ctx)
    assert [r["title"] for r in out] == ["One", "Two"]
    assert web.hits("/search")[0].json == {"query": "q", "max_results": 5}


@pytest.mark.parametrize(
    ("response", "message", "hint"),
    [
        (
            json_response(
                {"detail": {"error": "Unauthorized: missing or invalid API key."}}, status=401
            ),
            "Tavily search failed (HTTP 401): Unauthorized: missing or invalid API key.",
            "API key",
        ),
        (
            json_response({"detail": "Usage limit exceeded"}, status=432),
            "Tavily search failed (HTTP 432): Usage limit exceeded",
            "limit",
        ),
        (
            json_response({"detail": {"error": "Plan limit"}}, status=433),
            "Tavily search failed (HTTP 433): Plan limit",
            "limit",
        ),
        (
            json_response({"detail": ["a", "b"]}, status=422),
            "Tavily search failed (HTTP 422): ['a', 'b']",
            None,
        ),
        (text("x" * 300, status=500), "Tavily search failed (HTTP 500): " + "x" * 200, None),
        (
            json_response({"message": "other"}, status=400),
            'Tavily search failed (HTTP 400): {"message": "other"}',
            None,
        ),
        (json_response({}, status=201), "Tavily search failed (HTTP 201): {}", None),
    ],
)
async def test_tavily_http_errors(
    web: WebServer, response: WebResponse, message: str, hint: str | None
) -> None:
    web.route("/search", response)
    with pytest.raises(ToolError) as info:
        await TavilySearch(api_key="k", base_url=web.origin).search("q")
    assert info.value.message == message
    if hint is None:
        assert info.value.hint is None
    else:
        assert hint in (info.value.hint or "")


async def test_tavily_non_json_success(web: WebServer) -> None:
    web.route("/search", text("<html>captive portal</html>", content_type="text/html"))
    with pytest.raises(ToolError) as info:
        await TavilySearch(api_key="k", base_url=web.origin).search("q")
    assert (
        info.value.message == f"Tavily search failed: non-JSON response from 127.0.0.1:{web.port}."
    )


@pytest.mark.parametrize("payload", [[1, 2], "str", None, {"results": "nope"}, {}])
async def test_tavily_unexpected_json_is_empty(web: WebServer, payload: Any) -> None:
    web.route("/search", json_response(payload))
    assert await TavilySearch(api_key="k", base_url=web.origin).search("q") == []


async def test_tavily_unreachable() -> None:
    port = closed_port()
    with pytest.raises(ToolError) as info:
        await TavilySearch(api_key="k", base_url=f"http://127.0.0.1:{port}").search("q")
    assert info.value.message.startswith(f"could not reach 127.0.0.1:{port}: ")
    assert "proxy" in (info.value.hint or "")


async def test_tavily_timeout(web: WebServer) -> None:
    web.route("/search", WebResponse(200, [], b"{}", delay=3))
    with pytest.raises(
        ToolError, match="could not reach .*ReadTimeout|could not reach .*timed out"
    ):
        await TavilySearch(api_key="k", base_url=web.origin, timeout=0.3).search("q")
