"""Project hooks in the framework alone: real shell hooks around a scripted model's run."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from lovia import Agent, Runner
from lovia.events import ApprovalRequired, InterceptorNotice, ToolCallCompleted
from lovia.testing import ScriptedProvider, call, text
from lovia.workspace import Workspace, WorkspacePolicy
from lovia.workspace.project_hooks import HookCommand, ProjectHooksPlugin, load_hook_file


def write_hooks(root: Path, hooks: dict[str, Any]) -> None:
    (root / ".lovia").mkdir(exist_ok=True)
    (root / ".lovia" / "hooks.json").write_text(json.dumps({"hooks": hooks}))


def script(root: Path, name: str, body: str) -> str:
    path = root / "hook_scripts" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(body)
    return f"{sys.executable} {path}"


def agent_for(root: Path, provider: ScriptedProvider, tmp_user: Path) -> Agent[Any]:
    return Agent(
        name="coder",
        model=provider,
        workspace=Workspace.local(str(root), policy=WorkspacePolicy.coding()),
        plugins=[ProjectHooksPlugin(root, user_dir=tmp_user)],
    )


async def collect(
    agent: Agent[Any], prompt: str
) -> tuple[Any, dict[str, str], list[str], list[str]]:
    handle = Runner.stream(agent, prompt)
    outputs: dict[str, str] = {}
    asked: list[str] = []
    notices: list[str] = []
    async for event in handle:
        if isinstance(event, ApprovalRequired):
            asked.append(event.call.id)
            event.approve()
        elif isinstance(event, ToolCallCompleted):
            outputs[event.call.id] = event.output
        elif isinstance(event, InterceptorNotice):
            notices.append(event.message)
    return await handle.result(), outputs, asked, notices


def seen(provider: ScriptedProvider, index: int) -> str:
    return "\n".join(str(m.content) for m in provider.calls[index])


async def test_a_pre_tool_hook_blocks_rm_rf_and_the_model_reads_why(
    root: Path, tmp_path: Path
) -> None:
    (root / "keep.txt").write_text("precious\n")
    guard = script(
        root,
        "guard.py",
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "if 'rm -rf' in data['tool_input'].get('command', ''):\n"
        "    print('rm -rf is not allowed here; delete files one by one', file=sys.stderr)\n"
        "    sys.exit(2)\n",
    )
    write_hooks(
        root,
        {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": guard}]}]},
    )
    provider = ScriptedProvider([call("shell", {"command": "rm -rf ."}, call_id="rm"), text("ok")])
    _, out, asked, _ = await collect(agent_for(root, provider, tmp_path / "user"), "clean up")
    assert (root / "keep.txt").exists()
    assert asked == []
    assert "blocked by a hook" in out["rm"] and "delete files one by one" in out["rm"]
    assert "delete files one by one" in seen(provider, 1)


async def test_post_tool_formatter_output_reaches_the_model(root: Path, tmp_path: Path) -> None:
    fmt = script(
        root,
        "fmt.py",
        "import json, sys, pathlib\n"
        "data = json.load(sys.stdin)\n"
        "p = pathlib.Path(data['tool_input']['file_path'])\n"
        "p.write_text(p.read_text().upper())\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PostToolUse',"
        " 'additionalContext': 'formatted ' + p.name}}))\n",
    )
    write_hooks(
        root,
        {
            "PostToolUse": [
                {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": fmt}]}
            ]
        },
    )
    provider = ScriptedProvider(
        [call("write_file", {"path": "a.txt", "content": "hello\n"}, call_id="w"), text("ok")]
    )
    _, out, _, _ = await collect(agent_for(root, provider, tmp_path / "user"), "write")
    assert (root / "a.txt").read_text() == "HELLO\n"
    assert "formatted a.txt" in out["w"]
    assert "formatted a.txt" in seen(provider, 1)


async def test_a_hanging_hook_is_ended_and_the_run_goes_on(root: Path, tmp_path: Path) -> None:
    slow = script(root, "slow.py", "import time\ntime.sleep(30)\n")
    write_hooks(
        root, {"PreToolUse": [{"hooks": [{"type": "command", "command": slow, "timeout": 1}]}]}
    )
    provider = ScriptedProvider([call("read_file", {"path": "x.txt"}, call_id="r"), text("ok")])
    (root / "x.txt").write_text("x\n")
    result, out, _, notices = await collect(agent_for(root, provider, tmp_path / "user"), "read")
    assert result.output == "ok" and "x" in out["r"]
    assert any("timed out after 1s" in n for n in notices)


async def test_prompt_and_session_context_reach_the_model(root: Path, tmp_path: Path) -> None:
    start = script(root, "start.py", "print('branch is main')\n")
    prompt = script(
        root,
        "prompt.py",
        "import json, sys\n"
        "data = json.load(sys.stdin)\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'UserPromptSubmit',"
        " 'additionalContext': 'prompt was ' + data['prompt']}}))\n",
    )
    write_hooks(
        root,
        {
            "SessionStart": [{"hooks": [{"type": "command", "command": start}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": prompt}]}],
        },
    )
    provider = ScriptedProvider([text("ok")])
    await collect(agent_for(root, provider, tmp_path / "user"), "hi there")
    assert "branch is main" in seen(provider, 0)
    assert "prompt was hi there" in seen(provider, 0)


async def test_a_hook_allow_skips_an_ordinary_card_but_not_a_protected_one(
    root: Path, tmp_path: Path
) -> None:
    allow = script(
        root,
        "allow.py",
        "import json\nprint(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse',"
        " 'permissionDecision': 'allow'}}))\n",
    )
    write_hooks(
        root, {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": allow}]}]}
    )
    provider = ScriptedProvider(
        [
            call("shell", {"command": "touch made.txt"}, call_id="plain"),
            call("shell", {"command": "echo x > .lovia/hooks.json"}, call_id="protected"),
            text("ok"),
        ]
    )
    _, _, asked, _ = await collect(agent_for(root, provider, tmp_path / "user"), "go")
    assert (root / "made.txt").exists()
    assert asked == ["protected"]


async def test_a_hook_allow_does_not_wave_through_another_tool_naming_a_protected_path(
    root: Path, tmp_path: Path
) -> None:
    from lovia.tools import tool

    @tool(needs_approval=True)
    def publish(target: str) -> str:
        """Publish to a target file."""
        return f"published {target}"

    allow = script(
        root,
        "allow.py",
        "import json\nprint(json.dumps({'hookSpecificOutput': {'permissionDecision': 'allow'}}))\n",
    )
    write_hooks(root, {"PreToolUse": [{"hooks": [{"type": "command", "command": allow}]}]})
    provider = ScriptedProvider(
        [
            call("publish", {"target": "out/site.txt"}, call_id="plain"),
            call("publish", {"target": ".vscode/settings.json"}, call_id="protected"),
            text("ok"),
        ]
    )
    agent = agent_for(root, provider, tmp_path / "user").clone(tools=[publish])
    _, _, asked, _ = await collect(agent, "go")
    assert asked == ["protected"]


async def test_a_stop_hook_sends_the_model_on_once(root: Path, tmp_path: Path) -> None:
    stop = script(
        root,
        "stop.py",
        "import json, sys\n"
        "if not json.load(sys.stdin)['stop_hook_active']:\n"
        "    print(json.dumps({'decision': 'block', 'reason': 'run the tests first'}))\n",
    )
    write_hooks(root, {"Stop": [{"hooks": [{"type": "command", "command": stop}]}]})
    provider = ScriptedProvider([text("done"), text("tests ran")])
    result, _, _, _ = await collect(agent_for(root, provider, tmp_path / "user"), "fix it")
    assert result.output == "tests ran"
    assert "run the tests first" in seen(provider, 1)


class _AlwaysCompacts:
    """A context policy that reports a compaction on every turn (the view is unchanged)."""

    async def compact(self, req: Any) -> Any:
        from lovia.context.policy import ContextResult

        return ContextResult(entries=req.entries, changed=True, compacted=True, reason="test")


async def test_a_pre_compact_hook_runs_when_the_policy_compacts(root: Path, tmp_path: Path) -> None:
    marker = tmp_path / "compacted.json"
    hook = script(
        root,
        "compact.py",
        f"import sys\nopen({str(marker)!r}, 'w').write(sys.stdin.read())\n",
    )
    write_hooks(root, {"PreCompact": [{"matcher": "auto", "hooks": [{"command": hook}]}]})
    provider = ScriptedProvider([text("ok")])
    agent = agent_for(root, provider, tmp_path / "user").clone(context_policy=_AlwaysCompacts())
    await collect(agent, "hi")
    sent = json.loads(marker.read_text())
    assert sent["hook_event_name"] == "PreCompact" and sent["trigger"] == "auto"


def test_claude_tool_names_match_lovia_tools(tmp_path: Path) -> None:
    assert HookCommand("PreToolUse", "x", "Bash").matches("shell")
    assert HookCommand("PreToolUse", "x", "Edit|Write").matches("write_file")
    assert HookCommand("PreToolUse", "x", "shell").matches("shell")
    assert not HookCommand("PreToolUse", "x", "Bash").matches("write_file")
    assert HookCommand("PreToolUse", "x", "").matches("anything")
    bad = tmp_path / "hooks.json"
    bad.write_text(
        '{"hooks": {"Notification": [], "PreToolUse": [{"hooks": [{"type": "prompt"}]}]}}'
    )
    found = load_hook_file(bad, source="x")
    assert not found.commands and len(found.problems) == 2


async def test_a_pre_compact_exit_2_cannot_stop_an_automatic_compaction(
    root: Path, tmp_path: Path
) -> None:
    hook = script(root, "refuse.py", "import sys\nprint('not now', file=sys.stderr)\nsys.exit(2)\n")
    write_hooks(root, {"PreCompact": [{"matcher": "auto", "hooks": [{"command": hook}]}]})
    provider = ScriptedProvider([text("ok")])
    agent = agent_for(root, provider, tmp_path / "user").clone(context_policy=_AlwaysCompacts())
    result, _, _, notices = await collect(agent, "hi")
    assert result.output == "ok"
    assert notices == ["a PreCompact hook cannot stop an automatic compaction: not now"]
