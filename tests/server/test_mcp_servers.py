"""``lovia.mcpServers``: the built-in agent gets the tools of the configured MCP servers."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from lovia_server.host.agents import BrokenMCPServer, mcp_server_config
from lovia_server.host.mcp_policy import MCPPolicy
from lovia_server.protocol.settings import (
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
    done = await harness.approve_all(run["runId"])  # MCP tools ask by default
    assert done["status"] == "completed", done
    asked = [e for e in harness.of_run(run["runId"]) if e["kind"] == "approval.requested"]
    assert [e["toolCallId"] for e in asked] == ["m1", "m2", "m3"]
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


async def test_broken_servers_are_reported_and_the_run_goes_on_without_them(harness, fake_openai):
    fake_openai.script(oai.tool_calls(oai.call("local__echo", {"text": "hi"}, id="e1")))
    fake_openai.script(oai.text("done without them"), oai.text("fine"))
    servers = {
        "bad": {"url": "ftp://nowhere"},
        "down": {
            "needsApproval": False,
            "command": sys.executable,
            "args": [STDIO_SCRIPT, "--fail-start"],
        },
        "local": {"needsApproval": False, "command": sys.executable, "args": [STDIO_SCRIPT]},
    }
    await harness.start(
        settings={"model": "openai:fake-model", "mcpServers": servers}, env=fake_openai.env()
    )
    status = await harness.request("lovia/status", {})
    assert any(s.startswith("lovia.mcpServers.bad: url: ") for s in status["settingsProblems"])
    run = await harness.run("go")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    assert done["output"] == "done without them"
    reported = {e["server"]: e for e in harness.of_run(run["runId"]) if e["kind"] == "mcp.status"}
    assert (
        reported["bad"]["state"] == "failed" and "http:// or https://" in reported["bad"]["error"]
    )
    assert reported["down"]["state"] == "failed"
    assert "Could not connect to MCP server 'down'" in reported["down"]["error"]
    assert "missing API token" in reported["down"]["error"]  # the end of its stderr
    assert "local" not in reported or reported["local"]["state"] != "failed"
    result = next(e for e in harness.of_run(run["runId"]) if e["kind"] == "tool.result")
    assert result["content"][0]["text"] == "hi"
    first = next(r for r in fake_openai.requests if r.method == "POST").json
    system = first["messages"][0]["content"]
    assert "## Unavailable MCP servers" in system and "`down` is not available" in system
    assert "`bad` is not available" in system
    status = await harness.request("lovia/status", {})
    states = {s["name"]: s for s in status["mcpServers"]}
    assert states["local"]["state"] == "running" and "local__echo" in states["local"]["tools"]
    assert states["down"]["state"] == "failed" and states["down"]["log"].endswith("down.log")
    assert "missing API token" in _read(states["down"]["log"])

    # Disabled servers are skipped; the server kept serving throughout.
    servers["down"]["disabled"] = True
    harness.client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(
            settings={"lovia": {"model": "openai:fake-model", "mcpServers": servers}}
        )
    )
    await _settings_applied(
        harness, lambda s: {m["name"]: m["state"] for m in s["mcpServers"]}["down"] == "stopped"
    )
    run = await harness.run("go")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    assert "down" not in {
        e["server"] for e in harness.of_run(run["runId"]) if e["kind"] == "mcp.status"
    }


def _pid_run(call_id: str) -> list:
    return [oai.tool_calls(oai.call("local__pid", {}, id=call_id)), oai.text("ok")]


def _pids(harness, run_id: str) -> list[str]:
    return [
        e["content"][0]["text"]
        for e in harness.of_run(run_id)
        if e["kind"] == "tool.result" and e["status"] == "completed"
    ]


async def test_one_stdio_process_serves_three_runs(harness, fake_openai, tmp_path):
    starts = tmp_path / "starts.txt"
    for i in range(3):
        fake_openai.script(*_pid_run(f"p{i}"))
    servers = {
        "local": {
            "needsApproval": False,
            "command": sys.executable,
            "args": [STDIO_SCRIPT, "--starts-file", str(starts)],
        }
    }
    await harness.start(
        settings={"model": "openai:fake-model", "mcpServers": servers}, env=fake_openai.env()
    )
    pids = []
    session = None
    for _ in range(3):
        params = {"sessionId": session} if session else {}
        run = await harness.run("which process?", **params)
        session = run["sessionId"]
        done = await harness.finished(run["runId"])
        assert done["status"] == "completed", done
        call = next(e for e in harness.of_run(run["runId"]) if e["kind"] == "tool.call")
        assert call["server"] == "local"  # the transcript shows which server served it
        pids += _pids(harness, run["runId"])
    assert len(set(pids)) == 1 and len(pids) == 3
    assert starts.read_text().split() == pids[:1]  # one process start across three runs
    status = await harness.request("lovia/status", {})
    (local,) = status["mcpServers"]
    assert local["starts"] == 1 and local["state"] == "running"
    await harness.stop()  # shutdown stops the pooled server
    harness.client = None
    for _ in range(100):
        if not _alive(int(pids[0])):
            break
        await asyncio.sleep(0.1)
    assert not _alive(int(pids[0]))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_server_crashing_mid_call_restarts_and_the_next_call_works(
    harness, fake_openai, tmp_path
):
    starts = tmp_path / "starts.txt"
    fake_openai.script(
        oai.tool_calls(oai.call("local__pid", {}, id="a")),
        oai.tool_calls(oai.call("local__crash", {}, id="b")),
        oai.tool_calls(oai.call("local__pid", {}, id="c")),
        oai.text("recovered"),
    )
    servers = {
        "local": {
            "needsApproval": False,
            "command": sys.executable,
            "args": [STDIO_SCRIPT, "--starts-file", str(starts)],
        }
    }
    await harness.start(
        settings={"model": "openai:fake-model", "mcpServers": servers}, env=fake_openai.env()
    )
    run = await harness.run("crash it")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    results = {
        e["toolCallId"]: e for e in harness.of_run(run["runId"]) if e["kind"] == "tool.result"
    }
    assert (
        results["b"]["status"] == "failed"
        and "stopped during the call" in (results["b"]["content"][0]["text"])
    )
    before, after = results["a"]["content"][0]["text"], results["c"]["content"][0]["text"]
    assert results["c"]["status"] == "completed" and before != after
    assert starts.read_text().split() == [before, after]
    states = [e["state"] for e in harness.of_run(run["runId"]) if e["kind"] == "mcp.status"]
    assert "restarting" in states and states[-1] == "running"


async def test_tools_list_changed_refreshes_the_cached_tools(harness, fake_openai):
    fake_openai.script(
        oai.tool_calls(oai.call("local__grow", {}, id="g")),
        oai.text("grown"),
        oai.tool_calls(oai.call("local__extra_1", {}, id="x")),
        oai.text("used it"),
    )
    servers = {"local": {"needsApproval": False, "command": sys.executable, "args": [STDIO_SCRIPT]}}
    await harness.start(
        settings={"model": "openai:fake-model", "mcpServers": servers}, env=fake_openai.env()
    )
    first = await harness.run("grow")
    assert (await harness.finished(first["runId"]))["status"] == "completed"
    await _settings_applied(harness, lambda s: "local__extra_1" in s["mcpServers"][0]["tools"])
    second = await harness.run("use the new tool")
    done = await harness.finished(second["runId"])
    assert done["status"] == "completed", done
    result = next(e for e in harness.of_run(second["runId"]) if e["kind"] == "tool.result")
    assert result["status"] == "completed" and result["content"][0]["text"] == "extra_1 done"


async def test_a_settings_change_restarts_only_the_servers_it_affects(
    harness, fake_openai, tmp_path
):
    a_starts, b_starts = tmp_path / "a.txt", tmp_path / "b.txt"
    fake_openai.script(oai.text("one"), oai.text("two"))

    def servers(b_flag: str) -> dict:
        return {
            "a": {
                "command": sys.executable,
                "args": [STDIO_SCRIPT, "--starts-file", str(a_starts)],
            },
            "b": {
                "command": sys.executable,
                "args": [STDIO_SCRIPT, "--starts-file", str(b_starts), "--instructions", b_flag],
            },
        }

    await harness.start(
        settings={"model": "openai:fake-model", "mcpServers": servers("v1")},
        env=fake_openai.env(),
    )
    run = await harness.run("go")
    assert (await harness.finished(run["runId"]))["status"] == "completed"
    harness.client.workspace_did_change_configuration(
        lsp.DidChangeConfigurationParams(
            settings={"lovia": {"model": "openai:fake-model", "mcpServers": servers("v2")}}
        )
    )

    def restarted(status: dict) -> bool:
        return (
            b_starts.exists()
            and len(b_starts.read_text().split()) == 2
            and all(s["state"] == "running" for s in status["mcpServers"])
        )

    await _settings_applied(harness, restarted)
    assert len(a_starts.read_text().split()) == 1  # untouched
    run = await harness.run("again")
    assert (await harness.finished(run["runId"]))["status"] == "completed"
    second = next(r for r in reversed(fake_openai.requests) if r.method == "POST").json
    assert "v2" in second["messages"][0]["content"]
    assert len(a_starts.read_text().split()) == 1 and len(b_starts.read_text().split()) == 2


async def test_idle_servers_stop_and_start_again_on_the_next_run(harness, fake_openai, tmp_path):
    starts = tmp_path / "starts.txt"
    fake_openai.script(oai.text("one"), oai.text("two"))
    servers = {
        "local": {
            "needsApproval": False,
            "command": sys.executable,
            "args": [STDIO_SCRIPT, "--starts-file", str(starts)],
        }
    }
    await harness.start(
        settings={
            "model": "openai:fake-model",
            "mcpServers": servers,
            "mcpIdleTimeoutSeconds": 0.5,
        },
        env=fake_openai.env(),
    )
    run = await harness.run("go")
    assert (await harness.finished(run["runId"]))["status"] == "completed"
    await _settings_applied(harness, lambda s: s["mcpServers"][0]["state"] == "idle")
    run = await harness.run("again")
    assert (await harness.finished(run["runId"]))["status"] == "completed"
    assert len(starts.read_text().split()) == 2


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


@pytest.fixture
def http_mcp_url():
    """The SDK's streamable-HTTP server in a process of its own (tests/support/mcp_http.py)."""
    import subprocess

    script = Path(__file__).resolve().parents[1] / "support" / "mcp_http.py"
    proc = subprocess.Popen(
        [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(timeout=15)


async def test_streamable_http_server_in_its_own_process_and_restart_request(
    harness, fake_openai, http_mcp_url
):
    fake_openai.script(
        oai.tool_calls(oai.call("web__greet", {"name": "Ada"}, id="g1")),
        oai.text("greeted"),
        oai.tool_calls(oai.call("web__greet", {"name": "Bob"}, id="g2")),
        oai.text("greeted again"),
    )
    await harness.start(
        settings={
            "model": "openai:fake-model",
            "mcpServers": {"web": {"url": http_mcp_url, "needsApproval": False}},
        },
        env=fake_openai.env(),
    )
    texts = []
    for prompt in ("greet Ada", "greet Bob"):
        run = await harness.run(prompt)
        done = await harness.finished(run["runId"])
        assert done["status"] == "completed", done
        texts += _pids(harness, run["runId"])
    assert texts == ["Hello, Ada!", "Hello, Bob!"]
    status = await harness.request("lovia/status", {})
    (web,) = status["mcpServers"]
    assert (web["transport"], web["state"], web["starts"]) == ("http", "running", 1)
    restarted = await harness.request("lovia/mcpRestart", {"name": "web"})
    assert restarted["server"]["starts"] == 2 and restarted["server"]["state"] == "running"
    try:
        await harness.request("lovia/mcpRestart", {"name": "nope"})
        raise AssertionError("an unknown server restarted")
    except Exception as exc:
        assert getattr(exc, "code", None) == -32602


async def test_untrusted_workspace_starts_no_mcp_server(harness, fake_openai):
    fake_openai.script(oai.text("ok"))
    servers = {"local": {"needsApproval": False, "command": sys.executable, "args": [STDIO_SCRIPT]}}
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
    status = await harness.request("lovia/status", {})
    (local,) = status["mcpServers"]
    assert local["state"] == "stopped" and "untrusted" in local["error"]


async def _settings_applied(harness, check, *, tries: int = 100) -> None:
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


async def test_mcp_server_configs_from_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lovia.exceptions import MCPError
    from lovia.plugins.mcp import MCPServerStdio, MCPServerStreamableHTTP

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
    local, web, _, unset, bad = (
        mcp_server_config(name, entry, tmp_path) for name, entry in settings.mcpServers.items()
    )
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

    def policy(servers: dict) -> MCPPolicy:
        chosen = settings.model_copy(update={"mcpServers": servers})
        return MCPPolicy(
            log_dir=tmp_path / "logs",
            notify=lambda *_: None,
            settings=lambda: chosen,
            trusted=lambda: True,
        )

    # a run gets no MCP plugin when no server is enabled; a broken entry still counts
    assert policy({}).plugins(tmp_path, "s") == []
    assert policy({"off": settings.mcpServers["off"]}).plugins(tmp_path, "s") == []
    assert len(policy({"bad": settings.mcpServers["bad"]}).plugins(tmp_path, "s")) == 1


async def test_mcp_tools_ask_by_default_per_tool_and_denied_paths_never_reach_the_server(
    harness, fake_openai
):
    (harness.root / ".env").write_text("API_KEY=s3cret\n")
    (harness.root / "notes.txt").write_text("plain notes\n")
    fake_openai.script(
        oai.tool_calls(oai.call("local__echo", {"text": "one"}, id="e1")),
        oai.tool_calls(oai.call("local__echo", {"text": "two"}, id="e2")),
        oai.tool_calls(oai.call("local__read_text", {"path": ".env"}, id="r1")),
        oai.tool_calls(oai.call("local__read_text", {"path": str(harness.root / ".ENV")}, id="r2")),
        oai.tool_calls(oai.call("local__read_text", {"path": "notes.txt"}, id="r3")),
        oai.tool_calls(oai.call("local__calls", {}, id="c1")),
        oai.text("done"),
    )
    servers = {
        "local": {
            "command": sys.executable,
            "args": [STDIO_SCRIPT],
            "approvedTools": ["calls", "read_text"],
        }
    }
    await harness.start(
        settings={"model": "openai:fake-model", "mcpServers": servers}, env=fake_openai.env()
    )
    run = await harness.run("use the server")
    rid = run["runId"]
    first = await harness.wait_kind(rid, "approval.requested", toolCallId="e1")
    assert [o["decision"] for o in first["options"]][:2] == ["allow_once", "allow_always"]
    await harness.request(
        "lovia/approve",
        {"runId": rid, "approvalId": first["approvalId"], "decision": "allow_always"},
    )
    done = await harness.finished(rid)
    assert done["status"] == "completed", done
    events = harness.of_run(rid)
    asked = {e["approvalId"]: e["toolCallId"] for e in events if e["kind"] == "approval.requested"}
    by = {asked[e["approvalId"]]: e["by"] for e in events if e["kind"] == "approval.resolved"}
    assert by == {"e1": "user", "e2": "policy"}  # "always" for echo; approved tools never ask
    results = {e["toolCallId"]: e for e in events if e["kind"] == "tool.result"}
    assert results["e2"]["content"][0]["text"] == "two"
    for denied in ("r1", "r2"):
        text = results[denied]["content"][0]["text"]
        assert results[denied]["isError"] and "denies that path" in text, text
        assert "s3cret" not in text
    assert results["r3"]["content"][0]["text"] == "plain notes\n"
    # the server served echo twice, the allowed read, and this count: never the denied reads
    assert results["c1"]["content"][0]["text"] == "4"
    sent = "".join(str(r.json) for r in fake_openai.requests if r.method == "POST")
    assert "s3cret" not in sent
