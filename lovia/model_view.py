"""What one model call sees, with what the run loop knows about it that a provider cannot.

A provider gets the entries of a call and nothing else. For prompt caching it needs three
facts only the loop has: which leading entries the next call will send again unchanged (the
per-turn reminders of view injectors come after them and must stay out of a cached prefix),
which conversation the call belongs to (providers route one conversation to one cache), and
whether a context policy rewrote the history for this call (then a cache miss is expected).

:class:`ModelView` is a plain list of entries carrying those facts, so a provider that does not
care, or a third-party one, sees an ordinary sequence. The helpers below answer for any
sequence, giving the neutral answer when the entries did not come from the loop.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lovia.transcript import TranscriptEntry


class ModelView(list[TranscriptEntry]):
    """The entries of one model call.

    ``stable``: how many leading entries repeat verbatim on the next call (the rest are added
    for this call only). ``conversation``: an id shared by every call of one conversation (the
    session id, else the run's). ``rewritten``: a context policy changed the history this call.
    """

    __slots__ = ("conversation", "rewritten", "stable")

    def __init__(
        self,
        entries: Iterable[TranscriptEntry] = (),
        *,
        stable: int | None = None,
        conversation: str | None = None,
        rewritten: bool = False,
    ) -> None:
        super().__init__(entries)
        self.stable = len(self) if stable is None else max(0, min(stable, len(self)))
        self.conversation = conversation
        self.rewritten = rewritten


def stable_count(entries: Sequence[TranscriptEntry]) -> int:
    """How many leading entries a cache breakpoint may cover (all of them for a plain list)."""
    if isinstance(entries, ModelView):
        return min(entries.stable, len(entries))
    return len(entries)


def conversation_of(entries: Sequence[TranscriptEntry]) -> str | None:
    """The conversation id the loop attached, if any."""
    return entries.conversation if isinstance(entries, ModelView) else None


def was_rewritten(entries: Sequence[TranscriptEntry]) -> bool:
    """Whether a context policy rewrote the history for this call (a cache miss is expected)."""
    return isinstance(entries, ModelView) and entries.rewritten


__all__ = ["ModelView", "conversation_of", "stable_count", "was_rewritten"]
