"""llm_judge against a scripted judge model: offline and deterministic."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from lovia import Agent, RunResult, Usage, UserError
from lovia.eval import Case, Verdict, evaluate, llm_judge, run_check
from lovia.eval.judge import JUDGE_INSTRUCTIONS, judge_prompt
from lovia.parts import ImagePart, TextPart
from lovia.testing import ScriptedProvider, text
from lovia.transcript import InputEntry

from .helpers import make_result


def verdict(score: float, reasoning: str = "because") -> str:
    return json.dumps({"score": score, "reasoning": reasoning})


def question(output: object, q: str = "What is the capital?") -> RunResult:
    return make_result(output, entries=[InputEntry(role="user", content=q)])


def test_verdict_bounds():
    assert Verdict(score=0.0, reasoning="").score == 0.0
    assert Verdict(score=1.0, reasoning="").score == 1.0
    for bad in (-0.01, 1.01):
        with pytest.raises(ValidationError):
            Verdict(score=bad, reasoning="x")


async def test_judge_passes_at_threshold_and_fails_below():
    judge = llm_judge(
        "Names the capital.",
        model=ScriptedProvider([text(verdict(0.9, "names Paris"))]),
        threshold=0.9,
    )
    assert judge.__name__ == "llm_judge"
    r = await run_check(judge, question("Paris."))
    assert (r.name, r.passed, r.score, r.reason) == ("llm_judge", True, 0.9, "names Paris")

    low = llm_judge("rubric", model=ScriptedProvider([text(verdict(0.69, "meh"))]))
    r = await run_check(low, question("x"))
    assert (r.passed, r.score, r.reason) == (False, 0.69, "meh")


async def test_judge_agent_setup_and_prompt_blocks():
    provider = ScriptedProvider([text(verdict(1.0))])
    judge = llm_judge("Mentions the Seine river.", model=provider)
    result = make_result(
        "The Seine flows through Paris.",
        entries=[
            InputEntry(role="system", content="be brief"),
            InputEntry(role="user", content="first question"),
            InputEntry(role="user", content=[TextPart("second "), TextPart("question")]),
        ],
    )
    await run_check(judge, result)
    (messages,) = provider.calls
    system, prompt = messages
    assert system.role == "system" and system.text.startswith(JUDGE_INSTRUCTIONS)
    assert "impartial" in JUDGE_INSTRUCTIONS and "0.0 to 1.0" in JUDGE_INSTRUCTIONS
    assert prompt.role == "user"
    assert prompt.text == (
        "<rubric>\nMentions the Seine river.\n</rubric>\n\n"
        "<input>\nfirst question\n\nsecond question\n</input>\n\n"
        "<output>\nThe Seine flows through Paris.\n</output>"
    )
    assert "be brief" not in prompt.text


def test_judge_prompt_renders_structured_and_opaque_outputs():
    class Answer(BaseModel):
        city: str

    rendered = judge_prompt("r", question(Answer(city="Paris")))
    assert '"city": "Paris"' in rendered
    rendered = judge_prompt(
        "r", make_result(object(), entries=[InputEntry("user", [ImagePart(url="u")])])
    )
    assert "<object object at" in rendered and "<input>\n[image]\n</input>" in rendered


async def test_judge_settings_and_output_repair():
    provider = ScriptedProvider([text("hmm, let me think"), text(verdict(0.8, "ok"))])
    judge = llm_judge("rubric", model=provider, threshold=0.7)
    r = await run_check(judge, question("x"))
    assert r.passed and r.score == 0.8 and len(provider.calls) == 2
    # the repair turn re-asks inside the same judge run
    assert provider.calls[1][-1].role == "user"


async def test_each_evaluation_is_a_fresh_judge_run():
    provider = ScriptedProvider([text(verdict(0.2, "one")), text(verdict(0.9, "two"))])
    judge = llm_judge("rubric", model=provider)
    first = await run_check(judge, question("a"))
    second = await run_check(judge, question("b"))
    assert (first.reason, second.reason) == ("one", "two")
    assert [len(c) for c in provider.calls] == [2, 2]  # system + prompt each, no history


async def test_judge_failure_surfaces_through_run_check():
    judge = llm_judge("rubric", model=ScriptedProvider([]), name="quality")
    assert judge.__name__ == "quality"
    r = await run_check(judge, question("x"))
    assert not r.passed and r.name == "quality"
    assert r.reason.startswith("check raised AssertionError: ScriptedProvider ran out")


async def test_judge_inside_evaluate():
    def factory() -> Agent[None]:
        return Agent(name="poet", model=ScriptedProvider([text("An ode to spring")]))

    judge = llm_judge(
        "A poem about spring.", model=ScriptedProvider([text(verdict(0.4, "too terse"))])
    )
    report = await evaluate(factory, Case("write a poem", checks=[judge]))
    assert not report.passed
    check = report.cases[0].samples[0].checks[0]
    assert (check.name, check.score, check.reason) == ("llm_judge", 0.4, "too terse")
    assert "llm_judge (score 0.40) — too terse" in str(report)


def test_threshold_validation():
    for bad in (1.2, -0.1):
        with pytest.raises(ValueError):
            llm_judge("rubric", model="openai:gpt-x", threshold=bad)
    llm_judge("rubric", model="openai:gpt-x", threshold=0.0)
    llm_judge("rubric", model="openai:gpt-x", threshold=1.0)


def test_model_from_env_without_io(monkeypatch: pytest.MonkeyPatch):
    import lovia.providers as providers

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the factory must not build a provider")

    monkeypatch.setattr(providers, "provider_from_string", forbidden)
    monkeypatch.setenv("LOVIA_EVAL_JUDGE_MODEL", "anthropic:claude-fable-5")
    check = llm_judge("rubric")
    assert check.__name__ == "llm_judge"


def test_no_model_configured(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("LOVIA_EVAL_JUDGE_MODEL", raising=False)
    monkeypatch.setenv("LOVIA_MODEL", "openai:never-used")
    with pytest.raises(UserError, match="llm_judge has no model configured"):
        llm_judge("rubric")
    monkeypatch.setenv("LOVIA_EVAL_JUDGE_MODEL", "   ")
    with pytest.raises(UserError, match="llm_judge has no model configured"):
        llm_judge("rubric")


async def test_explicit_model_wins_over_env(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("LOVIA_EVAL_JUDGE_MODEL", "openai:not-this-one")
    provider = ScriptedProvider([text(verdict(1.0))])
    r = await run_check(llm_judge("rubric", model=provider), question("x"))
    assert r.passed and len(provider.calls) == 1


async def test_judge_usage_is_not_charged_to_the_sample():
    judge = llm_judge("rubric", model=ScriptedProvider([text(verdict(1.0))]))
    report = await evaluate(
        Agent(name="a", model=ScriptedProvider([text("hi")])), Case("q", checks=[judge])
    )
    assert report.cases[0].samples[0].usage == Usage(input_tokens=1, output_tokens=1)
