"""The question broker: an ``ask_human`` question of a live run, from the tool to the user.

The tool asks through the ``HumanChannel``; the broker shows each question in its run's stream
(``question.requested``) and hands the answer back through the channel, whichever front door
it came from. A question whose run ends is cancelled.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from lovia.tools.human import HumanChannel, HumanQuestion
from lovia_server import protocol as p
from lovia_server.host.ports import EditorPort
from lovia_server.host.run_controller import RunController, RunTable, report_progress
from lovia_server.host.store import run_of_checkpoint
from lovia_server.protocol import QuestionAnswered, QuestionRequested

logger = logging.getLogger("lovia_server.host.supervisor")


@dataclass(frozen=True)
class PendingQuestion:
    """A question a live run waits on, as a front door needs it to ask the user."""

    question_id: str
    run_id: str
    session_id: str
    tool_call_id: str | None
    """The ``ask_human`` call that asked, when the run's stream has shown it."""


class QuestionBroker:
    """Questions of live runs (on their controllers), and which run asked each."""

    def __init__(self, channel: HumanChannel, runs: RunTable, editor: EditorPort) -> None:
        self.channel = channel
        self.runs = runs
        self.editor = editor
        self._run_of: dict[str, str] = {}  # question id -> the run that asked

    async def serve(self) -> None:
        """Show each ``ask_human`` question of a live run until the channel closes."""
        try:
            async for question in self.channel.questions():
                self.asked(question.run_id, question)
        except asyncio.CancelledError:
            pass
        except Exception:
            logger.exception("questions.consumer_failed")

    def asked(self, run_id: str | None, question: HumanQuestion) -> None:
        # the asking tool sees the leg's checkpoint key (``r_x~1`` after a steered answer)
        ctl = self.runs.get(run_of_checkpoint(run_id or ""))
        if ctl is None:
            return
        ctl.questions.add(question.id)
        self._run_of[question.id] = ctl.run_id
        ctl.log.emit(
            QuestionRequested(
                question_id=question.id,
                text=question.question,
                choices=[o.label for o in question.options] if question.options else None,
                multi_select=bool(question.multi_select) if question.options else None,
                subagent=ctl.subagent,
            )
        )
        report_progress(self.editor, "report", ctl.run_id, "Waiting for your answer")

    def answer(self, ctl: RunController, question_id: str, answer: str) -> p.AnswerResult:
        if question_id not in ctl.questions:
            raise p.ProtocolError(
                p.APPROVAL_NOT_FOUND,
                f"No pending question {question_id}",
                {"questionId": question_id},
            )
        self.channel.answer(question_id, answer)
        self._answered(ctl, question_id, answer)
        return p.AnswerResult(question_id=question_id)

    def _answered(self, ctl: RunController, question_id: str, answer: str) -> None:
        ctl.questions.discard(question_id)
        self._run_of.pop(question_id, None)
        ctl.log.emit(QuestionAnswered(question_id=question_id, answer=answer))

    def cancel_all(self, ctl: RunController) -> None:
        for question_id in list(ctl.questions):
            ctl.questions.discard(question_id)
            self._run_of.pop(question_id, None)
            self.channel.cancel(question_id, "The run was cancelled.")

    def pending(self, question_id: str) -> PendingQuestion | None:
        ctl = self.runs.get(self._run_of.get(question_id, ""))
        if ctl is None or question_id not in ctl.questions:
            return None
        asked = next((q for q in self.channel.pending if q.id == question_id), None)
        call_id = asked.tool_call_id if asked is not None else None
        return PendingQuestion(
            question_id=question_id,
            run_id=ctl.run_id,
            session_id=ctl.session_id,
            tool_call_id=call_id if call_id in ctl.stream.calls else None,
        )


__all__ = ["PendingQuestion", "QuestionBroker"]
