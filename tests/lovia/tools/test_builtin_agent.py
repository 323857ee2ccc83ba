"""End to end: agents using the built-in tools (scripted model, real local web server)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from lovia import Agent, Runner, events
from lovia.messages import ToolCall
from lovia.run_context import RunContext
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.tools import (
    HttpReader,
    http_request,
    now,
    page_reader,
    writes_need_approval,
)
from lovia.transcript import ToolResultEntry
from tests.support.web_server import WebRequest, WebResponse, WebServer, html, json_response

gated_http = dataclasses.replace(http_request, needs_approval=writes_need_approval)


def notes_api(web: WebServer) -> str:
    notes: list[Any] = []

    def handler(request: WebRequest) -> WebResponse:
        if request.method == "POST":
            notes.append(request.json)
            return json_response({"id": len(notes)}, status=201)
        return json_response({"notes": notes})

    return web.route("/notes", handler)


def outputs(result: Any) -> list[str]:
    return [e.output for e in result.entries if isinstance(e, ToolResultEntry)]


async def test_reads_run_freely_and_writes_wait_for_approval(web: WebServer) -> None:
    url = notes_api(web)
    asked: list[ToolCall] = []

    def approve(tool_call: ToolCall, ctx: RunContext[Any]) -> bool:
        asked.append(tool_call)
        return True

    provider = ScriptedProvider(
        [
            call("http_request", {"url": url}),
            call("http_request", {"url": url, "method": "POST", "body": {"text": "hi"}}),
            call("http_request", {"url": url}),
            text("saved"),
        ]
    )
    agent = Agent(name="a", model=provider, tools=[gated_http], approval_handler=approve)
    result = await Runner.run(agent, "save a note")
    assert result.output == "saved"
    listed, created, relisted = outputs(result)
    assert listed.startswith("HTTP 200 · application/json") and listed.endswith('{"notes":[]}')
    assert created.startswith("HTTP 201 · application/json") and created.endswith('{"id":1}')
    assert relisted.endswith('{"notes":[{"text":"hi"}]}')
    assert [c.name for c in asked] == ["http_request"]  # only the POST was asked about
    assert [r.method for r in web.hits("/notes")] == ["GET", "POST", "GET"]
    # the model saw the rendered tool output
    assert any(m.content == created for m in provider.calls[2] if m.role == "tool")


async def test_rejected_write_never_reaches_the_server(web: WebServer) -> None:
    url = notes_api(web)
    provider = ScriptedProvider(
        [call("http_request", {"url": url, "method": "DELETE"}), text("could not")]
    )
    agent = Agent(
        name="a", model=provider, tools=[gated_http], approval_handler=lambda c, x: "deny"
    )
    result = await Runner.run(agent, "delete all notes")
    assert outputs(result) == ["Tool http_request was not approved."]
    assert web.hits("/notes") == []


async def test_unattended_runs_deny_writes(web: WebServer) -> None:
    url = notes_api(web)
    provider = ScriptedProvider([call("http_request", {"url": url, "method": "PUT"}), text("ok")])
    result = await Runner.run(Agent(name="a", model=provider, tools=[gated_http]), "x")
    assert outputs(result) == ["Tool http_request was not approved."]
    assert web.hits("/notes") == []


async def test_streaming_approval(web: WebServer) -> None:
    url = notes_api(web)
    provider = ScriptedProvider(
        [call("http_request", {"url": url, "method": "post", "body": ["x"]}), text("done")]
    )
    agent = Agent(name="a", model=provider, tools=[gated_http])
    requests: list[dict[str, Any]] = []
    completed: list[str] = []
    async for ev in Runner.stream(agent, "post it"):
        if isinstance(ev, events.ApprovalRequired):
            requests.append(json.loads(ev.call.arguments))
            ev.approve()
        if isinstance(ev, events.ToolCallCompleted):
            completed.append(ev.output)
    assert [r["method"] for r in requests] == ["post"]
    assert completed[0].startswith("HTTP 201")
    assert web.hits("/notes")[0].json == ["x"]


async def test_agent_reads_pages_in_parallel_and_asks_the_time(web: WebServer) -> None:
    first = web.route("/one", html("<title>One</title><h1>First page</h1>"))
    second = web.route("/two", html("<title>Two</title><p>Second <a href='/one'>link</a></p>"))
    provider = ScriptedProvider(
        [
            batch(
                ("read_page", {"url": first}),
                ("read_page", {"url": second}),
                ("now", {"tz": "UTC"}),
            ),
            text("read both"),
        ]
    )
    agent = Agent(name="a", model=provider, tools=[page_reader(HttpReader(cache_ttl=0)), now])
    result = await Runner.run(agent, "read")
    by_id = {e.call_id: e.output for e in result.entries if isinstance(e, ToolResultEntry)}
    one, two, clock = by_id["call_0_read_page"], by_id["call_1_read_page"], by_id["call_2_now"]
    assert one == f"Title: One\nURL: {first}\nHTTP 200 · text/html\n\n# First page"
    assert two == f"Title: Two\nURL: {second}\nHTTP 200 · text/html\n\nSecond [link]({first})"
    assert clock.endswith("+00:00")


async def test_tool_errors_reach_the_model(web: WebServer) -> None:
    provider = ScriptedProvider(
        [call("http_request", {"url": "file:///etc/passwd"}), text("understood")]
    )
    result = await Runner.run(Agent(name="a", model=provider, tools=[http_request]), "x")
    (out,) = outputs(result)
    assert "Unsupported URL scheme: 'file'." in out
