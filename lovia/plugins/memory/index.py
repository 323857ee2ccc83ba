"""The cold tier of Memory: plain documents behind a tiny ``Index`` seam.

- :class:`KeywordIndex` — SQLite FTS5 (BM25) over a tokenization that also handles Chinese,
  Japanese and Korean text (overlapping bigrams), with a ``LIKE`` fallback where the SQLite
  build has no FTS5. Standard library + aiosqlite only.
- :class:`HybridIndex` — reciprocal-rank fusion of several indexes (``keyword | vector``).

Every index upserts by ``Doc.id``: adding a document with a known id replaces it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import aiosqlite

from lovia.stores._sqlite import Schema, SQLiteStore, dumps

logger = logging.getLogger("lovia.plugins.memory")


# --------------------------------------------------------------------------- documents


@dataclass
class Doc:
    """One archived text. ``when`` is a UNIX time (0 = unknown); ``meta`` holds plain strings."""

    id: str
    text: str
    when: float = 0.0
    meta: dict[str, str] = field(default_factory=dict)


@dataclass
class Hit:
    """A search result; higher ``score`` is better (scales differ between backends)."""

    doc: Doc
    score: float


@runtime_checkable
class Index(Protocol):
    """Cold-tier storage: upsert by id, remove by id, search best-first."""

    async def add(self, docs: Sequence[Doc]) -> None: ...

    async def remove(self, ids: Sequence[str]) -> None: ...

    async def search(self, query: str, k: int = 5) -> list[Hit]: ...


class Fusable:
    """Mixin: ``a | b`` fuses two indexes into a :class:`HybridIndex` (flattening hybrids)."""

    def __or__(self, other: Index) -> HybridIndex:
        left = _arms(self)
        rrf_k = self._rrf_k if isinstance(self, HybridIndex) else DEFAULT_RRF_K
        return HybridIndex([*left, *_arms(other)], rrf_k=rrf_k)

    def __ror__(self, other: Index) -> HybridIndex:
        rrf_k = other._rrf_k if isinstance(other, HybridIndex) else DEFAULT_RRF_K
        return HybridIndex([*_arms(other), *_arms(self)], rrf_k=rrf_k)


def _arms(index: Any) -> list[Index]:
    if isinstance(index, HybridIndex):
        return list(index.indexes)
    return [index]


# --------------------------------------------------------------------------- terms

# Han ideographs, kana and Hangul: scripts written without spaces between words.
_CJK = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3005-\u3007"  # 々 〆 〇
    "\u3021-\u3029"  # Hangzhou numerals
    "\u3031-\u3035"  # kana repeat marks
    "\u303b\u303c"
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30fa\u30fc-\u30ff"  # Katakana (without the ・ separator)
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\ua960-\ua97f"  # Hangul Jamo extended A
    "\uac00-\ud7af"  # Hangul syllables
    "\ud7b0-\ud7ff"  # Hangul Jamo extended B
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana
    "\uffa0-\uffdc"  # half-width Hangul
    "\U0001b000-\U0001b16f"  # Kana supplement / extended
    "\U00020000-\U0003134f"  # CJK extensions B-H
)


@functools.cache
def _pieces() -> re.Pattern[str]:
    # compiled on first use: the Unicode classes take milliseconds, import lovia stays fast
    return re.compile(f"([{_CJK}]+)|([^\\W{_CJK}]+)")


def _terms(text: str) -> list[str]:
    """Search terms of ``text``: lower-cased words; CJK runs as overlapping bigrams.

    ``"北京出差"`` → ``["北京", "京出", "出差"]``; ``"我爱python"`` → ``["我爱", "python"]``.
    """
    out: list[str] = []
    for match in _pieces().finditer(text.lower()):
        cjk, word = match.groups()
        if word:
            out.append(word)
        elif len(cjk) <= 2:
            out.append(cjk)
        else:
            out.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
    return out


# --------------------------------------------------------------------------- keyword index


@functools.cache
def _probe_fts5() -> bool:
    try:
        conn = sqlite3.connect(":memory:")
    except sqlite3.Error:  # pragma: no cover - sqlite3 always opens :memory:
        return False
    try:
        conn.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
        return True
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def _fts5_available() -> bool:
    """Whether this Python's SQLite has the FTS5 extension (probed once per process)."""
    return _probe_fts5()


_DOCS = "memory_docs"
_FTS = "memory_docs_fts"
_FLAGS = "memory_docs_flags"
_TOKENIZE = "porter unicode61 remove_diacritics 2 tokenchars '_'"

KEYWORD_SCHEMA = Schema(
    component="memory_keyword",
    baseline=(
        f"CREATE TABLE IF NOT EXISTS {_DOCS} ("
        " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
        " id TEXT NOT NULL UNIQUE,"
        " text TEXT NOT NULL,"
        ' "when" REAL NOT NULL,'
        " meta TEXT NOT NULL,"
        " terms TEXT NOT NULL)",
        f'CREATE INDEX IF NOT EXISTS {_DOCS}_when ON {_DOCS}("when")',
        f"CREATE TABLE IF NOT EXISTS {_FLAGS} (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ),
    tables={
        _DOCS: frozenset({"seq", "id", "text", "when", "meta", "terms"}),
        _FLAGS: frozenset({"name", "value"}),
    },
)


def _escape_like(term: str) -> str:
    return term.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%")


def _fts_query(terms: Sequence[str]) -> str:
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in dict.fromkeys(terms))


def _meta_from(text: str) -> dict[str, str]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def _doc_from_row(row: Sequence[Any]) -> Doc:
    doc_id, text, when, meta = row[:4]
    return Doc(id=str(doc_id), text=str(text), when=float(when or 0.0), meta=_meta_from(meta))


def _unique(docs: Sequence[Doc]) -> list[Doc]:
    """The last document per id, in first-seen order (one batch upserts each id once)."""
    by_id: dict[str, Doc] = {}
    for doc in docs:
        by_id.pop(doc.id, None)
        by_id[doc.id] = doc
    return list(by_id.values())


class KeywordIndex(SQLiteStore, Fusable):
    """Keyword search in an SQLite file (or ``":memory:"``): FTS5 + BM25, else ``LIKE``.

    Documents live in the ``memory_docs`` table; with FTS5 an external-content full-text
    table indexes their :func:`_terms` (English words stemmed, so ``deploy`` finds
    ``deploys``), and an upsert touches one row instead of scanning. Scores are ``-bm25``
    (higher is better). Without FTS5 a search matches any term as a
    substring (``_`` and ``%`` taken literally), newest first, with score ``0.0``.

    The file can be shared with other lovia stores (tables are versioned per component).
    """

    schema = KEYWORD_SCHEMA

    def __init__(self, path: str | os.PathLike[str], *, wal: bool | None = None) -> None:
        super().__init__(path, wal=wal)
        self._use_fts = bool(_fts5_available())

    def __repr__(self) -> str:
        mode = "fts5" if self._use_fts else "like"
        return f"KeywordIndex({self.path!r}, {mode})"

    # ------------------------------------------------------------------ schema

    async def _ensure_schema(self, conn: aiosqlite.Connection) -> None:
        await super()._ensure_schema(conn)
        if not self._use_fts:
            return
        rows = await conn.execute_fetchall("SELECT 1 FROM sqlite_master WHERE name = ?", (_FTS,))
        stale = await conn.execute_fetchall(f"SELECT 1 FROM {_FLAGS} WHERE name = 'fts_stale'")
        if not rows:
            await conn.execute(
                f"CREATE VIRTUAL TABLE {_FTS} USING fts5("
                f"terms, content='{_DOCS}', content_rowid='seq', tokenize=\"{_TOKENIZE}\")"
            )
        if not rows or stale:
            # written without FTS5 (another SQLite build) or just created: index what is there
            await conn.execute(f"INSERT INTO {_FTS}({_FTS}) VALUES ('rebuild')")
            await conn.execute(f"DELETE FROM {_FLAGS} WHERE name = 'fts_stale'")

    # ------------------------------------------------------------------ Index

    async def add(self, docs: Sequence[Doc]) -> None:
        """Upsert ``docs`` by id (one transaction)."""
        batch = _unique(docs)
        if not batch:
            return
        rows = [
            (d.id, d.text, float(d.when), dumps(dict(d.meta)), " ".join(_terms(d.text)))
            for d in batch
        ]

        async def write(conn: aiosqlite.Connection) -> None:
            for doc_id, text, when, meta, terms in rows:
                await self._delete(conn, doc_id)
                cursor = await conn.execute(
                    f'INSERT INTO {_DOCS} (id, text, "when", meta, terms) VALUES (?, ?, ?, ?, ?)',
                    (doc_id, text, when, meta, terms),
                )
                if self._use_fts:
                    await conn.execute(
                        f"INSERT INTO {_FTS}(rowid, terms) VALUES (?, ?)",
                        (cursor.lastrowid, terms),
                    )
            if not self._use_fts:
                await self._mark_fts_stale(conn)

        await self._write(write)

    async def remove(self, ids: Sequence[str]) -> None:
        """Delete the documents with these ids; unknown ids are ignored."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return

        async def write(conn: aiosqlite.Connection) -> None:
            for doc_id in wanted:
                await self._delete(conn, doc_id)
            if not self._use_fts:
                await self._mark_fts_stale(conn)

        await self._write(write)

    async def search(self, query: str, k: int = 5) -> list[Hit]:
        """The ``k`` best documents matching any term of ``query``."""
        terms = _terms(query)
        if not terms or k <= 0:
            return []
        if self._use_fts:
            return await self._read(lambda conn: self._search_fts(conn, terms, k))
        return await self._read(lambda conn: self._search_like(conn, terms, k))

    async def count(self) -> int:
        """How many documents the index holds."""

        async def job(conn: aiosqlite.Connection) -> int:
            rows = await conn.execute_fetchall(f"SELECT COUNT(*) FROM {_DOCS}")
            return int(next(iter(rows))[0])

        return await self._read(job)

    # ------------------------------------------------------------------ internals

    async def _delete(self, conn: aiosqlite.Connection, doc_id: str) -> None:
        rows = list(
            await conn.execute_fetchall(f"SELECT seq, terms FROM {_DOCS} WHERE id = ?", (doc_id,))
        )
        if not rows:
            return
        seq, terms = rows[0]
        if self._use_fts:
            await conn.execute(
                f"INSERT INTO {_FTS}({_FTS}, rowid, terms) VALUES ('delete', ?, ?)", (seq, terms)
            )
        await conn.execute(f"DELETE FROM {_DOCS} WHERE seq = ?", (seq,))

    async def _mark_fts_stale(self, conn: aiosqlite.Connection) -> None:
        rows = await conn.execute_fetchall("SELECT 1 FROM sqlite_master WHERE name = ?", (_FTS,))
        if rows:
            await conn.execute(
                f"INSERT OR REPLACE INTO {_FLAGS} (name, value) VALUES ('fts_stale', '1')"
            )

    async def _search_fts(self, conn: aiosqlite.Connection, terms: list[str], k: int) -> list[Hit]:
        rows = await conn.execute_fetchall(
            f'SELECT d.id, d.text, d."when", d.meta, bm25({_FTS}) AS score'
            f" FROM {_FTS} JOIN {_DOCS} AS d ON d.seq = {_FTS}.rowid"
            f" WHERE {_FTS} MATCH ? ORDER BY score LIMIT ?",
            (_fts_query(terms), k),
        )
        return [Hit(_doc_from_row(row), -float(row[4])) for row in rows]

    async def _search_like(self, conn: aiosqlite.Connection, terms: list[str], k: int) -> list[Hit]:
        unique = list(dict.fromkeys(terms))
        where = " OR ".join(["terms LIKE ? ESCAPE '\\'"] * len(unique))
        rows = await conn.execute_fetchall(
            f'SELECT id, text, "when", meta FROM {_DOCS} WHERE {where}'
            ' ORDER BY "when" DESC, seq DESC LIMIT ?',
            (*(f"%{_escape_like(t)}%" for t in unique), k),
        )
        return [Hit(_doc_from_row(row), 0.0) for row in rows]


# --------------------------------------------------------------------------- hybrid

DEFAULT_RRF_K = 60


class HybridIndex(Fusable):
    """Reciprocal-rank fusion over several indexes (``keyword | vector``).

    Writes go to every arm. A search asks each arm for ``2k`` hits and scores a document
    ``Σ 1 / (rrf_k + rank + 1)`` over the arms that returned it (``rank`` from 0). An arm
    that fails to search is logged and skipped; only when all fail is the error raised.
    """

    def __init__(self, indexes: Sequence[Index], *, rrf_k: int = DEFAULT_RRF_K) -> None:
        if not indexes:
            raise ValueError("HybridIndex needs at least one index")
        self.indexes: list[Index] = list(indexes)
        self._rrf_k = rrf_k

    @property
    def rrf_k(self) -> int:
        return self._rrf_k

    def __repr__(self) -> str:
        arms = " | ".join(repr(i) for i in self.indexes)
        return f"HybridIndex({arms}, rrf_k={self._rrf_k})"

    async def add(self, docs: Sequence[Doc]) -> None:
        batch = list(docs)
        if batch:
            await _broadcast([arm.add(batch) for arm in self.indexes])

    async def remove(self, ids: Sequence[str]) -> None:
        wanted = list(ids)
        if wanted:
            await _broadcast([arm.remove(wanted) for arm in self.indexes])

    async def search(self, query: str, k: int = 5) -> list[Hit]:
        if k <= 0:
            return []
        results = await asyncio.gather(
            *(arm.search(query, 2 * k) for arm in self.indexes), return_exceptions=True
        )
        scores: dict[str, float] = {}
        docs: dict[str, Doc] = {}
        failures: list[BaseException] = []
        for arm, result in zip(self.indexes, results, strict=True):
            if isinstance(result, BaseException):
                if not isinstance(result, Exception):
                    raise result
                logger.warning(
                    "memory.index: %r failed to search; skipping it", arm, exc_info=result
                )
                failures.append(result)
                continue
            for rank, hit in enumerate(result):
                doc_id = hit.doc.id
                docs.setdefault(doc_id, hit.doc)
                scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (self._rrf_k + rank + 1)
        if failures and len(failures) == len(self.indexes):
            raise failures[0]
        ranked = sorted(scores.items(), key=lambda item: item[1], reverse=True)
        return [Hit(docs[doc_id], score) for doc_id, score in ranked[:k]]

    async def aclose(self) -> None:
        """Close every arm that has an ``aclose``."""
        for arm in self.indexes:
            close = getattr(arm, "aclose", None)
            if close is not None:
                await close()


async def _broadcast(jobs: list[Any]) -> None:
    """Await all jobs, then re-raise the first failure (every arm got its chance)."""
    results = await asyncio.gather(*jobs, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result


__all__ = ["Doc", "Fusable", "Hit", "HybridIndex", "Index", "KeywordIndex"]
