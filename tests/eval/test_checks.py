"""Deterministic checks and composition, against hand-built RunResults."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from pydantic import BaseModel

import lovia.eval as ev
from lovia import RunResult, Usage
from lovia.eval import (
    CheckResult,
    all_of,
    any_of,
    contains,
    equals,
    matches,
    max_tokens,
    max_turns,
    no_error,
    not_contains,
    regex,
    run_check,
    tool_called,
    tool_not_called,
    weighted,
)
from lovia.transcript import ToolCallEntry, ToolResultEntry

from .helpers import make_result


def test_exports():
    expected = {
        "AgentSource", "Case", "CaseResult", "Check", "CheckResult", "Diff", "Report",
        "SampleResult", "Verdict", "all_of", "any_of", "contains", "equals", "evaluate",
        "llm_judge", "matches", "max_tokens", "max_turns", "no_error", "not_contains", "regex",
        "run_check", "tool_called", "tool_not_called", "weighted",
    }  # fmt: skip
    assert set(ev.__all__) == expected
    assert all(hasattr(ev, name) for name in expected)


# --------------------------------------------------------------------------- names


def test_factory_names_are_stamped():
    def is_short(output: Any) -> bool:
        return len(str(output)) < 10

    assert contains("Paris").__name__ == "contains('Paris')"
    assert not_contains("x").__name__ == "not_contains('x')"
    assert regex(r"\d+").__name__ == "regex('\\\\d+')"
    assert equals(42).__name__ == "equals(42)"
    assert equals("y" * 60).__name__ == "equals('" + "y" * 38 + "…)"
    assert matches({"a": 1}).__name__ == "matches({'a': 1})"
    assert matches(is_short).__name__ == "matches(is_short)"
    assert matches(lambda o: True).__name__ == "matches(<lambda>)"
    assert tool_called("search").__name__ == "tool_called('search')"
    assert tool_not_called("search").__name__ == "tool_not_called('search')"
    assert max_turns(3).__name__ == "max_turns(3)"
    assert max_tokens(100).__name__ == "max_tokens(100)"
    assert no_error().__name__ == "no_error"


async def test_result_names_match_factory_names():
    result = make_result("Paris")
    for check in (contains("Paris"), regex("P"), no_error(), max_turns(1), equals("Paris")):
        assert (await run_check(check, result)).name == check.__name__


def test_matches_predicate_without_name():
    class Pred:
        def __call__(self, output: Any) -> bool:
            return True

    assert matches(Pred()).__name__ == "matches(predicate)"


# --------------------------------------------------------------------------- run_check


async def test_run_check_normalises_outcomes():
    def cites_source(result: RunResult) -> bool:
        return "http" in str(result.output)

    async def slow(result: RunResult) -> int:
        return 0

    def scored(result: RunResult) -> CheckResult:
        return CheckResult(name="custom", passed=True, score=0.5, reason="why")

    r = await run_check(cites_source, make_result("see https://x.dev"))
    assert r == CheckResult("cites_source", True)
    assert await run_check(slow, make_result()) == CheckResult("slow", False)
    assert await run_check(scored, make_result()) == CheckResult("custom", True, 0.5, "why")


async def test_run_check_contains_exceptions():
    def broken(result: RunResult) -> bool:
        raise KeyError("oops")

    class Callable_:
        async def __call__(self, result: RunResult) -> bool:
            raise ValueError("bad")

    r = await run_check(broken, make_result())
    assert r == CheckResult("broken", False, reason="check raised KeyError: 'oops'")
    r = await run_check(Callable_(), make_result())
    assert r.name == "Callable_" and r.reason == "check raised ValueError: bad"


# --------------------------------------------------------------------------- output checks


async def test_contains_and_not_contains():
    assert (await run_check(contains("Paris"), make_result("Paris is big"))).passed
    r = await run_check(contains("Paris"), make_result("London.\nRainy."))
    assert not r.passed and r.reason == "not found in output: London.\\nRainy."
    assert (await run_check(contains("42"), make_result(42))).passed
    assert (await run_check(contains("PARIS", ignore_case=True), make_result("paris"))).passed
    assert not (await run_check(contains("PARIS"), make_result("paris"))).passed

    assert (await run_check(not_contains("sorry"), make_result("fine"))).passed
    r = await run_check(not_contains("SORRY", ignore_case=True), make_result("I'm sorry"))
    assert not r.passed and r.reason == "found in output: I'm sorry"


async def test_failure_reasons_are_snipped_to_120_chars():
    r = await run_check(contains("zzz"), make_result("a" * 500))
    snip = r.reason.removeprefix("not found in output: ")
    assert len(snip) == 120 and snip == "a" * 119 + "…"
    r = await run_check(contains("zzz"), make_result("b" * 120))
    assert r.reason.removeprefix("not found in output: ") == "b" * 120


async def test_regex():
    assert (await run_check(regex(r"\b\d{4}\b"), make_result("year 2026"))).passed
    r = await run_check(regex(r"^\d+$"), make_result("abc"))
    assert not r.passed and r.reason == "no match in output: abc"
    check = regex("^paris", flags=re.IGNORECASE | re.MULTILINE)
    assert (await run_check(check, make_result("hello\nParis"))).passed
    compiled = regex(re.compile("x+"))
    assert compiled.__name__ == "regex('x+')"
    assert (await run_check(compiled, make_result("axxb"))).passed


class City(BaseModel):
    name: str
    country: str
    population: int


@dataclasses.dataclass
class Point:
    x: int
    y: int


async def test_equals():
    assert (await run_check(equals(42), make_result(42))).passed
    r = await run_check(equals(42), make_result(43))
    assert not r.passed and r.reason == "got: 43"
    city = City(name="Lisbon", country="PT", population=1)
    assert (await run_check(equals(city.model_copy()), make_result(city))).passed
    r = await run_check(equals("a"), make_result("b"))
    assert r.reason == "got: 'b'"


async def test_matches_mapping_subset():
    city = City(name="Lisbon", country="PT", population=545_000)
    assert (await run_check(matches({"name": "Lisbon"}), make_result(city))).passed
    r = await run_check(matches({"name": "Porto"}), make_result(city))
    assert not r.passed
    assert r.reason == "got: {'name': 'Lisbon', 'country': 'PT', 'population': 545000}"
    assert not (await run_check(matches({"mayor": "x"}), make_result(city))).passed
    assert (await run_check(matches({"x": 1}), make_result(Point(1, 2)))).passed

    nested = {"user": {"name": "Ada", "tags": ["a", "b"], "pets": [{"k": 1, "n": 2}]}, "extra": 1}
    assert (await run_check(matches({"user": {"name": "Ada"}}), make_result(nested))).passed
    assert (await run_check(matches({"user": {"tags": ["a", "b"]}}), make_result(nested))).passed
    assert (await run_check(matches({"user": {"pets": [{"k": 1}]}}), make_result(nested))).passed
    assert not (await run_check(matches({"user": {"tags": ["a"]}}), make_result(nested))).passed
    assert not (await run_check(matches({"user": {"tags": "ab"}}), make_result(nested))).passed
    assert not (await run_check(matches({"user": "Ada"}), make_result(nested))).passed
    r = await run_check(matches({"a": 1}), make_result("plain text"))
    assert not r.passed and r.reason == "got: plain text"


async def test_matches_unconvertible_output_falls_back_to_the_raw_value():
    class Opaque:
        def __init__(self) -> None:
            self.a = 1

    r = await run_check(matches({"a": 1}), make_result(Opaque()))
    assert not r.passed and "Opaque object" in r.reason


async def test_matches_predicate():
    def is_short(output: Any) -> bool:
        return len(str(output)) < 10

    assert (await run_check(matches(is_short), make_result("tiny"))).passed
    r = await run_check(matches(is_short), make_result("x" * 20))
    assert not r.passed and r.reason == "predicate rejected: " + "x" * 20


# --------------------------------------------------------------------------- behaviour checks


def tool_entries(error: bool = False) -> list[Any]:
    return [
        ToolCallEntry(call_id="1", name="search", arguments="{}"),
        ToolResultEntry(call_id="1", output="ok"),
        ToolCallEntry(call_id="2", name="fetch", arguments="{}"),
        ToolResultEntry(call_id="2", output="boom\nline two", is_error=error),
        ToolCallEntry(call_id="3", name="fetch", arguments="{}"),
        ToolResultEntry(call_id="3", output="again", is_error=error),
    ]


async def test_tool_checks():
    result = make_result(entries=tool_entries())
    assert (await run_check(tool_called("search"), result)).passed
    r = await run_check(tool_called("write"), result)
    assert not r.passed and r.reason == "tool was never called"
    assert (await run_check(tool_not_called("write"), result)).passed
    r = await run_check(tool_not_called("fetch"), result)
    assert not r.passed and r.reason == "tool was called"


async def test_limits():
    assert (await run_check(max_turns(3), make_result(turns=3))).passed
    r = await run_check(max_turns(3), make_result(turns=4))
    assert not r.passed and r.reason == "took 4 turns"
    usage = Usage(input_tokens=60, output_tokens=40)
    assert (await run_check(max_tokens(100), make_result(usage=usage))).passed
    r = await run_check(max_tokens(99), make_result(usage=usage))
    assert not r.passed and r.reason == "used 100 tokens"


async def test_no_error():
    assert (await run_check(no_error(), make_result(entries=tool_entries()))).passed
    r = await run_check(no_error(), make_result(entries=tool_entries(error=True)))
    assert not r.passed and r.reason == "2 tool error(s): boom\\nline two"


# --------------------------------------------------------------------------- composition


async def test_all_of():
    result = make_result("Paris, 2026")
    assert (await run_check(all_of(contains("Paris"), regex(r"\d{4}")), result)).passed
    assert (await run_check(all_of(), result)).passed

    def bare(result: RunResult) -> bool:
        return False

    r = await run_check(all_of(contains("London"), bare, contains("Paris")), result)
    assert not r.passed and r.name == "all_of"
    assert r.reason == "contains('London'): not found in output: Paris, 2026; bare: failed"
    named = all_of(contains("x"), name="sanity")
    assert named.__name__ == "sanity"
    assert (await run_check(named, make_result("x"))).name == "sanity"


async def test_all_of_runs_every_check_in_order():
    order: list[str] = []

    def first(result: RunResult) -> bool:
        order.append("first")
        return False

    async def second(result: RunResult) -> bool:
        order.append("second")
        return True

    await run_check(all_of(first, second), make_result())
    assert order == ["first", "second"]


async def test_any_of():
    result = make_result("Paris")
    assert (await run_check(any_of(contains("London"), contains("Paris")), result)).passed
    r = await run_check(any_of(contains("London"), contains("Rome")), result)
    assert not r.passed
    assert r.reason == "no alternative passed: contains('London'); contains('Rome')"
    r = await run_check(any_of(), result)
    assert not r.passed and r.reason == "no checks provided" and r.name == "any_of"


async def test_weighted():
    def half(result: RunResult) -> CheckResult:
        return CheckResult(name="half", passed=True, score=0.5)

    r = await run_check(weighted({contains("Paris"): 1.0, half: 1.0}), make_result("Paris"))
    assert r.passed and r.score == 0.75 and r.name == "weighted"
    assert r.reason == "contains('Paris')=1.00, half=0.50"
    strict = weighted({contains("Paris"): 1.0, half: 1.0}, threshold=0.8)
    assert not (await run_check(strict, make_result("Paris"))).passed
    skewed = weighted({contains("Paris"): 3.0, half: 1.0}, threshold=0.0, name="w")
    r = await run_check(skewed, make_result("Paris"))
    assert r.score == 0.875 and r.name == "w"


async def test_weighted_raising_or_failing_child_counts_zero():
    def broken(result: RunResult) -> bool:
        raise RuntimeError("boom")

    r = await run_check(
        weighted({contains("x"): 1.0, broken: 1.0}, threshold=0.4), make_result("x")
    )
    assert r.score == 0.5 and r.passed and r.reason == "contains('x')=1.00, broken=0.00"
    r = await run_check(weighted({contains("y"): 1.0}), make_result("x"))
    assert r.score == 0.0 and not r.passed


def test_weighted_validation():
    with pytest.raises(ValueError):
        weighted({})
    with pytest.raises(ValueError):
        weighted({contains("x"): 0.0})
    with pytest.raises(ValueError):
        weighted({contains("x"): 2.0, contains("y"): -0.5})
    with pytest.raises(ValueError):
        weighted({contains("x"): 1.0}, threshold=1.5)
    with pytest.raises(ValueError):
        weighted({contains("x"): 1.0}, threshold=-0.1)
