"""The cold tier: terms, KeywordIndex (FTS5 and the LIKE fallback) and HybridIndex."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3

import pytest

from lovia import SQLiteSession
from lovia.plugins import Doc, Fusable, Hit, HybridIndex, Index, KeywordIndex
from lovia.plugins.memory import index as ix
from lovia.transcript import InputEntry


@pytest.fixture(params=["fts", "like"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test against both backends (``_fts5_available`` is read at construction)."""
    if request.param == "like":
        monkeypatch.setattr(ix, "_fts5_available", lambda: False)
    return str(request.param)


@pytest.fixture
async def make_index():
    """``make_index(path=":memory:")`` builds a KeywordIndex that is closed after the test."""
    made: list[KeywordIndex] = []

    def make(path=":memory:") -> KeywordIndex:
        index = KeywordIndex(path)
        made.append(index)
        return index

    yield make
    for index in made:
        await index.aclose()


def like_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ix, "_fts5_available", lambda: False)


def ids(hits: list[Hit]) -> list[str]:
    return [h.doc.id for h in hits]


# --------------------------------------------------------------------------- terms


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("北京出差", ["北京", "京出", "出差"]),
        ("我爱python", ["我爱", "python"]),
        ("café Müller", ["café", "müller"]),
        ("!!! ... ???", []),
        ("", []),
        ("北", ["北"]),
        ("Hello, World-42 foo_bar", ["hello", "world", "42", "foo_bar"]),
        ("東京タワー", ["東京", "京タ", "タワ", "ワー"]),
        ("서울 여행", ["서울", "여행"]),
        ("ジョン・スミス", ["ジョ", "ョン", "スミ", "ミス"]),
        ("上海。北京", ["上海", "北京"]),
    ],
)
def test_terms(text: str, expected: list[str]) -> None:
    assert ix._terms(text) == expected


# --------------------------------------------------------------------------- KeywordIndex


def test_fts5_probe_matches_this_python() -> None:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
        expected = True
    except sqlite3.Error:
        expected = False
    finally:
        conn.close()
    assert ix._fts5_available() is expected
    assert KeywordIndex(":memory:")._use_fts is expected


async def test_keyword_add_search_upsert_remove(make_index, tmp_path, mode: str) -> None:
    index = make_index(tmp_path / "sub" / "archive.db")
    assert index._use_fts is (mode == "fts")
    assert isinstance(index, Index)
    assert isinstance(index, Fusable)
    await index.add(
        [
            Doc("a", "The deploy script lives in ops/deploy.sh", when=100.0, meta={"k": "v"}),
            Doc("b", "Lunch was pizza", when=200.0),
            Doc("c", "Deploy happens on Fridays", when=300.0),
        ]
    )
    assert (tmp_path / "sub" / "archive.db").exists()
    hits = await index.search("deploy")
    assert set(ids(hits)) == {"a", "c"}
    first = next(h for h in hits if h.doc.id == "a")
    assert first.doc == Doc("a", "The deploy script lives in ops/deploy.sh", 100.0, {"k": "v"})
    if mode == "like":
        assert ids(hits) == ["c", "a"]  # newest first
        assert all(h.score == 0.0 for h in hits)
    else:
        assert all(h.score > 0 for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    await index.add([Doc("a", "Now about tea", when=400.0)])  # upsert by id
    assert ids(await index.search("deploy")) == ["c"]
    assert ids(await index.search("tea")) == ["a"]
    assert await index.count() == 3

    await index.remove(["c", "missing"])
    assert await index.search("deploy") == []
    assert await index.count() == 2
    await index.aclose()


async def test_keyword_persists_across_instances(tmp_path, mode: str) -> None:
    path = tmp_path / "archive.db"
    async with KeywordIndex(path) as first:
        await first.add([Doc("x", "remember the alamo", when=1.0, meta={"run_id": "r1"})])
    async with KeywordIndex(path) as second:
        hits = await second.search("alamo")
    assert ids(hits) == ["x"]
    assert hits[0].doc.meta == {"run_id": "r1"}


async def test_keyword_memory_path_and_limits(make_index, mode: str) -> None:
    index = make_index(":memory:")
    assert await index.search("anything") == []
    await index.add([Doc(str(i), f"note number {i} about cats", when=float(i)) for i in range(10)])
    assert len(await index.search("cats", k=3)) == 3
    assert await index.search("cats", k=0) == []
    assert await index.search("cats", k=-1) == []
    assert await index.search("?!. ,") == []
    assert await index.search("") == []
    await index.add([])
    await index.remove([])
    assert await index.count() == 10


async def test_keyword_or_semantics(make_index, mode: str) -> None:
    index = make_index(":memory:")
    await index.add([Doc("1", "apples and pears"), Doc("2", "bananas"), Doc("3", "cherries")])
    assert set(ids(await index.search("pears bananas kiwis"))) == {"1", "2"}


async def test_keyword_cjk_bigram_queries(make_index, mode: str) -> None:
    index = make_index(":memory:")
    await index.add(
        [
            Doc("trip", "下周去北京出差，住在朝阳区", when=2.0),
            Doc("food", "我爱python和咖啡", when=1.0),
            Doc("jp", "東京タワーに行きました", when=3.0),
        ]
    )
    assert ids(await index.search("北京")) == ["trip"]
    assert ids(await index.search("北京出差的酒店")) == ["trip"]
    assert ids(await index.search("Python")) == ["food"]
    assert ids(await index.search("東京タワー")) == ["jp"]
    assert await index.search("上海") == []


async def test_keyword_finds_inflected_english(make_index, mode: str) -> None:
    index = make_index(":memory:")
    await index.add([Doc("d", "Deploys run on Fridays"), Doc("o", "something else")])
    assert ids(await index.search("deploy friday")) == ["d"]


async def test_keyword_matching_is_case_and_accent_tolerant(make_index, mode: str) -> None:
    index = make_index(":memory:")
    await index.add([Doc("m", "Meeting with Herr MÜLLER at the Café")])
    assert ids(await index.search("müller")) == ["m"]
    assert ids(await index.search("CAFÉ")) == ["m"]


async def test_like_fallback_takes_underscore_and_percent_literally(
    make_index, monkeypatch
) -> None:
    like_only(monkeypatch)
    index = make_index(":memory:")
    assert index._use_fts is False
    await index.add(
        [
            Doc("under", "call get_user please", when=1.0),
            Doc("plain", "call getxuser please", when=2.0),
            Doc("pct", "progress 100 done", when=3.0),
        ]
    )
    assert ids(await index.search("t_u")) == ["under"]
    assert ids(await index.search("get_user")) == ["under"]
    assert ids(await index.search("getxuser")) == ["plain"]
    assert ids(await index.search("100%")) == ["pct"]
    assert ids(await index.search("please")) == ["plain", "under"]


def test_like_escaping() -> None:
    assert ix._escape_like("a_b") == "a\\_b"
    assert ix._escape_like("a\\b") == "a\\\\b"
    assert ix._escape_like("50%") == "50\\%"


async def test_fts_index_is_rebuilt_for_docs_written_without_fts(tmp_path, monkeypatch) -> None:
    path = tmp_path / "archive.db"
    if not ix._probe_fts5():
        pytest.skip("this SQLite has no FTS5")
    like_only(monkeypatch)
    async with KeywordIndex(path) as plain:
        await plain.add([Doc("old", "written by a build without fts")])
    monkeypatch.setattr(ix, "_fts5_available", ix._probe_fts5)
    async with KeywordIndex(path) as fts:
        assert fts._use_fts
        assert ids(await fts.search("build")) == ["old"]
        await fts.add([Doc("new", "another build")])
    like_only(monkeypatch)
    async with KeywordIndex(path) as plain:  # writes mark the full-text index stale
        await plain.remove(["old"])
        await plain.add([Doc("newer", "third build")])
    monkeypatch.setattr(ix, "_fts5_available", ix._probe_fts5)
    async with KeywordIndex(path) as fts:
        assert sorted(ids(await fts.search("build"))) == ["new", "newer"]


async def test_keyword_index_shares_a_file_with_a_session(tmp_path) -> None:
    path = tmp_path / "state.db"
    async with SQLiteSession(path) as session, KeywordIndex(path) as index:
        await session.append("s", [InputEntry("user", "hi")], run_id="r")
        await index.add([Doc("d", "shared file works")])
        assert ids(await index.search("shared")) == ["d"]
        assert len(await session.segments("s")) == 1
    rows = sqlite3.connect(path).execute("SELECT component FROM lovia_schema").fetchall()
    assert {r[0] for r in rows} >= {"session", "memory_keyword"}


async def test_keyword_meta_stored_as_json(tmp_path) -> None:
    path = tmp_path / "a.db"
    async with KeywordIndex(path) as index:
        await index.add([Doc("d", "text", meta={"run_id": "r1", "kind": "message"})])
    raw = sqlite3.connect(path).execute("SELECT meta FROM memory_docs").fetchone()[0]
    assert json.loads(raw) == {"run_id": "r1", "kind": "message"}


async def test_keyword_concurrent_writers(make_index, tmp_path) -> None:
    index = make_index(tmp_path / "a.db")
    await asyncio.gather(
        *(index.add([Doc(f"d{i}", f"concurrent doc {i}")]) for i in range(20)),
        *(index.search("concurrent") for _ in range(5)),
    )
    assert await index.count() == 20
    assert len(await index.search("concurrent", k=50)) == 20
    await index.aclose()


# --------------------------------------------------------------------------- HybridIndex


class ListIndex(Fusable):
    """An in-memory arm returning fixed results (records calls)."""

    def __init__(self, *doc_ids: str, fail: bool = False) -> None:
        self.docs = [Doc(i, f"text {i}") for i in doc_ids]
        self.fail = fail
        self.added: list[list[Doc]] = []
        self.removed: list[list[str]] = []
        self.asked: list[tuple[str, int]] = []

    def __repr__(self) -> str:
        return f"ListIndex{tuple(d.id for d in self.docs)}"

    async def add(self, docs):
        await asyncio.sleep(0)
        if self.fail:
            raise RuntimeError("add broke")
        self.added.append(list(docs))

    async def remove(self, ids):
        await asyncio.sleep(0)
        if self.fail:
            raise RuntimeError("remove broke")
        self.removed.append(list(ids))

    async def search(self, query, k=5):
        self.asked.append((query, k))
        if self.fail:
            raise RuntimeError("search broke")
        return [Hit(d, 100.0 - n) for n, d in enumerate(self.docs[:k])]


async def test_rrf_scores_are_exact() -> None:
    hybrid = ListIndex("A", "B") | ListIndex("B", "C")
    assert isinstance(hybrid, HybridIndex)
    hits = await hybrid.search("q", 3)
    assert [(h.doc.id, h.score) for h in hits] == [
        ("B", 1 / 61 + 1 / 62),
        ("A", 1 / 61),
        ("C", 1 / 62),
    ]


async def test_rrf_keeps_first_arms_doc_and_top_k() -> None:
    left, right = ListIndex("A", "B"), ListIndex("B", "C")
    right.docs[0] = Doc("B", "the right arm's copy")
    hybrid = HybridIndex([left, right])
    hits = await hybrid.search("q", 1)
    assert [h.doc.id for h in hits] == ["B"]
    assert hits[0].doc.text == "text B"
    assert left.asked == [("q", 2)] and right.asked == [("q", 2)]
    assert await hybrid.search("q", 0) == []


async def test_custom_rrf_k() -> None:
    hybrid = HybridIndex([ListIndex("A"), ListIndex("A")], rrf_k=10)
    hits = await hybrid.search("q")
    assert hits[0].score == 1 / 11 + 1 / 11


def test_or_operator_flattens_and_keeps_left_rrf_k() -> None:
    a, b, c, d = ListIndex("a"), ListIndex("b"), ListIndex("c"), ListIndex("d")
    ab = a | b
    assert ab.indexes == [a, b]
    assert ab._rrf_k == 60
    assert ab.rrf_k == 60
    abc = ab | c
    assert abc.indexes == [a, b, c]
    cab = c | ab
    assert cab.indexes == [c, a, b]
    assert cab._rrf_k == 60
    custom = HybridIndex([a], rrf_k=5)
    assert (custom | d)._rrf_k == 5
    assert (custom | d).indexes == [a, d]
    assert (d | custom)._rrf_k == 60
    both = ab | (c | d)
    assert both.indexes == [a, b, c, d]


def test_or_with_a_plain_index_on_the_left() -> None:
    class Plain:
        async def add(self, docs): ...
        async def remove(self, ids): ...
        async def search(self, query, k=5):
            return []

    plain, arm = Plain(), ListIndex("x")
    fused = plain | arm
    assert fused.indexes == [plain, arm]
    assert isinstance(plain, Index)


def test_hybrid_needs_an_index() -> None:
    with pytest.raises(ValueError):
        HybridIndex([])


async def test_failing_arm_is_skipped(caplog) -> None:
    good, bad = ListIndex("A", "B"), ListIndex(fail=True)
    hybrid = bad | good
    with caplog.at_level(logging.WARNING, logger="lovia.plugins.memory"):
        hits = await hybrid.search("q")
    assert ids(hits) == ["A", "B"]
    assert "failed to search; skipping it" in caplog.text


async def test_all_arms_failing_raises() -> None:
    hybrid = ListIndex(fail=True) | ListIndex(fail=True)
    with pytest.raises(RuntimeError, match="search broke"):
        await hybrid.search("q")


async def test_writes_reach_every_arm_before_a_failure_is_raised() -> None:
    bad, good = ListIndex(fail=True), ListIndex()
    hybrid = bad | good
    docs = [Doc("1", "one")]
    with pytest.raises(RuntimeError, match="add broke"):
        await hybrid.add(docs)
    assert good.added == [docs]
    with pytest.raises(RuntimeError, match="remove broke"):
        await hybrid.remove(["1"])
    assert good.removed == [["1"]]
    await hybrid.add([])
    await hybrid.remove([])
    assert good.added == [docs]


async def test_keyword_arms_fuse(make_index, tmp_path) -> None:
    one = make_index(tmp_path / "one.db")
    two = make_index(":memory:")
    hybrid = one | two
    await hybrid.add([Doc("x", "shared words here"), Doc("y", "other words")])
    assert set(ids(await hybrid.search("shared"))) == {"x"}
    hits = await hybrid.search("words")
    assert set(ids(hits)) == {"x", "y"}
    assert all(h.score == pytest.approx(2 / 61) or h.score == pytest.approx(2 / 62) for h in hits)
    await hybrid.remove(["x"])
    assert ids(await hybrid.search("shared")) == []
    await hybrid.aclose()
