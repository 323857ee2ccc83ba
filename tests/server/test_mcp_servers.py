"""``lovia.mcpServers``: the built-in agent gets the tools of the configured MCP servers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from lovia_server.agents import BrokenMCPServer, mcp_plugin
from lovia_server.settings import (
    HttpMCPServerSetting,
    InvalidMCPServerSetting,
    StdioMCPServerSetting,
    parse_settings,
)
from tests.support import fake_openai as oai

STDIO_SCRIPT = str(Path(__file__).resolve().parents[1] / "support" / "mcp_stdio_server.py")


async def test_builtin_agent_calls_a_stdio_mcp_tool(harness, fake_openai):
    fake_openai.script(
        oai.tool_calls(
            oai.call("local__env", {"name": "GREETING"}, id="m1"),
            oai.call("local__cwd", {}, id="m2"),
        ),
        oai.tool_calls(oai.call("local__fail", {}, id="m3")),
        oai.text("The server says howdy."),
    )
    servers = {
        "local": {
            "command": sys.executable,
            "args": [STDIO_SCRIPT, "--instructions", "Call env for greetings."],
            "env": {"GREETING": "${env:LOVIA_TEST_GREETING}"},
        }
    }
    await harness.start(
        settings={"model": "openai:fake-model", "mcpServers": servers},
        env={**fake_openai.env(), "LOVIA_TEST_GREETING": "howdy"},
    )
    run = await harness.run("what does the server say?")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    assert done["output"] == "The server says howdy."
    results = {
        e["toolCallId"]: e for e in harness.of_run(run["runId"]) if e["kind"] == "tool.result"
    }
    assert results["m1"]["content"][0]["text"] == "howdy"
    assert results["m2"]["content"][0]["text"] == str(harness.root)  # runs in the folder
    assert results["m3"]["status"] == "failed" and results["m3"]["isError"] is True
    assert results["m3"]["content"][0]["text"] == "[tool error] the widget is jammed"
    posts = [r for r in fake_openai.requests if r.method == "POST"]
    first = posts[0].json
    names = {t["function"]["name"] for t in first["tools"]}
    assert {"local__echo", "local__env", "local__image", "read_file", "todo_write"} <= names
    system = first["messages"][0]["content"]
    assert "## MCP server: local\nCall env for greetings." in system
    tool_msgs = [m for m in posts[1].json["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_msgs][0] == "howdy"


async def test_bad_mcp_settings_fail_the_run_not_the_server(harness, fake_openai):
    fake_openai.script(oai.text("unused"), oai.text("unused"), oai.text("fine"))
    await harness.start(
        settings={"model": "openai:fake-model", "mcpServers": {"bad": {"url": "ftp://nowhere"}}},
        env=fake_openai.env(),
    )
    status = await harness.request("lovia/status", {})
    assert any(s.startswith("lovia.mcpServers.bad: url: ") for s in status["settingsProblems"])
    run = await harness.run("go")
    done = await harness.finished(run["runId"])
    assert done["status"] == "failed"
    error = done["error"]
    assert error["type"] == "MCPError"
    assert "'bad'" in error["message"] and "http:// or https://" in error["message"]
    assert "lovia.mcpServers.bad" in error["hint"]

    # A server that exits at start-up: the run fails with its stderr in the hint.
    failing = {"down": {"command": sys.executable, "args": [STDIO_SCRIPT, "--fail-start"]}}
    harness.client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(
            settings={"lovia": {"model": "openai:fake-model", "mcpServers": failing}}
        )
    )
    await _settings_applied(harness, lambda s: not s["settingsProblems"])
    run = await harness.run("go")
    done = await harness.finished(run["runId"])
    assert done["status"] == "failed" and done["error"]["type"] == "MCPError"
    assert "Could not connect to MCP server 'down'" in done["error"]["message"]
    assert "missing API token" in done["error"]["hint"]

    # Disabled servers are skipped; the server kept serving throughout.
    failing["down"]["disabled"] = True
    harness.client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(
            settings={"lovia": {"model": "openai:fake-model", "mcpServers": failing}}
        )
    )
    await _settings_applied(harness, lambda s: True)
    run = await harness.run("go")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done


async def test_untrusted_workspace_starts_no_mcp_server(harness, fake_openai):
    fake_openai.script(oai.text("ok"))
    servers = {"local": {"command": sys.executable, "args": [STDIO_SCRIPT]}}
    await harness.start(
        settings={"model": "openai:fake-model", "mcpServers": servers},
        env=fake_openai.env(),
        init_options={"trusted": False},
    )
    run = await harness.run("go")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    first = next(r for r in fake_openai.requests if r.method == "POST").json
    assert not any(t["function"]["name"].startswith("local__") for t in first["tools"])


async def _settings_applied(harness, check, *, tries: int = 100) -> None:
    import asyncio

    for _ in range(tries):
        await asyncio.sleep(0.1)
        status = await harness.request("lovia/status", {})
        if check(status):
            return
    raise AssertionError("the settings change was not applied")


# --------------------------------------------------------------------------- settings (unit)


def test_mcp_server_settings_shapes() -> None:
    settings, problems = parse_settings(
        {
            "mcpServers": {
                "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"PORT": 8080}},
                "docs": {"url": "https://example.com/mcp", "headers": {"X-Key": "k"}},
                "typed": {"type": "streamable-http", "url": "http://h/mcp", "defer": True},
                "both": {"command": "x", "url": "http://h"},
                "neither": {"args": []},
                "sse": {"type": "sse", "url": "http://h/sse"},
                "scalar": "npx server",
                "badargs": {"command": "x", "args": "--flag"},
                "badtimeout": {"command": "x", "timeout": 0},
            }
        }
    )
    servers = settings.mcpServers
    assert isinstance(servers["git"], StdioMCPServerSetting)
    assert servers["git"].env == {"PORT": "8080"} and servers["git"].args == ["mcp-server-git"]
    assert isinstance(servers["docs"], HttpMCPServerSetting)
    assert servers["docs"].headers == {"X-Key": "k"}
    assert isinstance(servers["typed"], HttpMCPServerSetting) and servers["typed"].defer
    invalid = {k for k, v in servers.items() if isinstance(v, InvalidMCPServerSetting)}
    assert invalid == {"both", "neither", "sse", "scalar", "badargs", "badtimeout"}
    assert sorted(p.split(":")[0] for p in problems) == sorted(
        f"lovia.mcpServers.{k}" for k in invalid
    )
    assert "not both" in servers["both"].problem  # type: ignore[union-attr]
    assert "SSE" in servers["sse"].problem  # type: ignore[union-attr]
    assert servers["badargs"].problem == "args: Input should be a valid list"  # type: ignore[union-attr]
    _, problems = parse_settings({"mcpServers": ["not", "a", "mapping"]})
    assert problems == ["lovia.mcpServers: Input should be a valid dictionary"]


async def test_mcp_plugin_from_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lovia.exceptions import MCPError
    from lovia.plugins.mcp import MCP, MCPServerStdio, MCPServerStreamableHTTP

    monkeypatch.setenv("LOVIA_TEST_TOKEN", "tok")
    monkeypatch.delenv("LOVIA_TEST_UNSET", raising=False)
    settings, _ = parse_settings(
        {
            "mcpServers": {
                "my server": {
                    "command": "srv",
                    "args": ["--root", "${workspaceFolder}"],
                    "cwd": "sub",
                    "includeTools": ["a"],
                    "needsApproval": True,
                    "timeout": 5,
                },
                "web": {
                    "url": "https://h/mcp",
                    "headers": {"Authorization": "Bearer ${env:LOVIA_TEST_TOKEN}"},
                    "defer": True,
                },
                "off": {"command": "x", "disabled": True},
                "unset": {"url": "https://h", "headers": {"K": "${env:LOVIA_TEST_UNSET}"}},
                "bad": {"url": 3},
            }
        }
    )
    plugin = mcp_plugin(settings.mcpServers, tmp_path)
    assert isinstance(plugin, MCP) and plugin.name == "mcp"
    local, web, unset, bad = plugin.servers
    assert isinstance(local, MCPServerStdio)
    assert local.name == "my_server" and local.command == "srv"
    assert local.args == ["--root", str(tmp_path)] and local.cwd == tmp_path / "sub"
    assert local.include_tools == ["a"] and local.needs_approval is True and local.timeout == 5
    assert local.include_instructions is True
    assert isinstance(web, MCPServerStreamableHTTP)
    assert web.headers == {"Authorization": "Bearer tok"} and web.defer
    assert isinstance(unset, BrokenMCPServer) and "LOVIA_TEST_UNSET" in unset.problem
    assert isinstance(bad, BrokenMCPServer)
    with pytest.raises(MCPError, match="MCP server 'bad' \\(lovia.mcpServers\\) is misconfigured"):
        await bad.open()
    assert mcp_plugin({}, tmp_path) is None
    assert mcp_plugin({"off": settings.mcpServers["off"]}, tmp_path) is None
