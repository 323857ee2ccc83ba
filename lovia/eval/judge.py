"""``llm_judge``: a rubric graded by a model — an ``Agent(output_type=Verdict)`` underneath."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from lovia.eval.checks import Check, CheckResult
from lovia.exceptions import UserError
from lovia.parts import text_of
from lovia.providers.base import ModelSettings
from lovia.runtime.result import RunResult
from lovia.transcript import InputEntry, to_json_safe

if TYPE_CHECKING:
    from lovia.providers.base import Provider

JUDGE_MODEL_ENV = "LOVIA_EVAL_JUDGE_MODEL"

JUDGE_INSTRUCTIONS = """You are an impartial grader of an AI assistant's answer.
You receive a rubric, the user's input and the assistant's output. Judge the output only \
against the rubric: ignore style, length and anything the rubric does not ask about, and do \
not reward an answer for merely sounding confident.
Give a score from 0.0 to 1.0 and use the whole range: 1.0 fully meets the rubric, 0.0 misses it \
entirely, values in between for partial credit.
Explain the score in one or two sentences."""


class Verdict(BaseModel):
    """The judge's structured reply."""

    score: float = Field(ge=0.0, le=1.0, description="How well the output meets the rubric.")
    reasoning: str = Field(description="One or two sentences explaining the score.")


def _input_text(result: RunResult) -> str:
    texts = [
        text_of(e.content) for e in result.entries if isinstance(e, InputEntry) and e.role == "user"
    ]
    return "\n\n".join(texts)


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    data = to_json_safe(output)
    if data is None and output is not None:
        return repr(output)
    return json.dumps(data, ensure_ascii=False, indent=2)


def judge_prompt(rubric: str, result: RunResult) -> str:
    """The one user message a judgement sends: rubric, input and output in tagged blocks."""
    return (
        f"<rubric>\n{rubric}\n</rubric>\n\n"
        f"<input>\n{_input_text(result)}\n</input>\n\n"
        f"<output>\n{_output_text(result.output)}\n</output>"
    )


def llm_judge(
    rubric: str,
    *,
    model: str | Provider | None = None,
    threshold: float = 0.7,
    name: str = "llm_judge",
) -> Check:
    """A check graded by a model against ``rubric``; passes when ``score >= threshold``.

    The model is resolved now (``model`` or env ``LOVIA_EVAL_JUDGE_MODEL``) but nothing is
    contacted until the check runs; it never falls back to the agent under test.
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [0, 1], got {threshold}")
    resolved: str | Provider | None = model
    if resolved is None:
        resolved = os.environ.get(JUDGE_MODEL_ENV, "").strip() or None
    if resolved is None:
        raise UserError(
            "llm_judge has no model configured",
            hint=f"Pass llm_judge(..., model='vendor:model') or set {JUDGE_MODEL_ENV}.",
        )
    from lovia.agent import Agent
    from lovia.context.policy import NoopContextPolicy

    judge: Agent[None] = Agent(
        name="lovia-eval-judge",
        instructions=JUDGE_INSTRUCTIONS,
        model=resolved,
        output_type=Verdict,
        settings=ModelSettings(temperature=0.0),
        context_policy=NoopContextPolicy(),
    )

    async def check(result: RunResult) -> CheckResult:
        from lovia.runner import Runner

        run = await Runner.run(judge, judge_prompt(rubric, result))
        verdict = run.output
        if not isinstance(verdict, Verdict):
            verdict = Verdict.model_validate(verdict)
        return CheckResult(
            name, verdict.score >= threshold, score=verdict.score, reason=verdict.reasoning
        )

    check.__name__ = name
    check.__qualname__ = name
    return check


__all__ = ["JUDGE_INSTRUCTIONS", "JUDGE_MODEL_ENV", "Verdict", "judge_prompt", "llm_judge"]
