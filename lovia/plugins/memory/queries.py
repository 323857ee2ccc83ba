"""Side queries: the small model calls memory makes — the run digest, the dream that tidies the
notes, the query expander and the recall summary — and how their answers are read."""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from pydantic import BaseModel, Field

from lovia.messages import Usage
from lovia.parts import text_of
from lovia.plugins.memory.index import Hit
from lovia.plugins.memory.notes import _normalize_fact, _parse_facts, _shed_stamps
from lovia.providers.base import ModelSettings
from lovia.transcript import AssistantTextEntry, InputEntry, TranscriptEntry

logger = logging.getLogger("lovia.plugins.memory")


def _hit_line(hit: Hit) -> str:
    """``"[YYYY-MM-DD] text"`` (local date of the document) or just the text."""
    doc = hit.doc
    if doc.when > 0:
        return f"[{time.strftime('%Y-%m-%d', time.localtime(doc.when))}] {doc.text}"
    return doc.text


# --------------------------------------------------------------------------- side queries

_SIDE_QUERY_TURNS = 3
_MAX_MESSAGE_CHARS = 4_000
_MAX_CONVERSATION_CHARS = 60_000
_MAX_EXPANSIONS = 10

# usage of recall's side queries is folded into the run that called the tool
_usage_sink: ContextVar[Usage | None] = ContextVar("lovia_memory_usage_sink", default=None)

DIGEST_INSTRUCTIONS = """\
You curate the long-term memory of an AI assistant. You read one finished conversation and \
decide what, if anything, belongs in the assistant's NOTES: a short list of facts shown at the \
start of every future session.

Admission to "facts" is strict; most conversations add nothing, and an empty list is the usual \
answer. Admit a fact only if it is
- durable: still true and useful weeks from now (stable preferences, standing instructions, \
facts about the user, their environment, projects, people and conventions);
- stated or clearly confirmed by the user, or settled beyond doubt in the conversation;
- not already in the current NOTES, not even as a restatement.
Never admit events of this session, task progress, plans, tool output, details that can be \
re-derived from files or code, guesses, or secrets. Write each fact as one short, \
self-contained sentence in the user's language, without a date.

"stale": the current notes this conversation clearly contradicts or that the user said are no \
longer true, copied verbatim. Usually none.

"summary": two to five sentences that describe this episode so it can be found and understood \
on its own later: who wanted what, what was decided or produced, notable names, numbers and \
outcomes. Empty if the conversation was trivial."""

DREAM_INSTRUCTIONS = """\
You tidy the long-term NOTES of an AI assistant: facts, one per line, each starting with the \
[YYYY-MM] stamp of when it was learned. Rewrite the list:
- merge restatements and near-duplicates into one fact; when facts conflict the newer stamp \
wins, and a merged fact keeps the newest stamp;
- drop events, finished tasks, temporary state and anything that can be re-derived from files, \
code or the web;
- never drop an explicit rule or preference the user stated ("always ...", "never ...", "call \
me ...") unless a newer note replaces it;
- keep the user's wording and language; keep every fact short and self-contained;
- every line starts with its [YYYY-MM] stamp;
- the whole list must fit in {max_chars} characters.
Answer with the rewritten list only: one fact per line, each line starting with "- ". No \
headings, no commentary."""

EXPAND_INSTRUCTIONS = """\
You help search an archive of past conversations with a keyword index. Given a search query, \
list up to 10 other search terms that could appear verbatim in relevant passages: synonyms, \
related terms, spelled-out or abbreviated forms, other inflections, and translations into \
other languages the topic may have been discussed in (for example English and Chinese). Each \
term is one to three words. Answer with the terms only, one per line, without numbering or \
commentary."""

RECALL_INSTRUCTIONS = """\
You answer a question from dated excerpts of past conversations (an assistant's long-term \
memory). Use only what the excerpts say; never guess or add outside knowledge. Keep names, \
numbers and decisions exact, give the date when timing matters, and prefer newer excerpts \
when they conflict. If the excerpts do not answer the question, say so plainly and summarize \
the related information they do contain. Be brief."""


class _RunDigest(BaseModel):
    """What the digest side query returns for one finished run."""

    facts: list[str] = Field(
        default=[], description="New durable facts for the notes (usually none)."
    )
    stale: list[str] = Field(
        default=[], description="Current notes the conversation contradicts, verbatim."
    )
    summary: str = Field(default="", description="A self-contained summary of the episode.")


async def _side_query(
    name: str, instructions: str, prompt: str, model: Any, output_type: Any = str
) -> Any:
    """Run a tool-less, plugin-less sub-agent at temperature 0 and return its output."""
    from lovia.agent import Agent
    from lovia.context.policy import NoopContextPolicy
    from lovia.runner import Runner

    agent: Agent[Any] = Agent(
        name=name,
        instructions=instructions,
        model=model,
        output_type=output_type,
        settings=ModelSettings(temperature=0),
    )
    result = await Runner.run(
        agent,
        prompt,
        max_turns=_SIDE_QUERY_TURNS,
        context_policy=NoopContextPolicy(),
        _parent_usage=_usage_sink.get(),
    )
    return result.output


def _clip_middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]} […] {text[-half:]}"


def _conversation_lines(entries: Sequence[TranscriptEntry]) -> list[str]:
    lines: list[str] = []
    for entry in entries:
        if isinstance(entry, InputEntry) and entry.role == "user":
            role, text = "USER", text_of(entry.content)
        elif isinstance(entry, AssistantTextEntry):
            role, text = "ASSISTANT", entry.content
        else:
            continue
        text = text.strip()
        if text:
            lines.append(f"{role}: {_clip_middle(text, _MAX_MESSAGE_CHARS)}")
    return lines


def _render_conversation(entries: Sequence[TranscriptEntry]) -> str:
    """``"ROLE: text"`` lines of the user/assistant messages, bounded (start and end kept)."""
    lines = _conversation_lines(entries)
    total = sum(len(line) + 1 for line in lines)
    if total <= _MAX_CONVERSATION_CHARS:
        return "\n".join(lines)
    head: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) > _MAX_CONVERSATION_CHARS // 4:
            break
        head.append(line)
        used += len(line) + 1
    tail: list[str] = []
    for line in reversed(lines[len(head) :]):
        if used + len(line) > _MAX_CONVERSATION_CHARS:
            break
        tail.append(line)
        used += len(line) + 1
    skipped = len(lines) - len(head) - len(tail)
    return "\n".join([*head, f"[… {skipped} messages left out …]", *reversed(tail)])


async def _digest(entries: Sequence[TranscriptEntry], current: str, model: Any) -> _RunDigest:
    """Ask the model which durable facts this run taught, which notes it retired, and for an
    episode summary. No model call for a conversation without text."""
    conversation = _render_conversation(entries)
    if not conversation.strip():
        return _RunDigest()
    prompt = (
        f"CURRENT NOTES:\n{current.strip() or '(none)'}\n\n"
        f"CONVERSATION:\n{conversation}\n\n"
        "Answer with the facts to admit, the stale notes and the summary."
    )
    out = await _side_query("memory-digest", DIGEST_INSTRUCTIONS, prompt, model, _RunDigest)
    if not isinstance(out, _RunDigest):
        out = _RunDigest.model_validate(out)
    facts = [f for f in (_shed_stamps(x) for x in out.facts) if f]
    stale = [s for s in (_normalize_fact(x) for x in out.stale) if s]
    return _RunDigest(facts=facts, stale=stale, summary=out.summary.strip())


_LIST_MARKER = re.compile(r"^(?:[-*•]+|\d+[.)])\s*")
_FENCE = re.compile(r"^```[\w-]*\n(.*)\n```$", re.DOTALL)


def _json_strings(text: str) -> list[str] | None:
    """The strings of an answer that is *entirely* JSON: a list of strings, or an object with
    one (``{"facts": [...]}``). ``None`` for anything else (plain-text answers)."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    if not stripped.startswith(("[", "{")):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    if isinstance(value, dict):
        value = next((v for v in value.values() if isinstance(v, list)), None)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def _answer_lines(text: str) -> list[str]:
    """List items of a model answer: bullet lines if there are any, else every line."""
    items = _json_strings(text)
    if items is not None:
        return [i for i in (_normalize_fact(x) for x in items) if i]
    bullets = _parse_facts(text)
    if bullets:
        return bullets
    lines = (_LIST_MARKER.sub("", line.strip()).strip() for line in text.splitlines())
    return [line for line in lines if line]


async def _dream(body: str, max_chars: int, model: Any) -> list[str]:
    """The model's rewrite of the notes ``body`` (bullet lines), aiming at ``max_chars``."""
    instructions = DREAM_INSTRUCTIONS.replace("{max_chars}", f"{max_chars:,}")
    prompt = f"NOTES ({len(body):,} chars):\n{body}"
    out = await _side_query("memory-dream", instructions, prompt, model)
    return _answer_lines(str(out or ""))


async def _expand(query: str, model: Any) -> list[str]:
    """Up to 10 extra search terms for ``query`` (synonyms, translations)."""
    out = str(await _side_query("memory-query-expander", EXPAND_INSTRUCTIONS, query, model) or "")
    items = _json_strings(out)
    lines = items if items is not None else [line for line in out.splitlines() if line.strip()]
    if len(lines) == 1 and "," in lines[0]:
        lines = lines[0].split(",")
    terms: dict[str, str] = {}
    seen = {_normalize_fact(query).lower()}
    for line in lines:
        term = _normalize_fact(_LIST_MARKER.sub("", line.strip())).strip("\"'`")
        key = term.lower()
        if term and key not in seen:
            seen.add(key)
            terms[key] = term
    return list(terms.values())[:_MAX_EXPANSIONS]


async def _summarize(hits: Sequence[Hit], query: str, model: Any) -> str:
    """An answer to ``query`` from the dated hits only."""
    excerpts = "\n\n".join("- " + _hit_line(h) for h in hits)
    prompt = f"QUESTION: {query}\n\nEXCERPTS:\n{excerpts}"
    out = await _side_query("memory-recall", RECALL_INSTRUCTIONS, prompt, model)
    return str(out or "").strip()
