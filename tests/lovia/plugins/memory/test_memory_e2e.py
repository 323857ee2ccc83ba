"""End to end: an agent remembers in one run and recalls in the next."""

from __future__ import annotations

import json
import logging

import pytest

from lovia import (
    Agent,
    CheckpointOptions,
    InMemoryCheckpointer,
    InMemorySession,
    Memory,
    OpenAIEmbedder,
    Runner,
)
from lovia.plugins import KeywordIndex
from lovia.plugins.memory import plugin as mp
from lovia.testing import ScriptedProvider, call, text
from lovia.transcript import ToolResultEntry
from tests.support import fake_openai as oai


def digest_reply(facts=(), stale=(), summary=""):
    return text(json.dumps({"facts": list(facts), "stale": list(stale), "summary": summary}))


@pytest.fixture
def july(monkeypatch):
    monkeypatch.setattr(mp, "_current_month", lambda: "2026-07")


async def test_remember_in_one_run_recall_in_the_next(tmp_path, july) -> None:
    root = tmp_path / "memory"
    provider = ScriptedProvider(
        [
            # run 1: the model saves a note on request, answers; the digest admits one more
            call("remember", {"fact": "The user deploys with `make ship`"}),
            text("Got it."),
            digest_reply(
                facts=["[2026-07] The user's name is Ada"],
                summary="Ada explained that deploys run through make ship on Fridays.",
            ),
            # run 2 (another session, a fresh Memory object on the same files)
            call("recall", {"query": "deploy day"}),
            text("release\n部署\nFriday"),  # query expansion
            text("On that day Ada said deploys run through make ship on Fridays."),  # summary
            text("You deploy with `make ship`, on Fridays."),
            digest_reply(),
        ]
    )
    first = Memory(root)
    agent = Agent(name="helper", instructions="Be helpful.", model=provider, plugins=[first])
    r1 = await Runner.run(
        agent, "I'm Ada. I always deploy with make ship. Remember that.", session_id="s1"
    )
    assert r1.output == "Got it."
    assert (root / "MEMORY.md").read_text() == (
        "- [2026-07] The user deploys with `make ship`\n- [2026-07] The user's name is Ada"
    )
    assert (root / ".dreamed").exists() and (root / "archive.db").exists()

    second = Memory(root)
    agent2 = Agent(name="helper", instructions="Be helpful.", model=provider, plugins=[second])
    r2 = await Runner.run(agent2, "Which day do I deploy?", session_id="s2")
    assert r2.output == "You deploy with `make ship`, on Fridays."

    host_prompt = provider.calls[3][0].content
    assert host_prompt.startswith("Be helpful.\n\n## Memory")
    assert "`recall(query)`" in host_prompt
    assert host_prompt.endswith(
        "- [2026-07] The user deploys with `make ship`\n- [2026-07] The user's name is Ada"
    )
    expansion, summary = provider.calls[4], provider.calls[5]
    assert expansion[-1].content == "deploy day"
    excerpts = summary[-1].content
    assert excerpts.startswith("QUESTION: deploy day")
    assert "Ada explained that deploys run through make ship on Fridays." in excerpts
    result = next(e for e in r2.entries if isinstance(e, ToolResultEntry))
    assert result.output == "On that day Ada said deploys run through make ship on Fridays."
    assert not provider.script

    index = KeywordIndex(root / "archive.db")
    docs = {h.doc.id: h.doc for h in await index.search("ship make deploy Fridays", 20)}
    summary_doc = next(d for i, d in docs.items() if i.endswith(":summary"))
    assert summary_doc.meta["session_id"] == "s1"
    assert {d.meta["session_id"] for d in docs.values()} <= {"s1", "s2"}
    await index.aclose()
    await first.aclose()
    await second.aclose()


async def test_run_ids_come_from_the_run_context(tmp_path) -> None:
    root = tmp_path / "memory"
    memory = Memory(root, auto_curate=False, summarize_recall=False, expand_query=False)
    provider = ScriptedProvider([text("pong")])
    agent = Agent(name="a", model=provider, plugins=[memory])
    await Runner.run(
        agent,
        "ping",
        session=InMemorySession(),
        session_id="chat-1",
        checkpoint=CheckpointOptions(checkpointer=InMemoryCheckpointer(), run_id="run-42"),
    )
    hits = await memory.index.search("ping pong")
    assert sorted(h.doc.id for h in hits) == ["run-42:0", "run-42:1"]
    assert all(
        h.doc.meta == {"run_id": "run-42", "session_id": "chat-1", "kind": "message"} for h in hits
    )
    await memory.aclose()


async def test_a_failing_digest_never_fails_the_run(tmp_path, caplog) -> None:
    root = tmp_path / "memory"
    memory = Memory(root)
    provider = ScriptedProvider([text("answer")])  # nothing left for the digest
    agent = Agent(name="a", model=provider, plugins=[memory])
    with caplog.at_level(logging.WARNING, logger="lovia.plugins.memory"):
        result = await Runner.run(agent, "question about zebras")
    assert result.output == "answer"
    assert "digest failed" in caplog.text
    assert [h.doc.text for h in await memory.index.search("zebras")] == ["question about zebras"]
    await memory.aclose()


async def test_memory_without_an_archive(tmp_path, july) -> None:
    root = tmp_path / "memory"
    memory = Memory(root, index=None)
    provider = ScriptedProvider([text("ok"), digest_reply(facts=["likes short answers"])])
    agent = Agent(name="a", model=provider, plugins=[memory])
    await Runner.run(agent, "keep it short, always")
    assert "recall" not in provider.calls[0][0].content
    assert provider.requests[0]["tools"] is not None
    names = {t["function"]["name"] for t in provider.requests[0]["tools"]}
    assert {"remember", "forget"} <= names
    assert not any(n.startswith("recall") and n != "recall_tool_result" for n in names)
    assert not (root / "archive.db").exists()
    assert await memory.notes_body() == "- [2026-07] likes short answers"


async def test_over_budget_notes_are_dreamed_at_run_end(tmp_path, july) -> None:
    root = tmp_path / "memory"
    memory = Memory(root, index=None, notes_budget=40, model=None)
    await memory.replace_notes("- [2026-01] one long fact about things\n- [2026-02] another one")
    provider = ScriptedProvider(
        [text("ok"), digest_reply(), text("- [2026-02] one fact\n- [2026-02] another one")]
    )
    agent = Agent(name="a", model=provider, plugins=[memory])
    await Runner.run(agent, "hello")
    assert await memory.notes_body() == "- [2026-02] one fact\n- [2026-02] another one"
    assert (root / "MEMORY.md.bak").read_text() == (
        "- [2026-01] one long fact about things\n- [2026-02] another one"
    )
    assert "40 characters" in provider.calls[2][0].content


async def test_over_the_wire_with_openai_chat_and_embeddings(tmp_path, openai_env, july) -> None:
    server = openai_env
    root = tmp_path / "memory"
    embedder = OpenAIEmbedder()
    memory = Memory(root, embedder=embedder)
    agent = Agent(name="a", model="openai:fake-model", plugins=[memory])
    server.script(
        oai.tool_calls(oai.call("remember", {"fact": "Project codename is Bluebird"})),
        oai.text("Saved."),
        oai.text(
            json.dumps(
                {"facts": [], "stale": [], "summary": "The user named the project Bluebird."}
            )
        ),
    )
    await Runner.run(agent, "Our project codename is Bluebird; remember it.", session_id="s1")
    assert await memory.notes_body() == "- [2026-07] Project codename is Bluebird"

    server.script(
        oai.tool_calls(oai.call("recall", {"query": "project codename"})),
        oai.text("The project was named Bluebird."),
        oai.text("It's Bluebird."),
        oai.text(json.dumps({"facts": [], "stale": [], "summary": ""})),
    )
    result = await Runner.run(agent, "What's the project codename?", session_id="s2")
    assert result.output == "It's Bluebird."

    chats = server.stream_requests()
    assert len(chats) == 7
    digest = chats[2].json
    assert "tools" not in digest and digest["temperature"] == 0
    assert (
        "CONVERSATION:\nUSER: Our project codename is Bluebird" in digest["messages"][-1]["content"]
    )
    host = chats[3].json["messages"][0]["content"]
    assert host.endswith("NOTES [0% — 40/8,000 chars]\n- [2026-07] Project codename is Bluebird")
    recall_answer = chats[5].json["messages"]
    assert any(
        m.get("role") == "tool" and m.get("content") == "The project was named Bluebird."
        for m in recall_answer
    )
    summary_prompt = chats[4].json["messages"][-1]["content"]
    assert "The user named the project Bluebird." in summary_prompt

    embedded = [r.json["input"] for r in server.embedding_requests()]
    assert embedded[0] == [
        "Our project codename is Bluebird; remember it.",
        "Saved.",
        "The user named the project Bluebird.",
    ]
    assert embedded[1] == ["project codename"]  # recall: the semantic arm's query
    assert embedded[2] == ["What's the project codename?", "It's Bluebird."]
    assert all(r.headers["authorization"] == "Bearer test-key" for r in server.embedding_requests())
    await memory.aclose()
    await embedder.aclose()
