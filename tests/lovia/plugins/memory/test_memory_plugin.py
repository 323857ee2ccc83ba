"""The Memory plugin: configuration, tools, instructions, curation, dreaming, locking."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time

import pytest

from lovia import Agent, AgentHooks, Memory, RunContext, Runner, UserError, events
from lovia.plugins import (
    Doc,
    FileNotesStore,
    HybridIndex,
    KeywordIndex,
    VectorIndex,
)
from lovia.plugins.memory import plugin as mp
from lovia.plugins.memory.index import Hit
from lovia.testing import ScriptedProvider, text
from lovia.transcript import (
    AssistantTextEntry,
    InputEntry,
    ReasoningEntry,
    ToolCallEntry,
    ToolResultEntry,
)


class FakeEmbedder:
    id = "fake:1"

    async def embed(self, texts):
        return [[1.0, float(len(t))] for t in texts]


class ListStore:
    """A custom NotesStore in memory that counts saves."""

    def __init__(self, facts=()) -> None:
        self.facts = list(facts)
        self.saves = 0

    async def load(self):
        return list(self.facts)

    async def save(self, facts):
        self.saves += 1
        self.facts = list(facts)


class SpyIndex:
    """A custom Index that records queries and returns fixed hits."""

    def __init__(self, hits=()) -> None:
        self.hits = list(hits)
        self.queries: list[tuple[str, int]] = []
        self.added: list[Doc] = []

    async def add(self, docs):
        self.added.extend(docs)

    async def remove(self, ids):
        pass

    async def search(self, query, k=5):
        self.queries.append((query, k))
        return self.hits[:k]


@pytest.fixture
def july(monkeypatch):
    monkeypatch.setattr(mp, "_current_month", lambda: "2026-07")


@pytest.fixture
def root(tmp_path):
    return tmp_path / "mem"


@pytest.fixture
async def memories():
    made: list[Memory] = []

    def make(*args, **kwargs) -> Memory:
        memory = Memory(*args, **kwargs)
        made.append(memory)
        return memory

    yield make
    for memory in made:
        await memory.aclose()


def ctx_for(model=None, *, session_id="s1", run_id="r1") -> RunContext:
    return RunContext(
        context=None,
        entries=[],
        agent=Agent(name="host", model=model),
        session_id=session_id,
        run_id=run_id,
    )


def tools_of(instance):
    return {t.name: t for t in instance.tools}


def age(path, days: float) -> None:
    old = time.time() - days * 86400
    os.utime(path, (old, old))


# --------------------------------------------------------------------------- configuration


def test_defaults(root) -> None:
    memory = Memory(root)
    assert isinstance(memory.index, KeywordIndex)
    assert memory.index.path == str(root / "archive.db")
    assert memory._should_expand() is True
    assert isinstance(memory._notes_store, FileNotesStore)
    assert memory._notes_store._path == root / "MEMORY.md"
    assert (memory.name, memory.recall_k, memory.notes_budget) == ("memory", 5, 8000)
    assert memory.dream_every_days == 3.0
    assert memory.auto_curate and not memory.curate_in_background
    assert memory.summarize_recall and memory.expand_query == "auto"
    assert memory.model is None
    assert not root.exists()  # nothing is created before it is used


def test_default_root() -> None:
    memory = Memory()
    assert memory._notes_store._path.as_posix() == ".lovia/memory/MEMORY.md"
    assert memory.index.path.replace("\\", "/").endswith(".lovia/memory/archive.db")


def test_embedder_builds_a_hybrid_index(root) -> None:
    memory = Memory(root, embedder=FakeEmbedder())
    assert isinstance(memory.index, HybridIndex)
    assert {type(i) for i in memory.index.indexes} == {KeywordIndex, VectorIndex}
    vector = next(i for i in memory.index.indexes if isinstance(i, VectorIndex))
    assert vector.path == str(root / "vectors.db")
    assert memory._should_expand() is False
    assert Memory(root, embedder=FakeEmbedder(), expand_query=True)._should_expand() is True


def test_index_and_embedder_are_exclusive(root) -> None:
    with pytest.raises(UserError, match="not both"):
        Memory(root, index=KeywordIndex(":memory:"), embedder=FakeEmbedder())
    with pytest.raises(UserError, match="not both"):
        Memory(root, index=None, embedder=FakeEmbedder())


def test_expansion_settings(root) -> None:
    assert Memory(root, index=SpyIndex())._should_expand() is False
    assert Memory(root, index=SpyIndex(), expand_query=True)._should_expand() is True
    assert Memory(root, expand_query=False)._should_expand() is False
    assert Memory(root, index=None)._should_expand() is False
    assert Memory(root, index=None, expand_query=True)._should_expand() is False
    with pytest.raises(UserError):
        Memory(root, expand_query="sometimes")  # type: ignore[arg-type]


def test_custom_notes_store(root) -> None:
    store = ListStore()
    assert Memory(root, notes=store)._notes_store is store


# --------------------------------------------------------------------------- setup


async def test_setup_without_arguments(root, memories) -> None:
    memory = memories(root)
    instance = await memory.setup()
    assert list(tools_of(instance)) == ["remember", "forget", "recall"]
    assert isinstance(instance.hooks, AgentHooks) and instance.hooks
    text_ = instance.instructions
    assert text_.startswith("## Memory\n")
    assert "NOTES" in text_ and "`remember(fact)`" in text_ and "`forget(fact)`" in text_
    assert "`recall(query)`" in text_
    guidance, notes = text_.split("\n\n")
    assert guidance.splitlines()[-1].startswith("Call `remember` immediately")
    assert notes == "NOTES [0% — 0/8,000 chars]\n(empty — use `remember` to save durable facts)"
    await instance.aclose()


async def test_guidance_without_auto_curation(root, memories) -> None:
    instance = await memories(root, auto_curate=False).setup()
    guidance = instance.instructions.split("\n\n")[0]
    assert guidance.splitlines()[-1].startswith("Call `remember` immediately")
    assert "curated automatically" not in guidance


async def test_tool_schemas(root, memories) -> None:
    tools = tools_of(await memories(root).setup())
    for name, param in (("remember", "fact"), ("forget", "fact"), ("recall", "query")):
        schema = tools[name].parameters
        assert schema["type"] == "object"
        assert schema["properties"][param]["type"] == "string"
        assert schema["required"] == [param]
        assert list(schema["properties"]) == [param]


async def test_without_index_there_is_no_recall(root, memories) -> None:
    memory = memories(root, index=None)
    instance = await memory.setup(ctx_for())
    assert list(tools_of(instance)) == ["remember", "forget"]
    assert "recall" not in instance.instructions
    assert "recall" not in instance.instructions.lower()


async def test_notes_block_shows_notes_and_meter(root, memories, july) -> None:
    memory = memories(root, notes_budget=100)
    await memory.remember("likes tea")
    instance = await memory.setup()
    body = "- [2026-07] likes tea"
    assert instance.instructions.endswith(
        f"\n\nNOTES [{round(100 * len(body) / 100)}% — 21/100 chars]\n{body}"
    )


async def test_setup_survives_unreadable_notes(root, memories, caplog) -> None:
    class Broken(ListStore):
        async def load(self):
            raise OSError("disk gone")

    memory = memories(root, notes=Broken())
    with caplog.at_level(logging.WARNING, logger="lovia.plugins.memory"):
        instance = await memory.setup()
    assert "(empty" in instance.instructions
    assert "loading the notes failed" in caplog.text


# --------------------------------------------------------------------------- notes API and tools


async def test_remember_forget_and_tool_texts(root, memories, july) -> None:
    memory = memories(root)
    tools = tools_of(await memory.setup())
    remember, forget = tools["remember"], tools["forget"]
    assert await remember.invoke({"fact": "Likes  tea"}, None) == (
        "Remembered. It will be available in future sessions."
    )
    assert await remember.invoke({"fact": "[2020-01] likes TEA"}, None) == (
        "Already in your notes — nothing to add."
    )
    assert await remember.invoke({"fact": "  "}, None) == "Nothing to remember: the fact is empty."
    assert (root / "MEMORY.md").read_text() == "- [2026-07] Likes tea"
    assert await forget.invoke({"fact": "something else"}, None) == (
        "No matching note found to forget."
    )
    assert await forget.invoke({"fact": "likes tea"}, None) == "Forgotten."
    assert (root / "MEMORY.md").read_text() == ""


async def test_public_note_methods(root, memories, july) -> None:
    memory = memories(root)
    assert await memory.notes_body() == ""
    assert await memory.remember("uses vim") is True
    assert await memory.remember("uses vim") is False
    assert await memory.remember("") is False
    assert await memory.remember("[2025-01] has a cat") is True
    assert await memory.notes_body() == "- [2026-07] uses vim\n- [2025-01] has a cat"
    assert await memory.forget("") is False
    assert await memory.forget("   ") is False
    assert await memory.forget("cat") is True
    assert await memory.forget("cat") is False
    assert await memory.notes_body() == "- [2026-07] uses vim"


async def test_add_facts_counts_new_ones(root, memories, july) -> None:
    memory = memories(root)
    assert await memory._add_facts(["a", "b", "A", ""]) == 2
    assert await memory._add_facts(["b", "c"]) == 1
    assert await memory._notes_store.load() == ["[2026-07] a", "[2026-07] b", "[2026-07] c"]


async def test_replace_notes(root, memories, july) -> None:
    memory = memories(root)
    await memory.remember("old fact")
    body = await memory.replace_notes(
        "intro line\n- new  fact\n- [2024-02] dated fact\n- NEW FACT\n- trailing [2023-03]\n-   \n"
    )
    assert body == "- [2026-07] new fact\n- [2024-02] dated fact\n- [2023-03] trailing"
    assert await memory.notes_body() == body
    assert await memory.replace_notes("") == ""
    assert await memory.notes_body() == ""


async def test_custom_store_is_used(root, memories, july) -> None:
    store = ListStore(["[2026-01] likes tea"])
    memory = memories(root, notes=store)
    assert await memory.remember("has a cat")
    assert store.facts == ["[2026-01] likes tea", "[2026-07] has a cat"]
    assert not (root / "MEMORY.md").exists()


# --------------------------------------------------------------------------- recall


async def test_recall_expands_searches_and_summarizes(root, memories, monkeypatch) -> None:
    seen: dict = {}

    async def expand(query, model):
        seen["expand"] = (query, model)
        return ["turquoise", "青绿色"]

    async def summarize(hits, query, model):
        seen["summarize"] = ([h.doc.id for h in hits], query, model)
        return "You said turquoise on 2026-07-04."

    monkeypatch.setattr(mp, "_expand", expand)
    monkeypatch.setattr(mp, "_summarize", summarize)
    memory = memories(root, model="side-model")
    await memory.index.add([Doc("d1", "my favourite colour is turquoise", when=1.0)])
    recall = tools_of(await memory.setup())["recall"]
    out = await recall.invoke({"query": "favourite hue"}, ctx_for("host-model"))
    assert out == "You said turquoise on 2026-07-04."
    assert seen["expand"] == ("favourite hue", "side-model")
    assert seen["summarize"] == (["d1"], "favourite hue", "side-model")


async def test_recall_uses_the_host_model_without_memory_model(root, memories, monkeypatch):
    models = []

    async def expand(query, model):
        models.append(model)
        return []

    monkeypatch.setattr(mp, "_expand", expand)
    memory = memories(root, summarize_recall=False)
    recall = tools_of(await memory.setup())["recall"]
    assert await recall.invoke({"query": "x"}, ctx_for("host-model")) == (
        "(nothing relevant found in long-term memory)"
    )
    assert models == ["host-model"]


async def test_recall_expansion_failure_searches_raw_query(root, memories, monkeypatch, caplog):
    async def expand(query, model):
        raise RuntimeError("expander down")

    monkeypatch.setattr(mp, "_expand", expand)
    index = SpyIndex([Hit(Doc("a", "alpha", when=0.0), 1.0)])
    memory = memories(root, index=index, expand_query=True, summarize_recall=False)
    recall = tools_of(await memory.setup())["recall"]
    with caplog.at_level(logging.WARNING, logger="lovia.plugins.memory"):
        out = await recall.invoke({"query": "alpha"}, ctx_for("m"))
    assert index.queries == [("alpha", 5)]
    assert out == "- alpha"
    assert "expansion failed" in caplog.text


async def test_recall_without_any_model_still_searches(root, memories, caplog) -> None:
    memory = memories(root)
    await memory.index.add([Doc("a", "alpha beta", when=0.0)])
    recall = tools_of(await memory.setup())["recall"]
    with caplog.at_level(logging.WARNING, logger="lovia.plugins.memory"):
        out = await recall.invoke({"query": "alpha"}, None)
    assert out == "- alpha beta"
    assert "no model to run on" in caplog.text


async def test_recall_raw_format_and_k(root, memories, monkeypatch) -> None:
    when = time.mktime((2026, 3, 1, 9, 0, 0, 0, 0, -1))
    hits = [Hit(Doc("a", "first", when=when), 2.0), Hit(Doc("b", "second"), 1.0)]
    index = SpyIndex(hits)
    memory = memories(root, index=index, summarize_recall=False, recall_k=7)
    recall = tools_of(await memory.setup())["recall"]
    assert await recall.invoke({"query": "q"}, None) == "- [2026-03-01] first\n\n- second"
    assert index.queries == [("q", 7)]  # custom index: no expansion


async def test_recall_summary_failure_or_blank_falls_back(root, memories, monkeypatch) -> None:
    answers = iter([RuntimeError("summarizer down"), "   "])

    async def summarize(hits, query, model):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(mp, "_summarize", summarize)
    memory = memories(root, index=SpyIndex([Hit(Doc("a", "alpha"), 1.0)]), model="m")
    recall = tools_of(await memory.setup())["recall"]
    assert await recall.invoke({"query": "q"}, None) == "- alpha"
    assert await recall.invoke({"query": "q"}, None) == "- alpha"


async def test_recall_blank_query(root, memories, monkeypatch) -> None:
    async def expand(query, model):
        raise AssertionError("not expanded")

    monkeypatch.setattr(mp, "_expand", expand)
    recall = tools_of(await memories(root, model="m").setup())["recall"]
    assert await recall.invoke({"query": "  "}, None) == (
        "(nothing relevant found in long-term memory)"
    )


# --------------------------------------------------------------------------- side queries


async def test_digest_skips_the_model_for_a_blank_conversation() -> None:
    provider = ScriptedProvider([])
    entries = [
        InputEntry("system", "be nice"),
        ToolCallEntry("c1", "t", "{}"),
        ToolResultEntry("c1", "out"),
        InputEntry("user", "   "),
    ]
    digest = await mp._digest(entries, "- [2026-01] x", provider)
    assert digest == mp._RunDigest()
    assert provider.calls == []


async def test_digest_runs_a_structured_side_query() -> None:
    provider = ScriptedProvider(
        [
            text(
                json.dumps(
                    {
                        "facts": ["[2026-07] Prefers  tabs [2026-06]", "[2026-07]", " "],
                        "stale": ["  uses   spaces "],
                        "summary": "  Set up the editor.  ",
                    }
                )
            )
        ]
    )
    entries = [
        InputEntry("system", "SYSTEM TEXT"),
        InputEntry("user", "I prefer tabs now"),
        ReasoningEntry("thinking"),
        ToolCallEntry("c1", "lookup", "{}"),
        ToolResultEntry("c1", "TOOL OUTPUT"),
        AssistantTextEntry("Noted, tabs it is."),
    ]
    digest = await mp._digest(entries, "- [2026-01] uses spaces", provider)
    assert digest == mp._RunDigest(
        facts=["Prefers tabs"], stale=["uses spaces"], summary="Set up the editor."
    )
    (prompt,) = provider.calls
    system, user = prompt[0].content, prompt[-1].content
    assert "durable" in system
    assert "- [2026-01] uses spaces" in user
    assert "USER: I prefer tabs now\nASSISTANT: Noted, tabs it is." in user
    assert "TOOL OUTPUT" not in user and "SYSTEM TEXT" not in user and "thinking" not in user
    assert provider.requests[0]["tools"] is None


async def test_long_conversations_are_bounded() -> None:
    entries = [InputEntry("user", f"message {i} " + "x" * 5000) for i in range(40)]
    rendered = mp._render_conversation(entries)
    assert len(rendered) <= mp._MAX_CONVERSATION_CHARS + 200
    assert rendered.startswith("USER: message 0 ")
    assert "USER: message 39 " in rendered
    assert "messages left out" in rendered


async def test_dream_side_query_parses_bullets() -> None:
    provider = ScriptedProvider([text("Here you go:\n- [2026-01] a\n- b [2025-02]\n\n- ")])
    assert await mp._dream("- [2026-01] a\n- [2026-01] a", 500, provider) == [
        "[2026-01] a",
        "b [2025-02]",
    ]
    system = provider.calls[0][0].content
    assert "500 characters" in system


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('["[2026-01] a", " b "]', ["[2026-01] a", "b"]),
        ('```json\n{"facts": ["[2026-01] a"]}\n```', ["[2026-01] a"]),
        ("[2026-01] a\n[2026-02] b", ["[2026-01] a", "[2026-02] b"]),
        ("1. [2026-01] a\n2. [2026-02] b", ["[2026-01] a", "[2026-02] b"]),
        ("", []),
    ],
)
async def test_dream_accepts_other_answer_shapes(answer, expected) -> None:
    assert await mp._dream("- a", 100, ScriptedProvider([text(answer)])) == expected


async def test_expand_side_query_accepts_json() -> None:
    provider = ScriptedProvider([text('["colour", "color", "颜色"]')])
    assert await mp._expand("favourite colour", provider) == ["colour", "color", "颜色"]
    provider = ScriptedProvider([text('{"terms": ["hue"]}')])
    assert await mp._expand("colour", provider) == ["hue"]


async def test_expand_side_query_parses_terms() -> None:
    provider = ScriptedProvider([text("1. colour\n- color\n* 颜色\n\nFavourite colour\ncolor")])
    assert await mp._expand("favourite colour", provider) == ["colour", "color", "颜色"]
    provider = ScriptedProvider([text("a, b, c")])
    assert await mp._expand("q", provider) == ["a", "b", "c"]
    provider = ScriptedProvider([text("\n".join(f"t{i}" for i in range(15)))])
    assert len(await mp._expand("q", provider)) == 10


async def test_summarize_side_query_sees_dated_excerpts() -> None:
    when = time.mktime((2026, 5, 2, 10, 0, 0, 0, 0, -1))
    provider = ScriptedProvider([text(" It was Tuesday. ")])
    hits = [Hit(Doc("a", "we met on Tuesday", when=when), 1.0)]
    assert await mp._summarize(hits, "when did we meet?", provider) == "It was Tuesday."
    user = provider.calls[0][-1].content
    assert "when did we meet?" in user and "- [2026-05-02] we met on Tuesday" in user


def test_model_resolution(root) -> None:
    memory = Memory(root)
    with pytest.raises(UserError, match="Memory has no model to run on"):
        memory._model_for(None)
    with pytest.raises(UserError, match="Memory has no model to run on"):
        memory._model_for(ctx_for(None))
    assert memory._model_for(ctx_for("host")) == "host"
    assert Memory(root, model="own")._model_for(ctx_for("host")) == "own"


# --------------------------------------------------------------------------- run documents


def test_run_docs(root) -> None:
    memory = Memory(root, index=None)
    entries = [
        InputEntry("system", "sys"),
        InputEntry("user", "hello"),
        ReasoningEntry("hmm"),
        ToolCallEntry("c1", "t", "{}"),
        ToolResultEntry("c1", "result"),
        AssistantTextEntry("  "),
        AssistantTextEntry("hi there"),
    ]
    before = time.time()
    docs = memory._run_docs(entries, ctx_for(), mp._RunDigest(summary=" An episode. "))
    assert [(d.id, d.text) for d in docs] == [
        ("r1:0", "hello"),
        ("r1:1", "hi there"),
        ("r1:summary", "An episode."),
    ]
    assert all(d.when >= before for d in docs)
    assert docs[0].meta == {"run_id": "r1", "session_id": "s1", "kind": "message"}
    assert docs[-1].meta == {"run_id": "r1", "session_id": "s1", "kind": "summary"}
    again = memory._run_docs(entries, ctx_for(), mp._RunDigest())
    assert [d.id for d in again] == ["r1:0", "r1:1"]  # deterministic ids, no blank summary


def test_run_docs_without_ids(root) -> None:
    memory = Memory(root, index=None)
    docs = memory._run_docs([InputEntry("user", "x")], ctx_for(session_id=None, run_id=None), None)
    (doc,) = docs
    run_id = doc.meta["run_id"]
    assert len(run_id) == 32 and doc.id == f"{run_id}:0"
    assert doc.meta == {"run_id": run_id, "kind": "message"}
    assert len(memory._run_docs([InputEntry("user", "x")], None, None)) == 1


# --------------------------------------------------------------------------- curation


async def test_curate_applies_digest_and_archives(root, memories, monkeypatch, july) -> None:
    async def digest(entries, current, model):
        assert model == "host"
        assert current == "- [2026-01] uses spaces"
        return mp._RunDigest(facts=["prefers tabs"], stale=["uses spaces"], summary="Tabs talk.")

    monkeypatch.setattr(mp, "_digest", digest)
    store = ListStore(["[2026-01] uses spaces"])
    memory = memories(root, notes=store)
    entries = [InputEntry("user", "tabs please"), AssistantTextEntry("ok")]
    await memory._curate(memory.index, entries, ctx_for("host", session_id="sess"))
    assert store.facts == ["[2026-07] prefers tabs"]
    assert store.saves == 1
    docs = {h.doc.id: h.doc for h in await memory.index.search("tabs", 10)}
    assert set(docs) == {"r1:0", "r1:summary"}
    assert docs["r1:summary"].meta["session_id"] == "sess"
    assert docs["r1:summary"].meta["kind"] == "summary"


async def test_messages_are_archived_without_auto_curate(root, memories, monkeypatch) -> None:
    async def digest(*args):
        raise AssertionError("no digest without auto_curate")

    monkeypatch.setattr(mp, "_digest", digest)
    memory = memories(root, auto_curate=False)
    await memory._curate(memory.index, [InputEntry("user", "archived anyway")], ctx_for())
    assert [h.doc.id for h in await memory.index.search("archived")] == ["r1:0"]


async def test_messages_are_archived_when_the_digest_fails(root, memories, monkeypatch, caplog):
    async def digest(*args):
        raise RuntimeError("model down")

    monkeypatch.setattr(mp, "_digest", digest)
    memory = memories(root)
    with caplog.at_level(logging.WARNING, logger="lovia.plugins.memory"):
        await memory._curate(memory.index, [InputEntry("user", "still archived")], ctx_for("m"))
    assert [h.doc.id for h in await memory.index.search("archived")] == ["r1:0"]
    assert "digest failed" in caplog.text
    assert await memory.notes_body() == ""


async def test_curate_never_raises(root, memories, monkeypatch, caplog) -> None:
    class BrokenIndex(SpyIndex):
        async def add(self, docs):
            raise RuntimeError("archive down")

    class BrokenStore(ListStore):
        async def save(self, facts):
            raise OSError("read-only")

    async def digest(*args):
        return mp._RunDigest(facts=["x"])

    async def dream_if_due(ctx):
        raise RuntimeError("dream down")

    monkeypatch.setattr(mp, "_digest", digest)
    memory = memories(root, index=BrokenIndex(), notes=BrokenStore())
    monkeypatch.setattr(memory, "_dream_if_due", dream_if_due)
    with caplog.at_level(logging.WARNING, logger="lovia.plugins.memory"):
        await memory._curate(memory.index, [InputEntry("user", "x")], ctx_for("m"))
    for words in ("archiving the run failed", "updating the notes failed", "the dream failed"):
        assert words in caplog.text


async def test_apply_digest_drops_one_copy_and_saves_once(root, memories, july) -> None:
    store = ListStore(["[2026-01] a", "[2026-01] a", "[2026-02] b"])
    memory = memories(root, notes=store)
    result = await memory._apply_digest(mp._RunDigest(facts=["c", "b"], stale=["a", "zzz"]))
    assert result == (1, 1)
    assert store.facts == ["[2026-01] a", "[2026-02] b", "[2026-07] c"]
    assert store.saves == 1
    assert await memory._apply_digest(mp._RunDigest(facts=["c"])) == (0, 0)
    assert store.saves == 1


async def test_hook_fires_once_per_setup(root, memories, monkeypatch) -> None:
    memory = memories(root)
    calls = []

    async def curate(index, entries, ctx):
        calls.append(list(entries))

    monkeypatch.setattr(memory, "_curate", curate)
    instance = await memory.setup()
    from lovia import Usage
    from lovia.runtime.result import RunResult

    result = RunResult(
        output="x",
        entries=[InputEntry("user", "hi")],
        final_agent=Agent(name="a"),
        usage=Usage(),
        turns=1,
    )
    event = events.RunCompleted(result)
    await instance.hooks.dispatch(event, ctx_for())
    await instance.hooks.dispatch(event, ctx_for())
    assert calls == [[InputEntry("user", "hi")]]
    second = await memory.setup()
    await second.hooks.dispatch(event, ctx_for())
    assert len(calls) == 2


async def test_background_curation_and_drain(root, memories, monkeypatch) -> None:
    gate = asyncio.Event()

    async def digest(entries, current, model):
        await gate.wait()
        return mp._RunDigest(facts=["learned in the background"])

    monkeypatch.setattr(mp, "_digest", digest)
    memory = memories(root, curate_in_background=True)
    agent = Agent(name="a", model=ScriptedProvider([text("hello")]), plugins=[memory])
    result = await Runner.run(agent, "hi")
    assert result.output == "hello"
    assert len(memory._curation_tasks) == 1
    assert await memory.notes_body() == ""
    gate.set()
    await memory.drain()
    assert memory._curation_tasks == set()
    assert "learned in the background" in await memory.notes_body()
    assert len(await memory.index.search("hello")) == 1


# --------------------------------------------------------------------------- dreaming


async def test_dream_needs_a_model(root, memories) -> None:
    with pytest.raises(UserError, match=r"Memory\.dream\(\) has no model to run on"):
        await memories(root).dream()


async def test_dream_rewrites_with_backup_and_marker(root, memories, monkeypatch, july) -> None:
    seen = {}

    async def dream(body, max_chars, model):
        seen.update(body=body, max_chars=max_chars, model=model)
        return ["  merged   fact [2026-05] ", "[2026-06] kept", "[2026-06] KEPT", ""]

    monkeypatch.setattr(mp, "_dream", dream)
    memory = memories(root, notes_budget=1234, model="own-model")
    await memory.replace_notes("- [2026-01] a\n- [2026-02] b\n- [2026-06] kept")
    old = await memory.notes_body()
    assert memory.dreamed_at() is None
    assert await memory.dream() == (3, 2)
    assert seen == {"body": old, "max_chars": 1234, "model": "own-model"}
    assert await memory.notes_body() == "- [2026-05] merged fact\n- [2026-06] kept"
    assert (root / "MEMORY.md.bak").read_text() == old
    assert (root / ".dreamed").exists()
    assert memory.dreamed_at() == pytest.approx(time.time(), abs=5)
    await memory.dream(model="arg-model")
    assert seen["model"] == "arg-model"


async def test_dream_with_empty_notes_skips_the_model(root, memories, monkeypatch) -> None:
    async def dream(*args):
        raise AssertionError("no model call")

    monkeypatch.setattr(mp, "_dream", dream)
    memory = memories(root)
    assert await memory.dream(model="m") == (0, 0)
    assert (root / ".dreamed").exists()
    assert not (root / "MEMORY.md.bak").exists()


async def test_empty_rewrite_keeps_the_notes(root, memories, monkeypatch) -> None:
    async def dream(*args):
        return []

    monkeypatch.setattr(mp, "_dream", dream)
    memory = memories(root)
    await memory.replace_notes("- [2026-01] a\n- [2026-01] b")
    assert await memory.dream(model="m") == (2, 2)
    assert await memory.notes_body() == "- [2026-01] a\n- [2026-01] b"
    assert not (root / "MEMORY.md.bak").exists()


async def test_dream_through_a_scripted_model(root, memories) -> None:
    provider = ScriptedProvider([text("- [2026-01] likes tea and coffee\n- has a cat [2025-12]")])
    memory = memories(root)
    await memory.replace_notes("- [2026-01] likes tea\n- [2026-01] likes coffee\n- [2025-12] cat")
    assert await memory.dream(model=provider) == (3, 2)
    assert await memory.notes_body() == ("- [2026-01] likes tea and coffee\n- [2025-12] has a cat")
    assert "- [2026-01] likes coffee" in provider.calls[0][-1].content


async def test_remember_during_a_dream_is_not_lost(root, memories, monkeypatch, july) -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def dream(body, max_chars, model):
        started.set()
        await release.wait()
        return ["[2026-01] rewritten"]

    monkeypatch.setattr(mp, "_dream", dream)
    memory = memories(root)
    await memory.replace_notes("- [2026-01] one\n- [2026-01] two")
    dreaming = asyncio.create_task(memory.dream(model="m"))
    await started.wait()
    remembering = asyncio.create_task(memory.remember("said during the dream"))
    await asyncio.sleep(0.05)
    assert not remembering.done()  # waits for the dream's lock
    release.set()
    assert await dreaming == (2, 1)
    assert await remembering is True
    assert await memory.notes_body() == ("- [2026-01] rewritten\n- [2026-07] said during the dream")


async def test_first_cadence_check_only_creates_the_marker(root, memories, monkeypatch):
    async def dream(*args):
        raise AssertionError("not due")

    monkeypatch.setattr(mp, "_dream", dream)
    memory = memories(root)
    await memory.remember("a fact")
    assert await memory._dream_if_due(ctx_for("m")) is None
    assert (root / ".dreamed").exists()
    assert await memory._dream_if_due(ctx_for("m")) is None  # young marker


async def test_cadence_is_due_when_old_and_notes_changed(root, memories, monkeypatch) -> None:
    calls = []

    async def dream(body, max_chars, model):
        calls.append(model)
        return ["[2026-01] tidy"]

    monkeypatch.setattr(mp, "_dream", dream)
    memory = memories(root, dream_every_days=2)
    await memory.remember("a fact")
    memory._touch_marker()
    marker, notes = root / ".dreamed", root / "MEMORY.md"
    age(marker, 3)
    age(notes, 4)  # not changed since the marker
    assert await memory._dream_if_due(ctx_for("m")) is None
    age(notes, 1)
    assert await memory._dream_if_due(ctx_for("m")) == (1, 1)
    assert calls == ["m"]
    assert time.time() - marker.stat().st_mtime < 60
    age(marker, 1)
    await memory.remember("another")
    assert await memory._dream_if_due(ctx_for("m")) is None  # marker younger than 2 days


async def test_cadence_with_a_custom_store_is_always_due(root, memories, monkeypatch) -> None:
    async def dream(body, max_chars, model):
        return ["[2026-01] tidy"]

    monkeypatch.setattr(mp, "_dream", dream)
    memory = memories(root, notes=ListStore(["[2026-01] a"]))
    memory._touch_marker()
    age(root / ".dreamed", 10)
    assert await memory._dream_if_due(ctx_for("m")) == (1, 1)


async def test_no_cadence_but_overflow_still_dreams(root, memories, monkeypatch) -> None:
    async def dream(body, max_chars, model):
        return ["[2026-01] short"]

    monkeypatch.setattr(mp, "_dream", dream)
    memory = memories(root, dream_every_days=None, notes_budget=30)
    await memory.remember("short")
    assert await memory._dream_if_due(ctx_for("m")) is None
    assert not (root / ".dreamed").exists()
    await memory.remember("a much longer fact that overflows the budget")
    assert await memory._dream_if_due(ctx_for("m")) == (2, 1)
    assert (root / "MEMORY.md.bak").exists()


async def test_touch_marker_and_dreamed_at(root, memories) -> None:
    memory = memories(root)
    assert memory.dreamed_at() is None
    memory._touch_marker()
    first = memory.dreamed_at()
    assert first == (root / ".dreamed").stat().st_mtime
    age(root / ".dreamed", 1)
    memory._touch_marker()
    assert memory.dreamed_at() > first - 3600


# --------------------------------------------------------------------------- lifecycle


async def test_runs_close_the_default_archive(root, memories) -> None:
    memory = memories(root, auto_curate=False)
    agent = Agent(name="a", model=ScriptedProvider([text("hi")]), plugins=[memory])
    await Runner.run(agent, "hello")
    assert memory._active_runs == 0
    assert memory.index._conn is None
    assert (root / "archive.db").exists()
    assert [h.doc.id for h in await memory.index.search("hello")]  # reopens on demand


async def test_a_passed_index_is_never_closed(root, memories) -> None:
    index = KeywordIndex(":memory:")
    memory = memories(root, index=index, auto_curate=False)
    agent = Agent(name="a", model=ScriptedProvider([text("hi")]), plugins=[memory])
    await Runner.run(agent, "hello")
    assert index._conn is not None
    assert [h.doc.text for h in await index.search("hello")] == ["hello"]
    await index.aclose()
