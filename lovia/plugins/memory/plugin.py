"""Memory: long-term, cross-session memory as a plugin (policy over two storage seams).

Hot tier — NOTES: a short list of durable facts (``MEMORY.md`` by default), shown in the system
prompt of every run. The model edits it with ``remember`` / ``forget``; at run end a side query
*digests* the conversation (admits the rare durable fact, retires contradicted notes). Every
few days — or as soon as the notes outgrow their budget — a *dream* rewrites them: merges
restatements, drops what went stale, fits the budget (the old text is kept in
``MEMORY.md.bak``).

Cold tier — the archive: every run's user/assistant messages and a one-paragraph episode
summary go into an :class:`~lovia.plugins.memory.index.Index`; the ``recall`` tool searches it
(optionally widening the query with synonyms and translations first, and answering from the
hits instead of returning them raw).

Side queries (``memory-digest``, ``memory-dream``, ``memory-query-expander``,
``memory-recall``) are tool-less, plugin-less sub-agents at temperature 0 on ``Memory.model``,
else on the host agent's model.

The notes format is in :mod:`.notes`, the side queries in :mod:`.queries`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import EllipsisType
from typing import Any, Literal

from lovia.events import RunCompleted
from lovia.exceptions import UserError
from lovia.hooks import AgentHooks
from lovia.parts import text_of
from lovia.plugins.base import PluginInstance
from lovia.plugins.memory.index import Doc, Index, KeywordIndex
from lovia.plugins.memory.notes import (
    _LEADING_STAMP,
    DEFAULT_ROOT,
    FileNotesStore,
    NotesStore,
    _drop_fact,
    _fact_key,
    _format_facts,
    _meter,
    _normalize_fact,
    _parse_facts,
    _relocate_stamp,
    _shed_stamps,  # noqa: F401 - kept importable here
    _strip_date,  # noqa: F401 - kept importable here
    _write_atomic,
)
from lovia.plugins.memory.queries import (
    _MAX_CONVERSATION_CHARS,  # noqa: F401 - kept importable here
    DIGEST_INSTRUCTIONS,  # noqa: F401 - kept importable here
    DREAM_INSTRUCTIONS,  # noqa: F401 - kept importable here
    EXPAND_INSTRUCTIONS,  # noqa: F401 - kept importable here
    RECALL_INSTRUCTIONS,  # noqa: F401 - kept importable here
    _digest,
    _dream,
    _expand,
    _hit_line,
    _render_conversation,  # noqa: F401 - kept importable here
    _RunDigest,
    _summarize,
    _usage_sink,
)
from lovia.plugins.memory.texts import (
    _EMPTY_NOTES,
    _GUIDANCE_ARCHIVE,
    _GUIDANCE_HEAD,
    _GUIDANCE_TAIL,
    _GUIDANCE_TAIL_MANUAL,
    ALREADY_KNOWN,
    FORGOTTEN,
    NOT_FOUND,
    NOTHING_RECALLED,
    NOTHING_TO_REMEMBER,
    REMEMBERED,
)
from lovia.plugins.memory.vector import Embedder, VectorIndex
from lovia.providers.base import Provider
from lovia.run_context import RunContext
from lovia.tools.base import Tool, tool
from lovia.tools.presentation import short
from lovia.transcript import AssistantTextEntry, InputEntry, TranscriptEntry

logger = logging.getLogger("lovia.plugins.memory")


# --------------------------------------------------------------------------- stamping
# Here rather than in notes.py: callers patch ``_current_month`` on this module, and
# ``_stamp`` / ``_merge_new`` read it here.


def _current_month() -> str:
    return time.strftime("%Y-%m")


def _stamp(s: str) -> str:
    """``"[YYYY-MM] s"`` (this month) unless ``s`` already starts with a stamp."""
    if _LEADING_STAMP.match(s):
        return s
    return f"[{_current_month()}] {s}"


def _merge_new(facts: list[str], new: Sequence[str]) -> int:
    """Append the new facts (normalized, stamped) whose keys are not present; returns count."""
    keys = {_fact_key(f) for f in facts}
    added = 0
    for raw in new:
        fact = _normalize_fact(raw)
        key = _fact_key(fact)
        if not key or key in keys:
            continue
        facts.append(_stamp(fact))
        keys.add(key)
        added += 1
    return added


# --------------------------------------------------------------------------- the plugin


@dataclass(eq=False)
class Memory:
    """Long-term, cross-session memory: always-visible NOTES plus a searchable archive.

    State lives in files under ``root`` and is shared by every run of every agent using this
    object (writes are serialized). See ``docs/memory.md``.
    """

    root: str | os.PathLike[str] = DEFAULT_ROOT
    notes: NotesStore | None = None
    index: Index | EllipsisType | None = ...
    embedder: Embedder | None = None
    auto_curate: bool = True
    curate_in_background: bool = False
    expand_query: bool | Literal["auto"] = "auto"
    summarize_recall: bool = True
    recall_k: int = 5
    notes_budget: int = 8000
    dream_every_days: float | None = 3.0
    model: str | Provider | None = None
    name: str = "memory"

    _root: Path = field(init=False, repr=False)
    _notes_store: NotesStore = field(init=False, repr=False)
    _default_index: bool = field(init=False, repr=False, default=False)
    _owned_index: Any = field(init=False, repr=False, default=None)
    _curation_tasks: set[asyncio.Task[None]] = field(init=False, repr=False, default_factory=set)
    _active_runs: int = field(init=False, repr=False, default=0)
    _lock: asyncio.Lock | None = field(init=False, repr=False, default=None)
    _lock_loop: asyncio.AbstractEventLoop | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        if self.embedder is not None and self.index is not ...:
            raise UserError(
                "Memory(index=..., embedder=...): pass an index or an embedder, not both.",
                hint="With embedder= Memory builds KeywordIndex | VectorIndex under root; to "
                "configure the index yourself, put the VectorIndex into it and drop embedder=.",
            )
        if self.expand_query not in (True, False, "auto"):
            raise UserError(
                f"Memory(expand_query={self.expand_query!r}) is not True, False or 'auto'."
            )
        self._root = Path(self.root).expanduser()
        self._notes_store = (
            self.notes if self.notes is not None else FileNotesStore(self._root / "MEMORY.md")
        )
        if self.index is ...:
            keyword = KeywordIndex(self._root / "archive.db")
            self._default_index = True
            if self.embedder is not None:
                self.index = keyword | VectorIndex(self._root / "vectors.db", self.embedder)
            else:
                self.index = keyword
            self._owned_index = self.index

    # ------------------------------------------------------------------ public API

    async def remember(self, fact: str) -> bool:
        """Add ``fact`` to the notes (stamped with this month); False if already there."""
        return await self._add_facts([fact]) > 0

    async def forget(self, fact: str) -> bool:
        """Remove the note ``fact`` names (see :func:`_drop_fact`); False if none matched."""
        if not _fact_key(fact):
            return False
        async with self._notes_lock():
            facts = await self._notes_store.load()
            kept = _drop_fact(facts, fact)
            if len(kept) == len(facts):
                return False
            await self._notes_store.save(kept)
            return True

    async def notes_body(self) -> str:
        """The notes as the model sees them: ``- fact`` lines."""
        return _format_facts(await self._notes_store.load())

    async def replace_notes(self, body: str) -> str:
        """Replace all notes with the bullets of ``body`` (``""`` clears them).

        Bullets are normalized, de-duplicated by key and stamped when undated; returns the
        canonical body that was saved.
        """
        facts: list[str] = []
        keys: set[str] = set()
        for raw in _parse_facts(body):
            fact = _relocate_stamp(_normalize_fact(raw))
            key = _fact_key(fact)
            if not key or key in keys:
                continue
            keys.add(key)
            facts.append(_stamp(fact))
        async with self._notes_lock():
            await self._notes_store.save(facts)
        return _format_facts(facts)

    async def dream(self, model: str | Provider | None = None) -> tuple[int, int]:
        """Tidy the notes now; returns the number of notes ``(before, after)``."""
        chosen = model if model is not None else self.model
        if chosen is None:
            raise UserError(
                "Memory.dream() has no model to run on",
                hint="Pass dream(model=...) or construct Memory(model=...).",
            )
        return await self._run_dream(chosen)

    async def drain(self) -> None:
        """Wait for background curation (``curate_in_background=True``) to finish."""
        while self._curation_tasks:
            await asyncio.gather(*list(self._curation_tasks), return_exceptions=True)

    def dreamed_at(self) -> float | None:
        """When the notes were last tidied (the ``.dreamed`` marker's mtime), if ever."""
        try:
            return (self._root / ".dreamed").stat().st_mtime
        except FileNotFoundError:
            return None

    async def aclose(self) -> None:
        """Finish background curation and close the index Memory built (not one passed in).

        Runs do this on their own when the last one using this object ends; the index
        reopens on next use.
        """
        await self.drain()
        await self._close_owned_index()

    async def _close_owned_index(self) -> None:
        close = getattr(self._owned_index, "aclose", None)
        if close is not None:
            try:
                await close()
            except Exception:
                logger.debug("memory.index: closing the archive failed", exc_info=True)

    async def _release(self) -> None:
        """Close the archive Memory built once no run and no curation uses it any more (its
        connection belongs to the event loop of the runs; the next use reopens it)."""
        if self._active_runs == 0 and not self._curation_tasks:
            await self._close_owned_index()

    async def _end_run(self) -> None:
        self._active_runs = max(0, self._active_runs - 1)
        await self._release()

    async def _curate_in_background(
        self,
        index: Index | None,
        entries: Sequence[TranscriptEntry],
        ctx: RunContext[Any],
    ) -> None:
        try:
            await self._curate(index, entries, ctx)
        finally:
            task = asyncio.current_task()
            if task is not None:
                self._curation_tasks.discard(task)
            await self._release()

    # ------------------------------------------------------------------ plugin

    async def setup(self, ctx: RunContext[Any] | None = None) -> PluginInstance:
        index = self.index if not isinstance(self.index, EllipsisType) else None
        try:
            body = await self.notes_body()
        except Exception:
            logger.warning("memory.notes: loading the notes failed", exc_info=True)
            body = ""
        tools = [self._remember_tool(), self._forget_tool()]
        if index is not None:
            tools.append(self._recall_tool(index))
        hooks = AgentHooks()
        fired = False

        @hooks.on(RunCompleted)
        async def curate_after_run(event: RunCompleted, run_ctx: RunContext[Any]) -> None:
            nonlocal fired
            if fired:
                return
            fired = True
            entries = list(event.result.entries)
            if self.curate_in_background:
                task = asyncio.get_running_loop().create_task(
                    self._curate_in_background(index, entries, run_ctx),
                    name=f"{self.name}-curation",
                )
                self._curation_tasks.add(task)
                task.add_done_callback(self._curation_tasks.discard)
            else:
                await self._curate(index, entries, run_ctx)

        self._active_runs += 1
        return PluginInstance(
            tools=tools,
            instructions=self._instructions(body, has_index=index is not None),
            hooks=hooks,
            aclose=self._end_run,
        )

    def _instructions(self, body: str, *, has_index: bool) -> str:
        tail = _GUIDANCE_TAIL if self.auto_curate else _GUIDANCE_TAIL_MANUAL
        guidance = _GUIDANCE_HEAD + (_GUIDANCE_ARCHIVE if has_index else "") + tail
        meter = _meter(len(body), self.notes_budget)
        notes = f"NOTES {meter}\n{body}" if body else f"NOTES {meter}\n{_EMPTY_NOTES}"
        return guidance + "\n\n" + notes

    def _remember_tool(self) -> Tool:
        async def remember(fact: str) -> str:
            """Save one durable fact to your notes."""
            if not _fact_key(fact):
                return NOTHING_TO_REMEMBER
            return REMEMBERED if await self.remember(fact) else ALREADY_KNOWN

        return tool(
            name="remember",
            description=(
                "Save one durable fact to your long-term notes, which you will see at the "
                "start of every future session. Use one short, self-contained sentence, e.g. "
                '"The user prefers pnpm over npm."'
            ),
            kind="think",
            title=lambda args: short(f"Remember: {args.get('fact', '')}"),
        )(remember)

    def _forget_tool(self) -> Tool:
        async def forget(fact: str) -> str:
            """Remove a note."""
            return FORGOTTEN if await self.forget(fact) else NOT_FOUND

        return tool(
            name="forget",
            description=(
                "Remove a note that is wrong or no longer true. Pass the note's text (or a "
                "distinctive part of it)."
            ),
            kind="think",
            title=lambda args: short(f"Forget: {args.get('fact', '')}"),
        )(forget)

    def _recall_tool(self, index: Index) -> Tool:
        async def recall(query: str, ctx: RunContext[Any]) -> str:
            """Search past conversations."""
            token = _usage_sink.set(getattr(ctx, "usage", None))
            try:
                return await self._recall(index, query, ctx)
            finally:
                _usage_sink.reset(token)

        return tool(
            name="recall",
            description=(
                "Search the archive of past conversations for details that are not in your "
                "notes: earlier decisions, names, numbers, what was done when. Pass a short "
                "query with the key terms; the answer cites dates."
            ),
            kind="search",
            title=lambda args: f"Recall {short(args.get('query', ''), 50)!r}",
        )(recall)

    async def _recall(self, index: Index, query: str, ctx: RunContext[Any] | None) -> str:
        search = query
        if query.strip() and self._should_expand():
            try:
                terms = await _expand(query, self._model_for(ctx))
                if terms:
                    search = f"{query} {' '.join(terms)}"
            except Exception as exc:
                logger.warning("memory.recall: query expansion failed (%s); searching as is", exc)
        hits = await index.search(search, self.recall_k)
        if not hits:
            return NOTHING_RECALLED
        if self.summarize_recall:
            try:
                answer = await _summarize(hits, query, self._model_for(ctx))
                if answer.strip():
                    return answer
            except Exception as exc:
                logger.warning("memory.recall: summarizing failed (%s); returning the hits", exc)
        return "\n\n".join("- " + _hit_line(h) for h in hits)

    # ------------------------------------------------------------------ internals

    def _should_expand(self) -> bool:
        """Query expansion: on for the default keyword-only index unless set explicitly."""
        if self.index is None:
            return False
        if self.expand_query == "auto":
            return self._default_index and self.embedder is None
        return bool(self.expand_query)

    def _model_for(self, ctx: RunContext[Any] | None) -> Any:
        if self.model is not None:
            return self.model
        agent = getattr(ctx, "agent", None)
        model = getattr(agent, "model", None)
        if model is None:
            raise UserError(
                "Memory has no model to run on: set Memory(model=...) or give the agent a model.",
                hint="Memory's side queries (digest, dream, recall) run on Memory.model, else on "
                "the model of the agent it is attached to.",
            )
        return model

    def _notes_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            # Memory may outlive an event loop (two ``run_sync`` calls): one lock per loop
            self._lock = asyncio.Lock()
            self._lock_loop = loop
        return self._lock

    async def _add_facts(self, facts: Sequence[str]) -> int:
        """Merge ``facts`` into the notes (one lock cycle); returns how many were new."""
        async with self._notes_lock():
            current = await self._notes_store.load()
            added = _merge_new(current, facts)
            if added:
                await self._notes_store.save(current)
            return added

    async def _apply_digest(self, digest: _RunDigest) -> tuple[int, int]:
        """Drop the digest's stale notes and add its facts with one save: ``(dropped, added)``."""
        async with self._notes_lock():
            facts = await self._notes_store.load()
            dropped = 0
            for target in digest.stale:
                kept = _drop_fact(facts, target)
                if len(kept) < len(facts):
                    dropped += 1
                    facts = kept
            added = _merge_new(facts, digest.facts)
            if dropped or added:
                await self._notes_store.save(facts)
            return dropped, added

    def _run_docs(
        self,
        entries: Sequence[TranscriptEntry],
        ctx: RunContext[Any] | None,
        digest: _RunDigest | None,
    ) -> list[Doc]:
        """The archive documents of one run: its messages plus the episode summary."""
        run_id = getattr(ctx, "run_id", None) or uuid.uuid4().hex
        session_id = getattr(ctx, "session_id", None)
        now = time.time()

        def meta(kind: str) -> dict[str, str]:
            out = {"run_id": run_id}
            if session_id:
                out["session_id"] = str(session_id)
            out["kind"] = kind
            return out

        docs: list[Doc] = []
        for entry in entries:
            if isinstance(entry, InputEntry) and entry.role == "user":
                text = text_of(entry.content)
            elif isinstance(entry, AssistantTextEntry):
                text = entry.content
            else:
                continue
            if not text.strip():
                continue
            docs.append(Doc(id=f"{run_id}:{len(docs)}", text=text, when=now, meta=meta("message")))
        if digest is not None and digest.summary.strip():
            docs.append(
                Doc(
                    id=f"{run_id}:summary",
                    text=digest.summary.strip(),
                    when=now,
                    meta=meta("summary"),
                )
            )
        return docs

    async def _curate(
        self,
        index: Index | None,
        entries: Sequence[TranscriptEntry],
        ctx: RunContext[Any] | None,
    ) -> None:
        """Run-end curation; every step is best effort (logged, never raised)."""
        digest = _RunDigest()
        if self.auto_curate:
            try:
                current = await self.notes_body()
                digest = await _digest(entries, current, self._model_for(ctx))
            except Exception as exc:
                logger.warning("memory.curate: the digest failed: %s", exc, exc_info=True)
        if index is not None:
            try:
                await index.add(self._run_docs(entries, ctx, digest))
            except Exception as exc:
                logger.warning("memory.curate: archiving the run failed: %s", exc, exc_info=True)
        if digest.facts or digest.stale:
            try:
                dropped, added = await self._apply_digest(digest)
                logger.info("memory.curate: notes +%d -%d", added, dropped)
            except Exception as exc:
                logger.warning("memory.curate: updating the notes failed: %s", exc, exc_info=True)
        try:
            await self._dream_if_due(ctx)
        except Exception as exc:
            logger.warning("memory.curate: the dream failed: %s", exc, exc_info=True)

    async def _dream_if_due(self, ctx: RunContext[Any] | None = None) -> tuple[int, int] | None:
        """Dream when the notes outgrew their budget or the cadence is due."""
        body = await self.notes_body()
        if len(body) <= self.notes_budget and not self._cadence_due():
            return None
        return await self._run_dream(self._model_for(ctx))

    def _cadence_due(self) -> bool:
        days = self.dream_every_days
        if days is None:
            return False
        marker = self._root / ".dreamed"
        try:
            marked = marker.stat().st_mtime_ns
        except FileNotFoundError:
            self._touch_marker()  # the first check starts the clock
            return False
        if time.time_ns() - marked < days * 86400 * 1e9:
            return False
        store = self._notes_store
        if isinstance(store, FileNotesStore):
            try:
                return store.path.stat().st_mtime_ns > marked
            except FileNotFoundError:
                return False
        return True  # a custom store cannot tell whether it changed

    def _touch_marker(self) -> None:
        marker = self._root / ".dreamed"
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
        os.utime(marker)

    async def _run_dream(self, model: Any) -> tuple[int, int]:
        # The lock is held across the model call: a ``remember`` meanwhile waits, then lands
        # on the rewritten notes instead of being overwritten by them.
        async with self._notes_lock():
            facts = await self._notes_store.load()
            if not facts:
                self._touch_marker()
                return 0, 0
            body = _format_facts(facts)
            rewritten: list[str] = []
            keys: set[str] = set()
            for raw in await _dream(body, self.notes_budget, model):
                fact = _relocate_stamp(_normalize_fact(raw))
                key = _fact_key(fact)
                if key and key not in keys:
                    keys.add(key)
                    rewritten.append(fact)
            if not rewritten:
                logger.warning("memory.dream: the rewrite came back empty; notes left as they are")
                return len(facts), len(facts)
            await asyncio.to_thread(_write_atomic, self._root / "MEMORY.md.bak", body)
            await self._notes_store.save(rewritten)
            self._touch_marker()
            logger.info("memory.dream: %d notes → %d", len(facts), len(rewritten))
            return len(facts), len(rewritten)


__all__ = ["FileNotesStore", "Memory", "NotesStore"]
