"""The notes policy helpers and the file-backed hot tier."""

from __future__ import annotations

import time

import pytest

from lovia.plugins import FileNotesStore, NotesStore
from lovia.plugins.memory import plugin as mp
from lovia.plugins.memory.index import Doc, Hit


@pytest.fixture
def july(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mp, "_current_month", lambda: "2026-07")


# --------------------------------------------------------------------------- helpers


def test_normalize_fact_collapses_whitespace() -> None:
    assert mp._normalize_fact("  a \t b\n c  ") == "a b c"
    assert mp._normalize_fact("   ") == ""


def test_strip_date_only_strips_a_real_leading_stamp() -> None:
    assert mp._strip_date("[2026-07] likes tea") == "likes tea"
    assert mp._strip_date("[2026-07]likes tea") == "likes tea"
    assert mp._strip_date("[199-07] likes tea") == "[199-07] likes tea"
    assert mp._strip_date("likes tea [2026-07]") == "likes tea [2026-07]"


def test_fact_key_ignores_stamp_case_and_spacing() -> None:
    assert mp._fact_key("[2026-07]  Likes   TEA ") == "likes tea"
    assert mp._fact_key("likes tea") == mp._fact_key("[2025-01] Likes tea")
    assert mp._fact_key("[2026-07]") == ""


def test_current_month_format() -> None:
    assert mp._current_month() == time.strftime("%Y-%m")


def test_stamp_uses_current_month_at_call_time(july: None) -> None:
    assert mp._stamp("likes tea") == "[2026-07] likes tea"
    assert mp._stamp("[2024-01] likes tea") == "[2024-01] likes tea"


def test_relocate_stamp() -> None:
    assert mp._relocate_stamp("likes tea [2025-03]") == "[2025-03] likes tea"
    assert mp._relocate_stamp("[2024-01] likes tea [2025-03]") == "[2024-01] likes tea [2025-03]"
    assert mp._relocate_stamp("likes tea") == "likes tea"
    assert mp._relocate_stamp("[2025-03]") == "[2025-03]"


def test_shed_stamps() -> None:
    assert mp._shed_stamps("[2026-07] likes tea [2026-05]") == "likes tea"
    assert mp._shed_stamps("  likes   tea [2026-05]") == "likes tea"
    assert mp._shed_stamps("[2026-07]") == ""
    assert mp._shed_stamps("plain") == "plain"


def test_parse_facts_reads_bullets_only() -> None:
    body = "# Notes\n- one\n  -   two  \nthree\n-\n- \n-four\n\n- [2026-07] five"
    assert mp._parse_facts(body) == ["one", "two", "[2026-07] five"]
    assert mp._parse_facts("") == []


def test_format_facts() -> None:
    assert mp._format_facts(["one", "two"]) == "- one\n- two"
    assert mp._format_facts([]) == ""
    assert mp._parse_facts(mp._format_facts(["a b", "c"])) == ["a b", "c"]


def test_drop_fact_prefers_exact_then_key_then_containment() -> None:
    facts = ["[2026-01] likes tea", "likes tea", "[2026-02] works at ACME in Berlin"]
    assert mp._drop_fact(facts, "likes tea") == ["[2026-01] likes tea", facts[2]]
    assert mp._drop_fact(facts, "LIKES  tea") == ["likes tea", facts[2]]
    assert mp._drop_fact(facts, "works at acme") == facts[:2]
    assert mp._drop_fact(facts, "[2026-09] user works at ACME in Berlin, Germany") == facts[:2]
    assert mp._drop_fact(facts, "nothing like it") == facts
    assert mp._drop_fact(facts, "   ") == facts
    assert mp._drop_fact(facts, "[2026-07]") == facts


def test_drop_fact_returns_new_list_and_removes_one_copy() -> None:
    facts = ["a", "a", "b"]
    out = mp._drop_fact(facts, "a")
    assert out == ["a", "b"]
    assert facts == ["a", "a", "b"]
    assert out is not facts


def test_merge_new_in_place(july: None) -> None:
    facts = ["[2026-01] likes tea"]
    added = mp._merge_new(
        facts, ["Likes  TEA", "  ", "[2025-05] has a cat", "uses vim", "uses  vim"]
    )
    assert added == 2
    assert facts == ["[2026-01] likes tea", "[2025-05] has a cat", "[2026-07] uses vim"]


def test_meter() -> None:
    assert mp._meter(0, 8000) == "[0% — 0/8,000 chars]"
    assert mp._meter(1234, 8000) == "[15% — 1,234/8,000 chars]"
    assert mp._meter(9000, 8000) == "[112% — 9,000/8,000 chars]"
    assert mp._meter(5, 0) == "[0% — 5/0 chars]"


def test_hit_line_uses_local_date() -> None:
    when = time.mktime((2026, 7, 4, 12, 0, 0, 0, 0, -1))
    assert mp._hit_line(Hit(Doc("x", "went hiking", when=when), 1.0)) == "[2026-07-04] went hiking"
    assert mp._hit_line(Hit(Doc("x", "undated"), 0.5)) == "undated"


# --------------------------------------------------------------------------- FileNotesStore


async def test_file_notes_store_round_trip_and_exact_bytes(tmp_path) -> None:
    path = tmp_path / "deep" / "dir" / "MEMORY.md"
    store = FileNotesStore(path)
    assert store._path == path
    assert await store.load() == []
    await store.save(["one", "two"])
    assert path.read_bytes() == b"- one\n- two"
    assert await store.load() == ["one", "two"]
    assert not (path.parent / "MEMORY.md.tmp").exists()
    await store.save([])
    assert path.read_text() == ""
    assert await store.load() == []


async def test_file_notes_store_reads_hand_edited_file(tmp_path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text("My notes\n\n- [2026-01] likes tea\n  - uses vim\n", encoding="utf-8")
    assert await FileNotesStore(path).load() == ["[2026-01] likes tea", "uses vim"]


async def test_file_notes_store_unicode(tmp_path) -> None:
    store = FileNotesStore(tmp_path / "MEMORY.md")
    await store.save(["住在北京", "café — ok"])
    assert await store.load() == ["住在北京", "café — ok"]


def test_file_notes_store_default_path_and_protocol() -> None:
    store = FileNotesStore()
    assert str(store._path).replace("\\", "/") == ".lovia/memory/MEMORY.md"
    assert isinstance(store, NotesStore)
    assert not isinstance(object(), NotesStore)
