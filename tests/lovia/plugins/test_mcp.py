"""The MCP plugin against real MCP servers built with the SDK.

Most tests talk to an SDK ``MCPServer`` in memory (the SDK's in-memory transport, see
``tests/support/mcp_http.py``); the transport tests start the stdio script
(``tests/support/mcp_stdio_server.py``) and the HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import mcp.types as mt
import pytest
from mcp.client._memory import InMemoryTransport
from mcp.shared.exceptions import MCPError as SDKError

from lovia import Agent, Runner, events
from lovia.exceptions import InvalidToolArguments, MCPError, ToolError, UserError
from lovia.parts import ImagePart
from lovia.plugins.mcp import (
    MCP,
    MCPConnection,
    MCPServer,
    MCPServerStdio,
    MCPServerStreamableHTTP,
    MCPToolResult,
    _is_transport_error,
    _make_call_tool,
    _make_search_tool,
    normalize_schema,
    render_mcp_content,
)
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.tools.base import Tool, tool
from lovia.transcript import ToolCallEntry, ToolResultEntry
from tests.support.mcp_http import HTTPMCPServer, InProcess, build_server

ROOT = Path(__file__).resolve().parents[3]
STDIO_SCRIPT = str(ROOT / "tests" / "support" / "mcp_stdio_server.py")


def stdio(*args: str, **kw: Any) -> MCPServerStdio:
    return MCPServerStdio(command=sys.executable, args=[STDIO_SCRIPT, *args], **kw)


def outputs(result: Any) -> list[str]:
    return [e.output for e in result.entries if isinstance(e, ToolResultEntry)]


def results_by_tool(result: Any) -> dict[str, ToolResultEntry]:
    """Tool results by tool name (parallel calls finish in any order)."""
    names = {e.call_id: e.name for e in result.entries if isinstance(e, ToolCallEntry)}
    return {names[e.call_id]: e for e in result.entries if isinstance(e, ToolResultEntry)}


def make_agent(script: list[Any], **kw: Any) -> tuple[Agent[Any], ScriptedProvider]:
    provider = ScriptedProvider(script)
    return Agent(name=kw.pop("name", "a"), model=provider, **kw), provider


@dataclass(frozen=True, kw_only=True)
class Breakable(MCPServer):
    """An in-memory server whose transport the test can break (or refuse to reopen)."""

    server: Any
    state: dict[str, Any] = dataclasses.field(default_factory=dict)

    def _make_transport(self) -> Any:
        state = self.state
        state.setdefault("streams", [])
        state.setdefault("connects", 0)

        @asynccontextmanager
        async def connect() -> Any:
            state["connects"] += 1
            if state.get("refuse"):
                raise ConnectionRefusedError("server went away")
            async with InMemoryTransport(self.server) as streams:
                state["streams"].append(streams)
                yield streams

        return connect

    async def break_transport(self) -> None:
        _, write = self.state["streams"][-1]
        await write.aclose()


# --------------------------------------------------------------------------- pure parts


def test_importing_lovia_does_not_import_the_sdk() -> None:
    code = (
        "import sys, lovia, lovia.plugins.mcp\n"
        "from lovia.plugins.mcp import MCP, MCPServerStdio\n"
        "MCP(MCPServerStdio(command='x'))\n"
        "bad = [m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types'))]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_configs_are_keyword_only_and_frozen() -> None:
    with pytest.raises(TypeError):
        MCPServerStdio("python")  # type: ignore[misc]
    with pytest.raises(TypeError):
        MCPServerStreamableHTTP("http://x")  # type: ignore[misc]
    with pytest.raises(TypeError):
        MCPServer("name")  # type: ignore[misc]
    server = MCPServerStdio(command="python", args=["-m", "srv"], env={"A": "1"})
    assert server.name is None and server.close_after_run and not server.defer
    assert server.auto_reconnect and server.needs_approval is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        server.name = "x"  # type: ignore[misc]
    http = MCPServerStreamableHTTP(url="http://h/mcp", headers={"A": "b"}, name="h")
    assert http.url == "http://h/mcp" and http.headers == {"A": "b"}


def test_missing_sdk_is_a_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp.client.stdio", None)
    monkeypatch.setitem(sys.modules, "mcp.client.streamable_http", None)
    with pytest.raises(UserError, match="mcp") as info:
        MCPServerStdio(command="x")._make_transport()
    assert "pip install 'mcp>=2.3,<3'" in (info.value.hint or "")
    with pytest.raises(UserError):
        MCPServerStreamableHTTP(url="http://x")._make_transport()


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (None, {"type": "object", "properties": {}}),
        ({}, {"type": "object", "properties": {}}),
        ("nope", {"type": "object", "properties": {}}),
        ({"type": "object"}, {"type": "object", "properties": {}}),
        ({"properties": {"a": {}}}, {"type": "object", "properties": {"a": {}}}),
        ({"type": "object", "properties": []}, {"type": "object", "properties": {}}),
        ({"type": "string"}, {"type": "string"}),
    ],
)
def test_normalize_schema(schema: Any, expected: dict[str, Any]) -> None:
    assert normalize_schema(schema) == expected


def test_normalize_schema_does_not_mutate() -> None:
    schema: dict[str, Any] = {"required": ["a"]}
    normalize_schema(schema)
    assert schema == {"required": ["a"]}


def test_render_every_block_kind() -> None:
    blocks = [
        mt.TextContent(type="text", text="hello"),
        mt.ImageContent(type="image", data="AAAA", mime_type="image/png"),
        mt.AudioContent(type="audio", data="A" * 4096, mime_type="audio/wav"),
        mt.ResourceLink(type="resource_link", name="d", uri="file:///d.txt"),
        mt.EmbeddedResource(
            type="resource", resource=mt.TextResourceContents(uri="file:///t", text="inline")
        ),
        mt.EmbeddedResource(
            type="resource",
            resource=mt.BlobResourceContents(uri="file:///b", blob="AAAAAA==", mime_type=None),
        ),
    ]
    assert render_mcp_content(blocks).split("\n") == [
        "hello",
        "[image: image/png, 3 B]",
        "[audio: audio/wav, 3.0 KB]",
        "[resource link: file:///d.txt]",
        "inline",
        "[resource: file:///b, application/octet-stream, 4 B]",
    ]


def test_render_sizes_padding_and_legacy_spellings() -> None:
    mb = "A" * (4 * 1024 * 1024 // 3 * 2)
    assert render_mcp_content([{"type": "image", "data": "AA==", "mimeType": "image/gif"}]) == (
        "[image: image/gif, 1 B]"
    )
    assert render_mcp_content([{"type": "image", "data": "AAA=", "mime_type": None}]) == (
        "[image: application/octet-stream, 2 B]"
    )
    assert render_mcp_content([{"type": "audio", "data": mb, "mimeType": "a/b"}]) == (
        "[audio: a/b, 2.0 MB]"
    )


def test_render_unknown_blocks_never_leak_base64() -> None:
    class Custom(mt.TextContent):
        pass

    class Weird:
        type = "weird"

        def model_dump(self) -> dict[str, Any]:
            return {"type": "weird", "data": "QUJD" * 1000, "blob": "x", "note": "é"}

        def __str__(self) -> str:
            return "never"

    class Plain:
        def __str__(self) -> str:
            return "plain block"

    rendered = render_mcp_content([Weird(), Plain()])
    first, second = rendered.split("\n")
    assert json.loads(first) == {"type": "weird", "note": "é"}
    assert "é" in first and "QUJD" not in rendered
    assert second == "plain block"
    assert render_mcp_content([Custom(type="text", text="sub")]) == "sub"


def test_render_errors() -> None:
    assert render_mcp_content([], is_error=True) == "[tool error]"
    assert render_mcp_content([{"type": "text", "text": "bad"}], is_error=True) == (
        "[tool error] bad"
    )
    assert render_mcp_content([]) == ""


def test_tool_result_str_and_parts() -> None:
    result = MCPToolResult([mt.TextContent(type="text", text="hi")])
    assert str(result) == "hi" and result.is_error is False
    assert MCPToolResult() == MCPToolResult([], False)
    assert str(MCPToolResult(structured_content={"sum": 3})) == '{"sum": 3}'
    assert str(MCPToolResult(is_error=True, structured_content={"e": 1})) == '[tool error] {"e": 1}'
    png = "iVBORw0KGgo="
    shot = MCPToolResult(
        [
            mt.TextContent(type="text", text="caption"),
            mt.ImageContent(type="image", data=png, mime_type="image/png"),
        ]
    )
    assert str(shot) == "caption\n[image: image/png, 8 B]"
    parts = shot.parts()
    assert isinstance(parts[1], ImagePart) and parts[1].data == png
    image = mt.ImageContent(type="image", data=png, mime_type="image/png")
    bad = MCPToolResult([mt.TextContent(type="text", text="bad"), image], is_error=True)
    assert [getattr(p, "text", None) for p in bad.parts()] == ["[tool error] bad", None]
    bare = MCPToolResult([image], is_error=True).parts()
    assert getattr(bare[0], "text", None) == "[tool error]" and isinstance(bare[1], ImagePart)
    # Images become parts only for tools on the default renderer.
    assert shot.__lovia_parts__() is None
    shot.images_as_parts = True
    assert shot.__lovia_parts__() == parts
    assert (
        MCPToolResult(
            [mt.TextContent(type="text", text="x")], images_as_parts=True
        ).__lovia_parts__()
        is None
    )


def test_transport_error_classification() -> None:
    assert _is_transport_error(ConnectionResetError())
    assert _is_transport_error(BrokenPipeError())
    assert _is_transport_error(anyio.BrokenResourceError())
    assert _is_transport_error(anyio.ClosedResourceError())
    assert _is_transport_error(anyio.EndOfStream())
    assert _is_transport_error(SDKError(-32000, "Connection closed"))
    assert not _is_transport_error(SDKError(-32602, "Unknown tool"))
    assert not _is_transport_error(TimeoutError())
    assert not _is_transport_error(asyncio.CancelledError())
    assert not _is_transport_error(ValueError("x"))


# --------------------------------------------------------------------------- connection


async def test_open_lists_and_converts_tools() -> None:
    def ask(args: dict[str, Any], ctx: Any) -> bool:
        return True

    config = InProcess(
        server=build_server(),
        name="srv",
        exclude_tools=["slow", "broken"],
        needs_approval=ask,
        retries=2,
        timeout=5.0,
        max_output_chars=100,
    )
    conn = await config.open()
    try:
        assert conn.close_after_run is True and conn.prefix == "srv"
        tools = conn.tools()
        assert [t.name for t in tools] == [
            "srv__greet",
            "srv__stats",
            "srv__snapshot",
            "srv__refuse",
        ]
        greet = tools[0]
        assert greet.description == "Greet someone by name."
        assert greet.parameters["type"] == "object"
        assert greet.parameters["properties"]["name"]["type"] == "string"
        # the server's predicate decides once the arguments' paths are judged (no workspace)
        assert greet.requires_approval({"name": "Ada"}, None)  # type: ignore[arg-type]
        assert greet.retries == 2 and greet.timeout == 5.0
        assert greet.max_output_chars == 100 and greet.result_renderer is not None
        tools.clear()
        assert len(conn.tools()) == 4  # a copy
        result = await greet.invoke({"name": "Ada"}, None)  # type: ignore[arg-type]
        assert isinstance(result, MCPToolResult) and str(result) == "Hello, Ada!"
        assert greet.result_renderer(result, None) == "Hello, Ada!"  # type: ignore[misc,arg-type]
        assert conn.server_instructions == "Prefer greet for greetings."
    finally:
        await conn.close()


async def test_include_filter_and_unprefixed_names() -> None:
    conn = await InProcess(server=build_server(), include_tools=["greet", "missing"]).open()
    try:
        assert [t.name for t in conn.tools()] == ["greet"]
        assert conn.prefix is None
    finally:
        await conn.close()


async def test_tools_before_load_and_refresh() -> None:
    conn = MCPConnection(transport=lambda: InMemoryTransport(build_server()))
    with pytest.raises(MCPError, match="not loaded"):
        conn.tools()
    await conn._open_session()
    try:
        assert [t.name for t in await conn.refresh_tools()][:2] == ["greet", "stats"]
    finally:
        await conn.close()


async def test_results_errors_and_closed_connection() -> None:
    conn = await InProcess(server=build_server(), name="s").open()
    stats = await conn._call("stats", {"values": [1, 2, 3]})
    assert stats.structured_content == {"count": 3, "sum": 6, "mean": 2}
    assert json.loads(str(stats))["mean"] == 2
    refused = await conn._call("refuse", {"reason": "nope"})
    assert refused.is_error and str(refused).startswith("[tool error] ")
    assert "refused: nope" in str(refused)
    missing = await conn._call("missing", {})  # MCPServer reports unknown tools as results
    assert missing.is_error and "Unknown tool" in str(missing)
    with pytest.raises(MCPError, match="MCP tool 'broken' failed: broken on purpose") as info:
        await conn._call("broken", {})
    assert info.value.tool_name == "broken" and info.value.hint
    await conn.close()
    assert conn._session is None and conn._exit_stack is None
    with pytest.raises(MCPError, match="MCP connection is closed.") as info:
        await conn._call("greet", {"name": "x"})
    assert info.value.tool_name == "greet"
    await conn.close()  # idempotent


async def test_session_context_keeps_connection_until_exit() -> None:
    async with InProcess(server=build_server()).session() as conn:
        assert conn.close_after_run is False
        assert await conn.open() is conn
        assert str(await conn._call("greet", {"name": "a"})) == "Hello, a!"
    assert conn._session is None


async def test_connection_async_context_manager_closes() -> None:
    conn = await InProcess(server=build_server()).open()
    async with conn as same:
        assert same is conn
    assert conn._session is None


async def test_open_failure_closes_and_reraises(monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[MCPConnection] = []
    real_close = MCPConnection.close

    async def load_fails(self: MCPConnection) -> None:
        raise RuntimeError("listing broke")

    async def close(self: MCPConnection) -> None:
        closed.append(self)
        await real_close(self)

    monkeypatch.setattr(MCPConnection, "_load_tools", load_fails)
    monkeypatch.setattr(MCPConnection, "close", close)
    with pytest.raises(RuntimeError, match="listing broke"):
        await InProcess(server=build_server()).open()
    assert len(closed) == 1 and closed[0]._session is None


async def test_parallel_calls_from_other_tasks_and_close_from_another_task() -> None:
    conn = await asyncio.create_task(InProcess(server=build_server()).open())
    results = await asyncio.gather(
        *(asyncio.create_task(conn._call("greet", {"name": str(i)})) for i in range(8))
    )
    assert [str(r) for r in results] == [f"Hello, {i}!" for i in range(8)]
    await asyncio.create_task(conn.close())
    assert conn._session is None


async def test_timeout_leaves_the_connection_usable() -> None:
    conn = await InProcess(server=build_server(), timeout=0.2).open()
    try:
        slow = next(t for t in conn.tools() if t.name == "slow")
        from lovia.tools.base import run_tool

        with pytest.raises(TimeoutError):
            await run_tool(slow, {"seconds": 5}, None)  # type: ignore[arg-type]
        assert str(await conn._call("greet", {"name": "still"})) == "Hello, still!"
    finally:
        await conn.close()


async def test_reconnect_once_on_a_dead_transport(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[MCPConnection] = []
    real_open = MCPConnection._open_session

    async def counting(self: MCPConnection) -> None:
        opened.append(self)
        await real_open(self)

    monkeypatch.setattr(MCPConnection, "_open_session", counting)
    config = Breakable(server=build_server())
    conn = await config.open()
    try:
        first = conn._session
        await config.break_transport()
        assert str(await conn._call("greet", {"name": "again"})) == "Hello, again!"
        assert conn._session is not first
        assert len(opened) == 2 and config.state["connects"] == 2
    finally:
        await conn.close()


async def test_reconnect_failures() -> None:
    config = Breakable(server=build_server())
    conn = await config.open()
    await config.break_transport()
    with pytest.raises(MCPError, match="failed after reconnect: broken on purpose") as info:
        await conn._call("broken", {})
    assert info.value.tool_name == "broken"
    await config.break_transport()
    config.state["refuse"] = True
    with pytest.raises(MCPError, match="reconnect also failed: ") as info:
        await conn._call("greet", {"name": "x"})
    assert "MCP tool 'greet' failed: " in str(info.value) and info.value.tool_name == "greet"
    await conn.close()


async def test_no_reconnect_when_disabled() -> None:
    config = Breakable(server=build_server(), auto_reconnect=False)
    conn = await config.open()
    await config.break_transport()
    with pytest.raises(MCPError, match="MCP tool 'greet' failed: "):
        await conn._call("greet", {"name": "x"})
    assert config.state["connects"] == 1
    await conn.close()


# --------------------------------------------------------------------------- the plugin


async def test_setup_without_arguments_exposes_tools_and_closes_owned() -> None:
    async with InProcess(server=build_server(), name="kept").session() as kept:
        plugin = MCP(InProcess(server=build_server(), name="per_run"), kept)
        assert plugin.name == "mcp" and MCP(name="other").name == "other"
        inst = await plugin.setup()
        names = [t.name for t in inst.tools]
        assert names[:2] == ["per_run__greet", "per_run__stats"] and "kept__greet" in names
        assert inst.instructions is None
        await inst.aclose()
        per_run = inst.tools[0]
        with pytest.raises(MCPError, match="MCP connection is closed."):
            await per_run.invoke({"name": "x"}, None)  # type: ignore[arg-type]
        assert kept.is_open  # the caller's connection stays open
        assert str(await kept._call("greet", {"name": "k"})) == "Hello, k!"


async def test_deferred_tools_search_call_and_instructions() -> None:
    plugin = MCP(
        InProcess(server=build_server(), name="big", defer=True, exclude_tools=["slow", "broken"]),
        InProcess(server=build_server(), name="small", include_tools=["greet"]),
        InProcess(server=build_server(), defer=True, include_tools=["stats", "refuse"]),
    )
    inst = await plugin.setup()
    try:
        names = [t.name for t in inst.tools]
        assert names == ["small__greet", "search_mcp_tools", "call_mcp_tool"]
        assert inst.instructions is not None
        lines = inst.instructions.split("\n")
        assert lines[0] == "## Deferred MCP tools"
        assert "search_mcp_tools" in lines[1] and "call_mcp_tool" in lines[1]
        assert lines[2:] == [
            "- big (4 tools): big__greet, big__refuse, big__snapshot, big__stats",
            "- unnamed server (2 tools): refuse, stats",
        ]
        assert "small__greet" not in inst.instructions
        search, call_tool = inst.tools[1], inst.tools[2]
        hits = json.loads(await search.invoke({"query": "big__greet"}, None))  # type: ignore[arg-type]
        assert hits[0]["name"] == "big__greet"
        assert set(hits[0]) == {"name", "description", "parameters"}
        out = await call_tool.invoke(  # type: ignore[arg-type]
            {"tool": "big__greet", "arguments": {"name": "Lin"}}, _ctx()
        )
        assert out == "Hello, Lin!"
    finally:
        await inst.aclose()


async def test_deferred_name_clashes_close_owned_connections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    closed: list[str | None] = []
    real_close = MCPConnection.close

    async def close(self: MCPConnection) -> None:
        closed.append(self.prefix)
        await real_close(self)

    monkeypatch.setattr(MCPConnection, "close", close)
    async with InProcess(server=build_server(), name="mine").session() as kept:
        plugin = MCP(
            InProcess(server=build_server(), name="one"),
            kept,
            InProcess(server=build_server(), defer=True),
            InProcess(server=build_server(), defer=True),
        )
        with pytest.raises(UserError, match="deferred MCP tool name clash: 'greet'"):
            await plugin.setup()
        assert closed == [None, None, "one"]  # reverse order, never the caller's
        closed.clear()
        plugin = MCP(
            InProcess(server=build_server(), include_tools=["greet"]),
            InProcess(server=build_server(), defer=True),
        )
        with pytest.raises(
            UserError, match="deferred MCP tool name clash with exposed tools: greet"
        ):
            await plugin.setup()
        assert closed == [None, None]
    assert closed[-1] == "mine"


async def test_setup_failure_reraises_the_original_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = MCPConnection._open_session
    calls = 0

    async def second_fails(self: MCPConnection) -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise RuntimeError("no second server")
        await real_open(self)

    monkeypatch.setattr(MCPConnection, "_open_session", second_fails)
    first = InProcess(server=build_server(), name="first")
    plugin = MCP(first, InProcess(server=build_server(), name="second"))
    with pytest.raises(RuntimeError, match="no second server"):
        await plugin.setup()


async def test_include_instructions() -> None:
    plugin = MCP(
        InProcess(server=build_server(), name="docs", include_instructions=True),
        InProcess(server=build_server(instructions="ignored"), name="quiet"),
    )
    inst = await plugin.setup()
    try:
        assert inst.instructions == "## MCP server: docs\nPrefer greet for greetings."
    finally:
        await inst.aclose()


def _catalog() -> dict[str, Tool]:
    @tool
    async def github__create_issue(title: str) -> str:
        """Open an issue in the GitHub tracker."""
        return f"issue {title}"

    @tool
    async def github__list_issues() -> str:
        """List issues."""
        return "[]"

    @tool
    async def jira__create_ticket(summary: str) -> str:
        """Create a ticket; like an issue."""
        return summary

    @tool
    async def create() -> str:
        """Exact-name match."""
        return "created"

    tools = [github__create_issue, github__list_issues, jira__create_ticket, create]
    return {t.name: t for t in tools}


def _ctx(renderer: Any = None) -> Any:
    return SimpleNamespace(agent=SimpleNamespace(tool_result_renderer=renderer))


async def test_search_scoring_order_and_truncation() -> None:
    search = _make_search_tool(_catalog())
    assert search.name == "search_mcp_tools"
    props = search.parameters["properties"]
    assert props["query"]["minLength"] == 1
    assert (props["max_results"]["minimum"], props["max_results"]["maximum"]) == (1, 20)
    assert props["max_results"]["default"] == 5 and search.parameters["required"] == ["query"]
    out = await search.invoke({"query": "create issue"}, None)  # type: ignore[arg-type]
    # +3 a token equals the name, else +2 it is in the name; +1 it is in the description.
    assert [h["name"] for h in json.loads(out)] == [
        "github__create_issue",  # 2 + 2 + 1 = 5
        "jira__create_ticket",  # 2 + 1 + 1 = 4
        "create",  # 3
        "github__list_issues",  # 2 + 1 = 3 (ties sort by name)
    ]
    out = await search.invoke({"query": "create issue", "max_results": 3}, None)  # type: ignore[arg-type]
    body, suffix = out.split("\n")
    assert len(json.loads(body)) == 3
    assert suffix.startswith("(1 more match not shown")
    out = await search.invoke({"query": "issue", "max_results": 1}, None)  # type: ignore[arg-type]
    assert "(2 more matches not shown" in out
    none = await search.invoke({"query": "zebra"}, None)  # type: ignore[arg-type]
    assert none.startswith("No deferred MCP tool matched 'zebra' (4 available — ")
    with pytest.raises(InvalidToolArguments):
        await search.invoke({"query": ""}, None)  # type: ignore[arg-type]


async def test_call_tool_unknown_names_and_delegation() -> None:
    catalog = _catalog()
    call_tool = _make_call_tool(catalog)
    with pytest.raises(ToolError, match="unknown deferred MCP tool: 'github__create_isue'") as info:
        await call_tool.invoke({"tool": "github__create_isue"}, _ctx())
    assert info.value.hint is not None and info.value.hint.startswith("Did you mean: ")
    assert "github__create_issue" in info.value.hint
    with pytest.raises(ToolError) as info:
        await call_tool.invoke({"tool": "zzzzzzzzzz"}, _ctx())
    assert info.value.hint == "Use search_mcp_tools to discover tools."
    out = await call_tool.invoke(
        {"tool": "github__create_issue", "arguments": {"title": "t"}}, _ctx()
    )
    assert out == "issue t"
    out = await call_tool.invoke(
        {"tool": "github__create_issue", "arguments": '{"title": "s"}'}, _ctx()
    )
    assert out == "issue s"
    # no renderer on the target: the agent's tool_result_renderer applies
    out = await call_tool.invoke({"tool": "create"}, _ctx(lambda result, ctx: f"<{result}>"))
    assert out == "<created>"
    with pytest.raises(InvalidToolArguments):
        await call_tool.invoke({"tool": "create", "arguments": [1]}, _ctx())


async def test_call_tool_uses_target_policies_renderer_and_cap() -> None:
    attempts = 0

    async def flaky(args: dict[str, Any], ctx: Any) -> Any:
        nonlocal attempts
        attempts += 1
        if attempts < 2:
            raise RuntimeError("flaky")
        return {"n": args["n"]}

    target = Tool(
        name="t",
        description="d",
        parameters={"type": "object", "properties": {}},
        invoke=flaky,
        retries=1,
        max_output_chars=20,
        result_renderer=lambda result, ctx: "x" * 30 + str(result["n"]),
        needs_approval=lambda args, ctx: args.get("danger") is True,
    )
    call_tool = _make_call_tool({"t": target})
    out = await call_tool.invoke({"tool": "t", "arguments": {"n": 7}}, _ctx())
    assert attempts == 2 and "truncated" in out and out.endswith("7")
    ctx = _ctx()
    assert call_tool.requires_approval({"tool": "t", "arguments": {"danger": True}}, ctx)
    assert not call_tool.requires_approval({"tool": "t", "arguments": {"danger": 1}}, ctx)
    assert not call_tool.requires_approval({"tool": "t", "arguments": "danger"}, ctx)
    assert not call_tool.requires_approval({"tool": "nope", "arguments": {"danger": True}}, ctx)


async def test_call_tool_timeout_of_target() -> None:
    async def sleepy(args: dict[str, Any], ctx: Any) -> str:
        await asyncio.sleep(5)
        return "late"

    target = Tool(name="t", description="", parameters={}, invoke=sleepy, timeout=0.05, retries=0)
    with pytest.raises(TimeoutError):
        await _make_call_tool({"t": target}).invoke({"tool": "t"}, _ctx())


# --------------------------------------------------------------------------- agent runs


async def test_agent_run_calls_an_mcp_tool_and_closes_after() -> None:
    config = InProcess(server=build_server(), name="srv")
    seen: list[Any] = []

    class Spy(MCP):
        async def setup(self, ctx: Any = None) -> Any:
            inst = await super().setup(ctx)
            seen.extend(inst.tools)
            return inst

    agent, provider = make_agent(
        [
            batch(("srv__greet", {"name": "Run"}), ("srv__snapshot", {})),
            call("srv__refuse", {}),
            text("done"),
        ],
        plugins=[Spy(config)],
    )
    result = await Runner.run(agent, "hi")
    assert result.output == "done"
    by_tool = results_by_tool(result)
    assert by_tool["srv__greet"].output == "Hello, Run!"
    snap_entry = by_tool["srv__snapshot"]
    assert snap_entry.output == "[image: image/png, 67 B]"
    assert snap_entry.parts is not None and isinstance(snap_entry.parts[0], ImagePart)
    assert by_tool["srv__refuse"].output.startswith("[tool error] ")
    with pytest.raises(MCPError, match="closed"):
        await seen[0].invoke({"name": "x"}, None)


async def test_custom_renderer_receives_the_raw_result_and_output_is_capped() -> None:
    received: list[Any] = []

    def renderer(result: Any, ctx: Any) -> str:
        received.append(result)
        return "R:" + str(result) * 50

    config = InProcess(server=build_server(), result_renderer=renderer, max_output_chars=40)
    agent, _ = make_agent(
        [batch(("greet", {"name": "x"}), ("snapshot", {})), text("ok")], plugins=[MCP(config)]
    )
    result = await Runner.run(agent, "go")
    assert all(isinstance(r, MCPToolResult) for r in received) and len(received) == 2
    by_tool = results_by_tool(result)
    greet_out = by_tool["greet"].output
    assert greet_out.startswith("R:Hello, x!") and "truncated" in greet_out
    snap_entry = by_tool["snapshot"]
    assert snap_entry.parts is None and snap_entry.output.startswith("R:[image")


async def test_agent_run_with_deferred_tools_and_approval() -> None:
    config = InProcess(server=build_server(), name="big", defer=True, needs_approval=True)
    agent, provider = make_agent(
        [
            call("search_mcp_tools", {"query": "greet"}),
            call("call_mcp_tool", {"tool": "big__greet", "arguments": {"name": "Def"}}),
            text("ok"),
        ],
        plugins=[MCP(config)],
    )
    asked: list[str] = []
    handle = Runner.stream(agent, "go")
    async for ev in handle:
        if isinstance(ev, events.ApprovalRequired):
            asked.append(ev.call.name)
            ev.approve()
    result = await handle.result()
    assert asked == ["call_mcp_tool"]
    found, called = outputs(result)
    assert json.loads(found)[0]["name"] == "big__greet"
    assert called == "Hello, Def!"
    system = provider.calls[0][0].content
    assert "## Deferred MCP tools" in system and "- big (6 tools): " in system


async def test_run_fails_cleanly_when_a_server_cannot_start() -> None:
    config = Breakable(server=build_server(), name="down", state={"refuse": True})
    agent, _ = make_agent([text("never")], plugins=[MCP(config)])
    failed: list[BaseException] = []
    handle = Runner.stream(agent, "go")
    async for ev in handle:
        if isinstance(ev, events.RunFailed):
            failed.append(ev.error)
    assert len(failed) == 1 and isinstance(failed[0], MCPError)
    assert "Could not connect to MCP server 'down'" in str(failed[0])
    assert failed[0].hint
    with pytest.raises(MCPError):
        await handle.result()


# --------------------------------------------------------------------------- stdio


async def test_stdio_server_end_to_end(tmp_path: Path) -> None:
    config = stdio(
        "--page-size",
        "3",
        "--instructions",
        "Be nice.",
        name="io",
        env={"TOKEN": "t0"},
        cwd=tmp_path,
    )
    conn = await config.open()
    try:
        tools = {t.name: t for t in conn.tools()}
        assert len(tools) == 23  # paged three at a time
        assert tools["io__mixed"].parameters == {"type": "object", "properties": {}}
        assert conn.server_instructions == "Be nice."

        async def run(tool_name: str, **args: Any) -> str:
            result = await tools[f"io__{tool_name}"].invoke(args, None)  # type: ignore[arg-type]
            return str(result)

        assert await run("echo", text="über") == "über"
        assert await run("add", a=2, b=3) == "sum=5"
        assert (await conn._call("add", {"a": 1, "b": 1})).structured_content == {"sum": 2}
        assert await run("image") == "a red dot\n[image: image/png, 67 B]"
        assert (await run("mixed")).split("\n") == [
            "text block",
            "[audio: audio/wav, 3 B]",
            "[resource link: file:///doc.txt]",
            "inline",
            "[resource: file:///b.bin, application/zip, 4 B]",
        ]
        assert await run("fail") == "[tool error] the widget is jammed"
        with pytest.raises(MCPError, match="MCP tool 'explode' failed: kaboom"):
            await run("explode")
        assert await run("env", name="TOKEN") == "t0"
        assert await run("cwd") == str(tmp_path)
        pid = int(await run("pid"))
    finally:
        await conn.close()
    await asyncio.sleep(0.1)
    assert not _alive(pid)


async def test_stdio_reconnects_after_the_server_dies() -> None:
    conn = await stdio(name="io").open()
    try:
        pid = int(str(await conn._call("pid", {})))
        os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.2)
        new_pid = int(str(await conn._call("pid", {})))
        assert new_pid != pid
        assert str(await conn._call("calls", {})) == "2"  # the fresh process served both
    finally:
        await conn.close()


async def test_stdio_start_failures_are_mcp_errors_with_hints() -> None:
    with pytest.raises(MCPError, match="Could not connect to MCP server 'bad'") as info:
        await stdio("--fail-start", name="bad").open()
    assert "missing API token" in (info.value.hint or "")
    with pytest.raises(MCPError, match="No such file or directory") as info:
        await MCPServerStdio(command="/nonexistent/lovia-mcp", name="ghost").open()
    assert "PATH" in (info.value.hint or "")
    with pytest.raises(MCPError, match="did not complete the MCP handshake within 0.5s"):
        await MCPServerStdio(
            command=sys.executable,
            args=["-c", "import time; time.sleep(30)"],
            connect_timeout=0.5,
        ).open()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie counts as gone
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return True


# --------------------------------------------------------------------------- HTTP


@pytest.fixture(scope="module")
def http_server() -> Any:
    with HTTPMCPServer(token="s3cret") as server:
        yield server


async def test_http_server_with_headers(http_server: HTTPMCPServer) -> None:
    config = MCPServerStreamableHTTP(
        url=http_server.url, headers={"Authorization": "Bearer s3cret"}, name="web"
    )
    agent, _ = make_agent(
        [call("web__stats", {"values": [2, 4]}), text("ok")], plugins=[MCP(config)]
    )
    before = len(http_server.seen_headers)
    result = await Runner.run(agent, "go")
    assert json.loads(outputs(result)[0]) == {"count": 2, "sum": 6.0, "mean": 3.0}
    seen = http_server.seen_headers[before:]
    assert seen and all(h.get("authorization") == "Bearer s3cret" for h in seen)


async def test_http_errors(http_server: HTTPMCPServer) -> None:
    with pytest.raises(MCPError, match="Could not connect to MCP server 'web'") as info:
        await MCPServerStreamableHTTP(url=http_server.url, name="web").open()
    assert "auth headers" in (info.value.hint or "")
    with pytest.raises(MCPError, match="ConnectError"):
        await MCPServerStreamableHTTP(url="http://127.0.0.1:9/mcp").open()


async def test_mcp_tools_present_with_the_servers_title_and_read_only_hint() -> None:
    from mcp.server.mcpserver import MCPServer as SDKServer

    from lovia.tools.presentation import present_call

    server = SDKServer("lovia-test-presentation", log_level="WARNING")

    @server.tool(title="Look up the weather", annotations=mt.ToolAnnotations(readOnlyHint=True))
    def weather(city: str) -> str:
        """Weather for a city."""
        return "sunny"

    @server.tool(annotations=mt.ToolAnnotations(readOnlyHint=False, title="Book it"))
    def book(city: str) -> str:
        """Book a trip."""
        return "booked"

    @server.tool()
    def plain(city: str) -> str:
        """No hints."""
        return city

    conn = await InProcess(server=server).open()
    try:
        shown = {t.name: present_call(t, t.name, {"city": "Oslo"}) for t in conn.tools()}
    finally:
        await conn.close()
    assert (shown["weather"].kind, shown["weather"].title) == ("read", "Look up the weather")
    assert (shown["book"].kind, shown["book"].title) == ("other", "Book it")
    assert (shown["plain"].kind, shown["plain"].title) == ("other", "plain: Oslo")
