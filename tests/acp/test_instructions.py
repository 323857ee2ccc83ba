"""``lovia acp`` names the project instruction files in use once per session
(docs/customization.md#where-you-see-them)."""

from __future__ import annotations

from pathlib import Path

from tests.acp.harness import AcpProcess, message_text
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI


async def test_the_instruction_files_are_named_once_per_session(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    (ws / "AGENTS.md").write_text("Run `make test` before you finish.\n")
    (ws / ".github" / "instructions").mkdir(parents=True)
    (ws / ".github" / "instructions" / "ts.instructions.md").write_text(
        '---\napplyTo: "**/*.ts"\n---\nNo default exports.\n'
    )
    fake_openai.script(oai.text("first"), oai.text("second"), oai.text("other"))
    await agent.start()
    sid = (await agent.new_session(ws)).session_id
    await agent.prompt(sid, "one")
    await agent.prompt(sid, "two")
    line = "instructions: AGENTS.md, .github/instructions/ts.instructions.md (for **/*.ts)"
    text = message_text(agent.client.of(sid))
    assert text == f"`{line}`\n\nfirstsecond", text
    # the model never sees the notice: it is the client's, not the conversation's
    sent = [str(r.json) for r in fake_openai.requests if r.path.endswith("/chat/completions")]
    assert not any(f"`{line}`" in body for body in sent)

    # a folder without instruction files: nothing is said
    bare = ws.parent / "bare"
    bare.mkdir()
    other = (await agent.new_session(bare)).session_id
    await agent.prompt(other, "three")
    assert message_text(agent.client.of(other)) == "other"
