import hashlib
import logging
import os
import urllib.parse

import pytest
from context_helpers import asst, call, out, request, system, user

from lovia.context import (
    REQUIRED_SECTIONS,
    SUMMARY_SYSTEM_PROMPT,
    FileResultStore,
    InMemoryResultStore,
    LLMSummarizer,
    ResultStore,
    Summarizer,
    transcript_to_text,
)
from lovia.context.prompts import SUMMARY_FIRST_TEMPLATE, SUMMARY_FOLD_TEMPLATE
from lovia.messages import AssistantTurn, Usage
from lovia.parts import ImagePart, TextPart
from lovia.testing import ScriptedProvider, text
from lovia.transcript import AssistantTextEntry, InputEntry, ReasoningEntry

FULL = "\n".join(f"{h}\n- item" for h in REQUIRED_SECTIONS)

# --------------------------------------------------------------------------- prompts


def test_prompts_cover_the_required_sections():
    assert REQUIRED_SECTIONS == (
        "## Session intent",
        "## Current state",
        "## Key facts & decisions",
        "## Artifacts",
        "## Constraints & preferences",
        "## Next steps",
    )
    for heading in REQUIRED_SECTIONS:
        assert heading in SUMMARY_SYSTEM_PROMPT
    assert "recall_tool_result" in SUMMARY_SYSTEM_PROMPT
    first = SUMMARY_FIRST_TEMPLATE.format(events="EVENTS")
    assert "<transcript>\nEVENTS\n</transcript>" in first
    fold = SUMMARY_FOLD_TEMPLATE.format(prior="PRIOR", events="EVENTS")
    assert "<current_summary>\nPRIOR\n</current_summary>" in fold
    assert "<new_events>\nEVENTS\n</new_events>" in fold


def test_transcript_to_text():
    entries = [
        system("be brief"),
        InputEntry(role="user", content=[TextPart("look "), ImagePart(url="http://x/y.png")]),
        ReasoningEntry("hidden"),
        asst("sure"),
        call("c1", "fetch", '{"u":1}'),
        out("c1", "body"),
    ]
    assert transcript_to_text(entries) == (
        "[system] be brief\n[user] look [image]\n[assistant] sure\n"
        '[tool_call:fetch] {"u":1}\n[tool_result] body'
    )
    assert transcript_to_text([]) == ""


# --------------------------------------------------------------------------- LLMSummarizer


class Recording(ScriptedProvider):
    def __init__(self, script):
        super().__init__(script)
        self.settings = []

    async def stream(self, entries, *, tools=None, response_format=None, settings=None):
        self.settings.append(settings)
        async for d in super().stream(entries, tools=tools, settings=settings):
            yield d


async def test_llm_summarizer_first_and_fold_prompts():
    provider = Recording([text(FULL), text(FULL)])
    s = LLMSummarizer()
    assert isinstance(s, Summarizer)
    entries = [user("fix the bug"), asst("on it")]
    assert await s.summarize(entries, req=request([], provider=provider)) == FULL
    [sys_e, ask] = provider._views[0]
    assert sys_e == InputEntry(role="system", content=SUMMARY_SYSTEM_PROMPT)
    assert ask.role == "user" and "[user] fix the bug\n[assistant] on it" in ask.content
    assert "<transcript>" in ask.content
    assert provider.settings[0].temperature == 0
    await s.summarize(entries, req=request([], provider=provider), prior_summary="OLD")
    fold = provider._views[1][1].content
    assert "<current_summary>\nOLD\n</current_summary>" in fold and "<new_events>" in fold


async def test_llm_summarizer_prefers_its_own_provider():
    own = ScriptedProvider([text(FULL)])
    run = ScriptedProvider([])
    s = LLMSummarizer(own, prompt="P", required_sections=None)
    await s.summarize([user("x")], req=request([], provider=run))
    assert own._views[0][0].content == "P" and run._views == []


async def test_llm_summarizer_retries_once_for_missing_sections(caplog):
    partial = "## Session intent\n- x"
    provider = ScriptedProvider([text(partial), text(FULL)])
    s = LLMSummarizer()
    assert s._missing_sections(partial) == list(REQUIRED_SECTIONS[1:])
    assert s._missing_sections(FULL.upper()) == []
    assert await s.summarize([user("x")], req=request([], provider=provider)) == FULL
    retry = provider._views[1]
    assert isinstance(retry[2], AssistantTextEntry) and retry[2].content == partial
    assert ", ".join(REQUIRED_SECTIONS[1:]) in retry[3].content
    provider = ScriptedProvider([text(partial), text(partial)])
    with caplog.at_level(logging.WARNING, "lovia.context.summarizer"):
        assert await s.summarize([user("x")], req=request([], provider=provider)) == partial
    assert "summary.sections_missing" in caplog.text
    assert LLMSummarizer(required_sections=None)._missing_sections("") == []


async def test_llm_summarizer_errors():
    with pytest.raises(ValueError, match="LLMSummarizer requires a provider"):
        await LLMSummarizer().summarize([user("x")], req=request([]))
    truncated = AssistantTurn(content=FULL, usage=Usage(1, 1), finish_reason="length")
    with pytest.raises(ValueError, match="truncated"):
        await LLMSummarizer().summarize(
            [user("x")], req=request([], provider=ScriptedProvider([truncated]))
        )
    with pytest.raises(ValueError, match="empty text"):
        await LLMSummarizer().summarize(
            [user("x")], req=request([], provider=ScriptedProvider([text("  \n ")]))
        )


# --------------------------------------------------------------------------- stores


async def test_in_memory_store_is_an_lru():
    store = InMemoryResultStore(max_entries=2)
    assert isinstance(store, ResultStore) and store._max == 2
    await store.put("a", "1")
    await store.put("b", "2")
    assert await store.get("a") == "1"  # refreshes "a"
    await store.put("c", "3")
    assert await store.get("b") is None
    assert (await store.get("a"), await store.get("c")) == ("1", "3")
    await store.put("a", "new")
    assert await store.get("a") == "new"
    with pytest.raises(ValueError, match="max_entries"):
        InMemoryResultStore(max_entries=0)
    unbounded = InMemoryResultStore(max_entries=None)
    for i in range(2000):
        await unbounded.put(str(i), "x")
    assert len(unbounded) == 2000


async def test_file_store_round_trip_and_names(tmp_path):
    root = tmp_path / "results"
    store = FileResultStore(root)
    assert isinstance(store, ResultStore)
    assert await store.get("missing") is None
    keys = ["", "_", "a/b", "k" * 500, "中文", "0123456789abcdef"]
    for i, key in enumerate(keys):
        await store.put(key, f"content {i}\r\n中")
    for i, key in enumerate(keys):
        assert await store.get(key) == f"content {i}\r\n中"
    names = sorted(os.listdir(root))
    assert len(names) == len(keys) and not any(n.endswith(".tmp") for n in names)
    key = "a/b"
    expected = (
        f"{urllib.parse.quote(key, safe='')[:80]}-{hashlib.sha1(key.encode()).hexdigest()[:16]}.txt"
    )
    assert store._path(key) == root / expected
    assert len(store._path("k" * 500).name) <= 80 + 1 + 16 + 4
    await store.put(key, "overwritten")
    assert await store.get(key) == "overwritten"


async def test_file_store_failed_write_cleans_up(tmp_path, monkeypatch):
    store = FileResultStore(tmp_path)

    def boom(src, dst):
        raise OSError("replace failed")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="replace failed"):
        await store.put("k", "v")
    assert os.listdir(tmp_path) == []
