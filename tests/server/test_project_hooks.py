"""Project hooks (``.lovia/hooks.json``) through the real server, the built-in agent on a local
OpenAI-format endpoint and real hook scripts: what they block, add and report."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.support import fake_openai as oai

SETTINGS = {"model": "openai:fake-model"}


def _posts(fake: Any) -> list[dict[str, Any]]:
    return [r.json for r in fake.requests if r.method == "POST"]


def _tool_results(body: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: str(m["content"]) for m in body["messages"] if m["role"] == "tool"}


def _hooks(folder: Path, hooks: dict[str, Any]) -> None:
    (folder / ".lovia").mkdir(parents=True, exist_ok=True)
    (folder / ".lovia" / "hooks.json").write_text(json.dumps({"hooks": hooks}))


def _user_hooks(home: Path, hooks: dict[str, Any]) -> None:
    (home / ".lovia").mkdir(parents=True, exist_ok=True)
    (home / ".lovia" / "hooks.json").write_text(json.dumps({"hooks": hooks}))


def _script(folder: Path, name: str, body: str) -> str:
    path = folder / "hooks" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    return f"{sys.executable} {path}"


def _one(command: str, matcher: str = "", **extra: Any) -> list[dict[str, Any]]:
    return [{"matcher": matcher, "hooks": [{"type": "command", "command": command, **extra}]}]


async def test_a_pre_tool_hook_blocks_rm_rf_and_the_model_gets_the_reason(
    harness, fake_openai, tmp_path
):
    root = harness.root
    (root / "keep.txt").write_text("keep me\n")
    guard = _script(
        root / ".lovia",
        "guard.py",
        "import json, sys\n"
        "cmd = json.load(sys.stdin)['tool_input'].get('command', '')\n"
        "if 'rm -rf' in cmd:\n"
        "    print('Blocked: rm -rf is forbidden in this repo', file=sys.stderr)\n"
        "    sys.exit(2)\n",
    )
    _hooks(root, {"PreToolUse": _one(guard, "Bash")})
    fake_openai.script(
        oai.tool_calls(oai.call("shell", {"command": "rm -rf ."}, id="rm")),
        oai.text("done"),
    )
    await harness.start(
        settings=SETTINGS, env={**fake_openai.env(), "HOME": str(tmp_path / "home")}
    )
    run = await harness.run("clean everything")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    assert "approval.requested" not in harness.kinds(run["runId"])
    assert (root / "keep.txt").exists()
    reason = _tool_results(_posts(fake_openai)[1])["rm"]
    assert "blocked by a hook" in reason and "rm -rf is forbidden in this repo" in reason


async def test_a_post_tool_formatter_rewrites_the_file_and_the_agent_sees_its_output(
    harness, fake_openai, tmp_path
):
    root = harness.root
    fmt = _script(
        root / ".lovia",
        "fmt.py",
        "import json, sys, pathlib\n"
        "p = pathlib.Path(json.load(sys.stdin)['tool_input']['file_path'])\n"
        "p.write_text(p.read_text().replace('  ', ' '))\n"
        "print(json.dumps({'decision': 'block', 'reason': 'fmt: reformatted ' + p.name}))\n",
    )
    _hooks(root, {"PostToolUse": _one(fmt, "Write|Edit")})
    fake_openai.script(
        oai.tool_calls(oai.call("write_file", {"path": "a.py", "content": "x  =  1\n"}, id="w")),
        oai.text("done"),
    )
    await harness.start(
        settings=SETTINGS, env={**fake_openai.env(), "HOME": str(tmp_path / "home")}
    )
    run = await harness.run("write a.py")
    done = await harness.approve_all(run["runId"])
    assert done["status"] == "completed", done
    assert (root / "a.py").read_text() == "x = 1\n"
    assert "fmt: reformatted a.py" in _tool_results(_posts(fake_openai)[1])["w"]


async def test_a_hook_past_its_timeout_is_ended_and_the_run_goes_on(harness, fake_openai, tmp_path):
    root = harness.root
    (root / "x.txt").write_text("hello\n")
    slow = _script(root / ".lovia", "slow.py", "import time\ntime.sleep(60)\n")
    _hooks(root, {"PreToolUse": _one(slow, "Read", timeout=1)})
    fake_openai.script(
        oai.tool_calls(oai.call("read_file", {"path": "x.txt"}, id="r")),
        oai.text("done"),
    )
    log = tmp_path / "server.log"
    await harness.start(
        settings=SETTINGS,
        env={**fake_openai.env(), "HOME": str(tmp_path / "home")},
        log_file=log,
    )
    run = await harness.run("read x")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    assert "hello" in _tool_results(_posts(fake_openai)[1])["r"]
    assert "timed out after 1s and was ended" in log.read_text()


async def test_session_and_prompt_context_reach_the_model(harness, fake_openai, tmp_path):
    root = harness.root
    start = _script(root / ".lovia", "start.py", "print('Session note: on branch main')\n")
    prompt = _script(
        root / ".lovia",
        "prompt.py",
        "import json, sys\n"
        "p = json.load(sys.stdin)['prompt']\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'UserPromptSubmit',"
        " 'additionalContext': 'Prompt note: ' + p.upper()}}))\n",
    )
    _hooks(root, {"SessionStart": _one(start), "UserPromptSubmit": _one(prompt)})
    fake_openai.script(oai.text("done"))
    await harness.start(
        settings=SETTINGS, env={**fake_openai.env(), "HOME": str(tmp_path / "home")}
    )
    run = await harness.run("fix the bug")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    sent = json.dumps(_posts(fake_openai)[0]["messages"])
    assert "Session note: on branch main" in sent and "Prompt note: FIX THE BUG" in sent


async def test_an_untrusted_workspace_runs_only_the_users_hooks(harness, fake_openai, tmp_path):
    root = harness.root
    home = tmp_path / "home"
    marker = root / "workspace-hook-ran"
    ws_hook = f"touch {marker}; echo WORKSPACE HOOK"
    user_hook = "echo USER HOOK"
    _hooks(root, {"UserPromptSubmit": _one(ws_hook)})
    _user_hooks(home, {"UserPromptSubmit": _one(user_hook)})
    fake_openai.script(oai.text("done"))
    await harness.start(
        settings=SETTINGS,
        init_options={"trusted": False},
        env={**fake_openai.env(), "HOME": str(home)},
    )
    run = await harness.run("hello")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    sent = json.dumps(_posts(fake_openai)[0]["messages"])
    assert "USER HOOK" in sent
    assert "WORKSPACE HOOK" not in sent
    assert not marker.exists()


async def test_a_hook_allow_never_opens_a_protected_path(harness, fake_openai, tmp_path):
    root = harness.root
    allow = _script(
        tmp_path / "home" / ".lovia",
        "allow.py",
        "import json\nprint(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse',"
        " 'permissionDecision': 'allow', 'permissionDecisionReason': 'all fine'}}))\n",
    )
    _user_hooks(tmp_path / "home", {"PreToolUse": _one(allow, "*")})
    fake_openai.script(
        oai.tool_calls(oai.call("write_file", {"path": "ok.txt", "content": "ok\n"}, id="w1")),
        oai.tool_calls(
            oai.call("write_file", {"path": ".lovia/hooks.json", "content": "{}"}, id="w2")
        ),
        oai.text("done"),
    )
    await harness.start(
        settings=SETTINGS, env={**fake_openai.env(), "HOME": str(tmp_path / "home")}
    )
    run = await harness.run("write")
    asked = await harness.wait_kind(run["runId"], "approval.requested")
    assert asked["toolCallId"] == "w2" and asked["warning"]
    await harness.request(
        "lovia/approve",
        {"runId": run["runId"], "approvalId": asked["approvalId"], "decision": "reject_once"},
    )
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    assert (root / "ok.txt").read_text() == "ok\n"
    assert not (root / ".lovia" / "hooks.json").exists()


async def test_a_failing_post_tool_hook_is_shown_with_its_call_and_the_run_goes_on(
    harness, fake_openai, tmp_path
):
    root = harness.root
    (root / "x.txt").write_text("hello\n")
    _hooks(root, {"PostToolUse": _one("echo 'fmt crashed' >&2; exit 1", "Read")})
    fake_openai.script(
        oai.tool_calls(oai.call("read_file", {"path": "x.txt"}, id="r")),
        oai.text("done"),
    )
    await harness.start(
        settings=SETTINGS, env={**fake_openai.env(), "HOME": str(tmp_path / "home")}
    )
    run = await harness.run("read x")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    shown = "".join(
        e["output"]["text"]
        for e in harness.of_run(run["runId"])
        if e["kind"] == "tool.update" and e["toolCallId"] == "r"
    )
    assert "[hook] PostToolUse hook" in shown and "failed (exit code 1): fmt crashed" in shown
    # a failed hook says nothing to the model
    assert "fmt crashed" not in json.dumps(_posts(fake_openai)[1]["messages"])
