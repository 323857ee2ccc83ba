"""``lovia acp``'s slash commands: lovia's commands and the workspace's command files in
``available_commands_update``, expanded as ``lovia/run`` expands them; ``/help`` answered
without the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acp.harness import AcpProcess
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI

FIX_ISSUE = """\
---
allowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*)
argument-hint: [issue-number]
description: Fix a GitHub issue
---

Fix issue #$ARGUMENTS following our coding standards.
"""


def _requests(fake: FakeOpenAI) -> list[dict]:
    return [r.json for r in fake.requests if r.path.endswith("/chat/completions")]


def _last_user(request: dict) -> str:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "user"][-1]


async def test_command_files_are_listed_and_expand_and_help_stays_local(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    (ws / ".claude" / "commands").mkdir(parents=True)
    (ws / ".claude" / "commands" / "fix-issue.md").write_text(FIX_ISSUE)
    fake_openai.script(oai.text("fixed"), oai.text("planned"))
    await agent.start()
    sid = (await agent.new_session(ws)).session_id
    c = agent.client
    (update,) = await c.wait_for(lambda: c.of(sid, "available_commands_update"))
    listed = {x.name: x for x in update.available_commands}
    assert {"help", "plan", "init", "review", "compact", "fix-issue"} <= set(listed)
    assert "new" not in listed  # a new conversation is the client's new session
    fix = listed["fix-issue"]
    assert fix.description.startswith("Fix a GitHub issue (workspace: .claude/commands/")
    assert fix.input is not None and fix.input.root.hint == "[issue-number]"

    assert (await agent.prompt(sid, "/fix-issue 123")).stop_reason == "end_turn"
    assert _last_user(_requests(fake_openai)[0]) == (
        "Fix issue #123 following our coding standards."
    )

    assert (await agent.prompt(sid, "/help")).stop_reason == "end_turn"
    assert len(_requests(fake_openai)) == 1  # /help never reaches the model
    said = "".join(
        u.content.text for u in c.of(sid, "agent_message_chunk") if hasattr(u.content, "text")
    )
    assert "/fix-issue [issue-number]" in said and "Fix a GitHub issue" in said

    # /plan switches the session to plan mode (the client is told) and plans the rest
    assert (await agent.prompt(sid, "/plan add a cache")).stop_reason == "end_turn"
    assert [u.current_mode_id for u in c.of(sid, "current_mode_update")] == ["plan"]
    planned = _requests(fake_openai)[1]
    assert "# Plan mode" in planned["messages"][0]["content"]
    assert _last_user(planned) == "add a cache"
    assert "/help" not in str(planned["messages"])


async def test_an_unknown_command_is_refused_with_a_hint(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    await agent.start()
    sid = (await agent.new_session(ws)).session_id
    with pytest.raises(Exception) as raised:
        await agent.prompt(sid, "/no-such 1")
    assert getattr(raised.value, "code", None) == -32602, raised.value
    assert "/help" in str(getattr(raised.value, "data", "")), raised.value
    assert _requests(fake_openai) == []


async def test_compact_compacts_the_session_now_and_the_next_prompt_sees_the_summary(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    from lovia.context.prompts import REQUIRED_SECTIONS

    summary = "\n".join(f"{s}\nSUMMARY-MARK" for s in REQUIRED_SECTIONS)
    fake_openai.script(oai.text("early answer"), oai.text(summary), oai.text("later"))
    await agent.start()
    sid = (await agent.new_session(ws)).session_id
    c = agent.client
    assert (await agent.prompt(sid, "EARLY-MESSAGE")).stop_reason == "end_turn"
    assert (await agent.prompt(sid, "/compact focus-on-x")).stop_reason == "end_turn"
    asked = str(_requests(fake_openai)[1]["messages"])
    assert "focus-on-x" in asked and "EARLY-MESSAGE" in asked
    said = "".join(
        u.content.text for u in c.of(sid, "agent_message_chunk") if hasattr(u.content, "text")
    )
    assert "Compacted the conversation" in said
    assert (await agent.prompt(sid, "next")).stop_reason == "end_turn"
    later = str(_requests(fake_openai)[2]["messages"])
    assert "SUMMARY-MARK" in later and "EARLY-MESSAGE" not in later
