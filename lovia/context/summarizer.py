"""Summarizers turn an older slice of the transcript into (or fold it into) a running summary."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from lovia.context.prompts import (
    REQUIRED_SECTIONS,
    SECTIONS_RETRY_TEMPLATE,
    SUMMARY_FIRST_TEMPLATE,
    SUMMARY_FOCUS_TEMPLATE,
    SUMMARY_FOLD_TEMPLATE,
    SUMMARY_SYSTEM_PROMPT,
)
from lovia.model_view import ModelView
from lovia.parts import text_of
from lovia.providers.base import ModelSettings
from lovia.transcript import (
    AssistantTextEntry,
    FinishDelta,
    InputEntry,
    TextDelta,
    ToolCallEntry,
    ToolResultEntry,
    TranscriptEntry,
    UsageDelta,
)

if TYPE_CHECKING:
    from lovia.context.policy import CompactionRequest
    from lovia.providers.base import Provider

logger = logging.getLogger("lovia.context.summarizer")


@runtime_checkable
class Summarizer(Protocol):
    """Produces summary text for ``entries``, folding in ``prior_summary`` when given.

    An optional ``provider`` attribute takes part in chunk sizing (its window bounds chunks).
    """

    async def summarize(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        req: CompactionRequest,
        prior_summary: str | None = None,
    ) -> str: ...


def transcript_to_text(entries: Sequence[TranscriptEntry]) -> str:
    """A plain-text rendering for the summary prompt (reasoning is left out)."""
    lines: list[str] = []
    for e in entries:
        if isinstance(e, InputEntry):
            lines.append(f"[{e.role}] {text_of(e.content)}")
        elif isinstance(e, AssistantTextEntry):
            lines.append(f"[assistant] {e.content}")
        elif isinstance(e, ToolCallEntry):
            lines.append(f"[tool_call:{e.name}] {e.arguments}")
        elif isinstance(e, ToolResultEntry):
            lines.append(f"[tool_result] {e.output}")
    return "\n".join(lines)


class LLMSummarizer:
    """Summarises with a model: this ``provider`` if given, else the run's provider.

    The reply must contain every heading in ``required_sections``; if some are missing it is
    asked once more, then accepted with a warning.
    """

    def __init__(
        self,
        provider: Provider | None = None,
        *,
        prompt: str = SUMMARY_SYSTEM_PROMPT,
        settings: ModelSettings | None = None,
        required_sections: tuple[str, ...] | None = REQUIRED_SECTIONS,
    ) -> None:
        self.provider = provider
        self.prompt = prompt
        self.settings = settings if settings is not None else ModelSettings(temperature=0)
        self.required_sections = required_sections

    async def summarize(
        self,
        entries: Sequence[TranscriptEntry],
        *,
        req: CompactionRequest,
        prior_summary: str | None = None,
    ) -> str:
        provider = self.provider or req.provider
        if provider is None:
            raise ValueError("LLMSummarizer requires a provider")
        events = transcript_to_text(entries)
        if prior_summary:
            ask = SUMMARY_FOLD_TEMPLATE.format(prior=prior_summary, events=events)
        else:
            ask = SUMMARY_FIRST_TEMPLATE.format(events=events)
        if req.focus and req.focus.strip():
            ask += SUMMARY_FOCUS_TEMPLATE.format(focus=req.focus.strip())
        conversation: list[TranscriptEntry] = [
            InputEntry(role="system", content=self.prompt),
            InputEntry(role="user", content=ask),
        ]
        summary = await self._complete(provider, conversation, req)
        missing = self._missing_sections(summary)
        if not missing:
            return summary
        conversation += [
            AssistantTextEntry(summary),
            InputEntry(
                role="user", content=SECTIONS_RETRY_TEMPLATE.format(missing=", ".join(missing))
            ),
        ]
        retried = await self._complete(provider, conversation, req)
        still_missing = self._missing_sections(retried)
        if still_missing:
            logger.warning(
                "summary.sections_missing: %s; keeping the summary anyway",
                ", ".join(still_missing),
            )
        return retried

    async def _complete(
        self, provider: Provider, conversation: list[TranscriptEntry], req: CompactionRequest
    ) -> str:
        """One summary call; what it cost goes to ``req.usage`` (the user pays for it).

        The call is sent as a view with nothing stable: no later call repeats it, so a
        provider should not pay for writing it to its prompt cache.
        """
        chunks: list[str] = []
        finish: str | None = None
        view = ModelView(conversation, stable=0)
        async for delta in provider.stream(view, settings=self.settings):
            if isinstance(delta, TextDelta):
                chunks.append(delta.text)
            elif isinstance(delta, FinishDelta):
                finish = delta.reason
            elif isinstance(delta, UsageDelta) and req.usage is not None:
                req.usage.add(delta.usage)
        text = "".join(chunks).strip()
        if finish == "length":
            raise ValueError("summary was truncated at the output token limit")
        if not text:
            raise ValueError("summarizer returned empty text")
        return text

    def _missing_sections(self, summary: str) -> list[str]:
        if not self.required_sections:
            return []
        lowered = summary.lower()
        return [s for s in self.required_sections if s.lower() not in lowered]


__all__ = ["LLMSummarizer", "Summarizer", "transcript_to_text"]
