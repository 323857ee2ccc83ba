"""An approval's answer: one object from ``lovia/approve`` (or the editor's own UI, a session
rule, the timeout, a cancel) to the waiting tool call.

The broker builds it once and settles the run's approval with it
(``ApprovalRequired.approve(answer=...)``); lovia core hands it to the approved call as
``current_approval``, so what the user approved instead of the proposal (the reviewed files)
reaches the tool with the answer, not through a table keyed by call id.
"""

from __future__ import annotations

from dataclasses import dataclass

from lovia import events
from lovia_server.protocol import ApprovalBy, ApprovalChoice, ApprovalOutcome


@dataclass(frozen=True)
class ReviewedFile:
    """One file of a reviewed edit: before the call, the tool's proposal, what was approved."""

    path: str
    old_text: str | None
    proposed: str
    applied: str


@dataclass(frozen=True)
class ApprovalAnswer:
    """The wire's ``ApprovalChoice``, the message a rejection tells the model, who answered,
    and (``lovia/approve`` edits) the user's version of the files, when it differs."""

    decision: ApprovalChoice
    message: str | None = None
    by: ApprovalBy = "user"
    cancelled: bool = False
    edits: tuple[ReviewedFile, ...] | None = None
    shown: tuple[ReviewedFile, ...] | None = None
    """The files as the approval card showed them (its text, the proposal), with an allowing
    answer from ``lovia/approve``: an approved ``write_file`` lands as a merge over a file the
    user changed after the card appeared (``host/reviewed_edits.py``)."""

    @property
    def outcome(self) -> ApprovalOutcome:
        if self.cancelled:
            return "cancelled"
        return "allowed" if self.decision.allows else "rejected"

    def apply(self, ev: events.ApprovalRequired) -> None:
        """Let the waiting tool call run (this answer goes with it), or decline it with the
        message."""
        if self.outcome == "allowed":
            ev.approve(answer=self)
        else:
            ev.reject(self.message, answer=self)


CANCELLED_ANSWER = ApprovalAnswer(ApprovalChoice.REJECT_ONCE, cancelled=True)

TIMED_OUT_ANSWER = ApprovalAnswer(
    ApprovalChoice.REJECT_ONCE, "The approval timed out.", by="policy"
)


__all__ = ["CANCELLED_ANSWER", "TIMED_OUT_ANSWER", "ApprovalAnswer", "ReviewedFile"]
