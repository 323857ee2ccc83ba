"""Commands (``/name`` prompts) through the real server and the built-in agent on a local
OpenAI-format endpoint: what the model receives, and that ``/help`` never reaches it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import fake_openai as oai

# Claude Code's documented example, unchanged.
FIX_ISSUE = """\
---
allowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*)
argument-hint: [issue-number]
description: Fix a GitHub issue
---

Fix issue #$ARGUMENTS following our coding standards.
"""


def _posts(fake: Any) -> list[dict[str, Any]]:
    return [r.json for r in fake.requests if r.method == "POST"]


def _user_texts(body: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]


def _said(harness: Any, run_id: str, kind: str) -> list[str]:
    return [e["text"] for e in harness.of_run(run_id) if e["kind"] == kind]


async def test_a_claude_code_command_file_expands_and_help_never_reaches_the_model(
    harness, fake_openai, tmp_path
):
    root = harness.root
    (root / ".claude" / "commands" / "frontend").mkdir(parents=True)
    (root / ".claude" / "commands" / "fix-issue.md").write_text(FIX_ISSUE)
    (root / ".claude" / "commands" / "frontend" / "component.md").write_text(
        "---\ndescription: A component\nmode: plan\n---\nSketch the $1 component."
    )
    home = tmp_path / "home"
    (home / ".lovia" / "commands").mkdir(parents=True)
    (home / ".lovia" / "commands" / "mine.md").write_text("---\ndescription: my own\n---\nx")
    fake_openai.script(oai.text("fixed"), oai.text("sketched"))
    await harness.start(
        settings={"model": "openai:fake-model"}, env={**fake_openai.env(), "HOME": str(home)}
    )
    listed = {c["name"]: c for c in (await harness.request("lovia/commands", {}))["commands"]}
    assert listed["fix-issue"] == {
        "name": "fix-issue",
        "description": "Fix a GitHub issue",
        "argumentHint": "[issue-number]",
        "source": "workspace",
        "path": str(root / ".claude" / "commands" / "fix-issue.md"),
        "mode": None,
    }
    assert listed["frontend:component"]["mode"] == "plan"
    assert listed["mine"]["source"] == "user"
    assert listed["help"]["source"] == "built-in" and listed["help"]["path"] is None
    assert {"plan", "init", "review", "compact", "new"} <= set(listed)

    run = await harness.run("/fix-issue 123")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    assert _user_texts(_posts(fake_openai)[0])[-1] == (
        "Fix issue #123 following our coding standards."
    )
    assert _said(harness, run["runId"], "user.message") == ["/fix-issue 123"]  # as typed

    # /help: answered by the server, in the same conversation, with no model call
    before = len(_posts(fake_openai))
    helped = await harness.run("/help", sessionId=run["sessionId"])
    done = await harness.finished(helped["runId"])
    assert done["status"] == "completed", done
    assert helped["sessionId"] == run["sessionId"]
    answer = "".join(_said(harness, helped["runId"], "message.completed"))
    assert "/fix-issue [issue-number]" in answer and "Fix a GitHub issue" in answer
    assert "/frontend:component" in answer and "[workspace:" in answer
    assert len(_posts(fake_openai)) == before

    # a namespaced command in plan mode: the run is a plan-mode run
    planned = await harness.run("/frontend:component Button", sessionId=run["sessionId"])
    done = await harness.finished(planned["runId"])
    assert done["status"] == "completed", done
    last = _posts(fake_openai)[-1]
    assert _user_texts(last)[-1] == "Sketch the Button component."
    assert "# Plan mode" in last["messages"][0]["content"]
    assert len(_posts(fake_openai)) == before + 1
    # /help's exchange is not in the conversation the model sees
    assert "/help" not in str(last["messages"]), last["messages"]


async def test_unknown_commands_are_refused_before_any_model_call(harness, fake_openai):
    fake_openai.script(oai.text("a message"))
    await harness.start(settings={"model": "openai:fake-model"}, env=fake_openai.env())
    with pytest.raises(Exception) as raised:
        await harness.run("/no-such-command 1")
    assert getattr(raised.value, "code", None) == -32602, raised.value
    data = getattr(raised.value, "data", None) or {}
    assert "/help" in data.get("hint", ""), raised.value
    with pytest.raises(Exception) as empty:
        await harness.run("/plan")
    assert getattr(empty.value, "code", None) == -32602, empty.value
    assert _posts(fake_openai) == []
    # a line that starts with a path is a message
    run = await harness.run("/usr/bin/python is broken")
    assert (await harness.finished(run["runId"]))["status"] == "completed"
    assert _user_texts(_posts(fake_openai)[0])[-1] == "/usr/bin/python is broken"


async def test_plan_and_new_and_review(harness, fake_openai):
    fake_openai.script(oai.text("the plan"), oai.text("fresh"), oai.text("reviewed"))
    await harness.start(settings={"model": "openai:fake-model"}, env=fake_openai.env())
    planned = await harness.run("/plan add a cache")
    assert (await harness.finished(planned["runId"]))["status"] == "completed"
    first = _posts(fake_openai)[0]
    assert "# Plan mode" in first["messages"][0]["content"]
    assert _user_texts(first)[-1] == "add a cache"

    fresh = await harness.run("/new hello again", sessionId=planned["sessionId"])
    assert fresh["sessionId"] != planned["sessionId"]
    assert (await harness.finished(fresh["runId"]))["status"] == "completed"
    second = _posts(fake_openai)[1]
    assert _user_texts(second) == ["hello again"]  # nothing of the first conversation
    assert "# Plan mode" not in second["messages"][0]["content"]

    reviewed = await harness.run("/review the parser", sessionId=fresh["sessionId"])
    assert (await harness.finished(reviewed["runId"]))["status"] == "completed"
    third = _posts(fake_openai)[2]
    assert "git diff HEAD" in _user_texts(third)[-1] and "the parser" in _user_texts(third)[-1]
    assert "# Plan mode" in third["messages"][0]["content"]  # a review changes nothing


async def test_denied_and_outside_command_files_are_never_read(harness, fake_openai, tmp_path):
    root = harness.root
    commands = root / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "secret.md").write_text("Secret command text\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.md").write_text("Outside command text\n")
    (commands / "leak.md").symlink_to(outside / "leak.md")  # a link leaving the workspace
    (commands / "shared").symlink_to(outside)  # a folder leaving it
    (root / ".lovia" / "commands").mkdir(parents=True)
    (root / ".lovia" / "commands" / "big.md").write_text("x" * 40_000)
    fake_openai.script(oai.text("never"))
    await harness.start(
        settings={
            "model": "openai:fake-model",
            "permissions": {"deniedPaths": [".claude/commands/secret.md"]},
        },
        env=fake_openai.env(),
    )
    listed = {c["name"] for c in (await harness.request("lovia/commands", {}))["commands"]}
    assert "big" in listed
    assert not {"secret", "leak", "shared:leak"} & listed
    for prompt in ("/secret", "/leak", "/shared:leak"):
        with pytest.raises(Exception) as raised:
            await harness.run(prompt)
        assert "Unknown command" in str(raised.value), raised.value
    with pytest.raises(Exception) as big:
        await harness.run("/big")
    assert "longer than 32,000 characters" in str(big.value), big.value
    assert _posts(fake_openai) == []  # nothing reached the model


async def test_a_command_cannot_widen_a_run(harness, fake_openai):
    """A workspace's command file is a prompt: its ``allowed-tools`` grants nothing (a write
    still asks), and its ``mode: act`` does not take a plan-mode request out of plan mode."""
    commands = harness.root / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "write.md").write_text(
        "---\nallowed-tools: Write, Edit, Bash(*)\nmode: act\n---\nWrite x.txt\n"
    )
    fake_openai.script(
        oai.tool_calls(oai.call("write_file", {"path": "x.txt", "content": "x"}, id="w1")),
        oai.text("tried"),
        oai.tool_calls(oai.call("write_file", {"path": "y.txt", "content": "y"}, id="w2")),
        oai.text("tried again"),
    )
    await harness.start(settings={"model": "openai:fake-model"}, env=fake_openai.env())
    planned = await harness.run("/write", mode="plan")
    assert (await harness.finished(planned["runId"]))["status"] == "completed"
    assert "approval.requested" not in harness.kinds(planned["runId"])
    assert "# Plan mode" in _posts(fake_openai)[0]["messages"][0]["content"]
    assert not (harness.root / "x.txt").exists()
    acting = await harness.run("/write")
    asked = await harness.wait_kind(acting["runId"], "approval.requested")
    assert asked["toolCallId"] == "w2"  # allowed-tools granted nothing: the write asks
    done = await harness.approve_all(acting["runId"], "reject_once")
    assert done["status"] == "completed", done
    assert not (harness.root / "y.txt").exists()


async def test_in_an_untrusted_workspace_its_commands_are_labelled_as_the_workspaces(
    harness, fake_openai
):
    """Restricted Mode: the workspace's command files are offered as the workspace's (the
    label the menu shows) and run under the untrusted workspace's rules: read-only, no write."""
    commands = harness.root / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "fix-issue.md").write_text(FIX_ISSUE)
    fake_openai.script(
        oai.tool_calls(oai.call("write_file", {"path": "x.txt", "content": "x"}, id="w1")),
        oai.text("could not"),
    )
    await harness.start(
        settings={"model": "openai:fake-model"},
        init_options={"trusted": False},
        env=fake_openai.env(),
    )
    listed = {c["name"]: c for c in (await harness.request("lovia/commands", {}))["commands"]}
    assert listed["fix-issue"]["source"] == "workspace"
    assert listed["fix-issue"]["path"] == str(commands / "fix-issue.md")
    run = await harness.run("/fix-issue 7")
    done = await harness.finished(run["runId"])
    assert done["status"] == "completed", done
    assert _user_texts(_posts(fake_openai)[0])[-1] == "Fix issue #7 following our coding standards."
    assert not (harness.root / "x.txt").exists()
