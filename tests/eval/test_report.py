"""Report aggregation, JSON round trip, baseline diff and rendering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

from lovia import Usage
from lovia.eval import CaseResult, CheckResult, Diff, Report, SampleResult


def sample(passed: bool = True, **kwargs: object) -> SampleResult:
    checks = [CheckResult(name="c", passed=passed, reason="" if passed else "nope")]
    return SampleResult(checks=checks, **kwargs)  # type: ignore[arg-type]


def case(name: str, *passes: bool, threshold: float = 1.0) -> CaseResult:
    return CaseResult(name=name, samples=[sample(p) for p in passes], pass_threshold=threshold)


# --------------------------------------------------------------------------- aggregation


def test_sample_passed():
    assert SampleResult().passed
    assert sample(True).passed and not sample(False).passed
    assert not SampleResult(error="boom").passed
    assert not sample(True, error="late failure").passed
    defaults = SampleResult()
    assert (defaults.output, defaults.turns, defaults.latency, defaults.cost) == (
        None,
        0,
        0.0,
        None,
    )
    assert defaults.usage == Usage() and defaults.checks == []


def test_case_pass_rate_and_threshold():
    c = case("x", True, True, False, threshold=0.6)
    assert c.pass_rate == pytest.approx(2 / 3) and c.passed
    assert not case("x", True, False).passed
    assert case("x", True, False, threshold=0.5).passed
    empty = CaseResult(name="empty", samples=[])
    assert empty.pass_rate == 0.0 and not empty.passed
    assert not CaseResult(name="empty", samples=[], pass_threshold=0.0).passed
    assert CaseResult(name="m", samples=[]).metadata == {}


def test_pass_at_k():
    c = case("x", True, False, False, False)
    assert c.pass_at_k(1) == pytest.approx(0.25)
    assert c.pass_at_k(2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2)
    assert c.pass_at_k(3) == pytest.approx(0.75)  # 1 - C(3,3)/C(4,3)
    assert c.pass_at_k(4) == 1.0
    assert case("y", False, False).pass_at_k(2) == 0.0
    with pytest.raises(ValueError, match=r"k must be in 1\.\.4, got 5"):
        c.pass_at_k(5)
    with pytest.raises(ValueError, match=r"k must be in 1\.\.4, got 0"):
        c.pass_at_k(0)
    with pytest.raises(ValueError, match=r"k must be in 1\.\.0, got 1"):
        CaseResult(name="e", samples=[]).pass_at_k(1)


def test_report_aggregates():
    report = Report(cases=[case("a", True), case("b", False)])
    assert not report.passed and report.pass_rate == 0.5
    assert Report(cases=[case("a", True)]).passed
    assert Report(cases=[]).passed and Report(cases=[]).pass_rate == 1.0


# --------------------------------------------------------------------------- serialisation


class Out(BaseModel):
    n: int


def full_report() -> Report:
    return Report(
        cases=[
            CaseResult(
                name="structured",
                pass_threshold=0.5,
                metadata={"suite": "smoke", "odd": object()},
                samples=[
                    SampleResult(
                        checks=[CheckResult(name="c", passed=True, score=0.9, reason="fine")],
                        output=Out(n=7),
                        turns=2,
                        usage=Usage(input_tokens=10, output_tokens=5, cache_read_tokens=3),
                        latency=1.5,
                        cost=0.01,
                    ),
                    SampleResult(error="ProviderError: 500"),
                ],
            )
        ]
    )


def test_to_dict_shape():
    data = full_report().to_dict()
    assert list(data) == ["schema_version", "passed", "pass_rate", "cases"]
    assert data["schema_version"] == 1 and data["passed"] is True and data["pass_rate"] == 1.0
    (c,) = data["cases"]
    assert list(c) == ["name", "passed", "pass_rate", "pass_threshold", "metadata", "samples"]
    assert c["metadata"]["suite"] == "smoke" and "object object" in c["metadata"]["odd"]
    ok, bad = c["samples"]
    assert ok == {
        "passed": True,
        "output": {"n": 7},
        "turns": 2,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_read_tokens": 3,
            "cache_write_tokens": 0,
        },
        "latency": 1.5,
        "cost": 0.01,
        "error": None,
        "checks": [{"name": "c", "passed": True, "score": 0.9, "reason": "fine"}],
    }
    assert bad["passed"] is False and bad["error"] == "ProviderError: 500" and bad["checks"] == []
    json.dumps(data)  # JSON-safe throughout


def test_round_trip(tmp_path: Path):
    report = full_report()
    path = tmp_path / "baseline.json"
    report.save(path)
    raw = path.read_text(encoding="utf-8")
    assert raw.endswith("}\n") and raw.startswith('{\n  "schema_version": 1')
    loaded = Report.load(path)
    assert loaded.passed == report.passed
    (lcase,) = loaded.cases
    assert (lcase.name, lcase.pass_threshold) == ("structured", 0.5)
    assert lcase.pass_rate == report.cases[0].pass_rate
    ok, bad = lcase.samples
    assert ok.output == {"n": 7}
    assert ok.usage == Usage(input_tokens=10, output_tokens=5, cache_read_tokens=3)
    assert ok.checks == [CheckResult(name="c", passed=True, score=0.9, reason="fine")]
    assert (ok.turns, ok.latency, ok.cost) == (2, 1.5, 0.01)
    assert bad.error == "ProviderError: 500" and not bad.passed
    assert loaded.to_dict() == json.loads(raw)


def test_unserializable_output_falls_back_to_repr():
    report = Report(cases=[CaseResult(name="x", samples=[SampleResult(output=object())])])
    assert "object object" in report.to_dict()["cases"][0]["samples"][0]["output"]


def test_from_dict_versions():
    assert Report.from_dict({"cases": []}).cases == []
    assert Report.from_dict({"schema_version": 1, "cases": []}).cases == []
    with pytest.raises(ValueError, match="unsupported report schema_version"):
        Report.from_dict({"schema_version": 2, "cases": []})


# --------------------------------------------------------------------------- baseline diff


def test_compare():
    baseline = Report(
        cases=[case("a", True), case("b", False), case("gone", True), case("z", True)]
    )
    current = Report(
        cases=[
            case("z", True),
            case("new", True),
            case("b", True),
            case("a", False),
            case("c", True),
        ]
    )
    diff = current.compare(baseline)
    assert diff == Diff(regressions=["a"], improvements=["b"], added=["new", "c"], removed=["gone"])
    assert not diff.ok and not diff
    assert str(diff) == (
        "baseline: REGRESSIONS\n  regressed: a\n  improved: b\n  added: c, new\n  removed: gone"
    )


def test_compare_without_regressions():
    diff = Report(cases=[case("a", True), case("b", True)]).compare(
        Report(cases=[case("a", False)])
    )
    assert diff.ok and bool(diff)
    assert str(diff) == "baseline: ok\n  improved: a\n  added: b"


def test_compare_clean():
    report = Report(cases=[case("a", True), case("b", False)])
    diff = report.compare(report)
    assert diff.ok and bool(diff) and str(diff) == "baseline: no changes"


def test_compare_rejects_duplicate_names():
    dup = Report(cases=[case("a", True), case("a", False)])
    clean = Report(cases=[case("a", True)])
    with pytest.raises(ValueError, match=r"duplicate case names in current report: \['a'\]"):
        dup.compare(clean)
    with pytest.raises(ValueError, match=r"duplicate case names in baseline report: \['a'\]"):
        clean.compare(dup)


# --------------------------------------------------------------------------- rendering


def test_report_str():
    report = Report(
        cases=[
            CaseResult(
                name="passing-case",
                samples=[
                    sample(True, usage=Usage(input_tokens=1000, output_tokens=234), latency=1.25),
                    sample(True, latency=0.5),
                ],
            ),
            CaseResult(
                name="failing-case",
                samples=[
                    SampleResult(
                        checks=[
                            CheckResult(name="ok", passed=True),
                            CheckResult(
                                name="llm_judge", passed=False, score=0.4, reason="too terse"
                            ),
                        ]
                    )
                ],
            ),
        ]
    )
    assert str(report) == (
        "eval: 1/2 cases passed (50%) · 3 samples · 1,234 tokens · 1.8s\n"
        "  ✓ passing-case  2/2\n"
        "  ✗ failing-case  0/1  llm_judge (score 0.40) — too terse"
    )


def test_report_str_failures_error_and_cost():
    report = Report(
        cases=[
            CaseResult(name="err", samples=[SampleResult(error="boom", cost=0.5)]),
            CaseResult(name="unscored", samples=[sample(True), sample(False, cost=0.25)]),
            CaseResult(name="bare", samples=[SampleResult(checks=[CheckResult("plain", False)])]),
            CaseResult(name="empty", samples=[]),
        ]
    )
    assert str(report).splitlines() == [
        "eval: 0/4 cases passed (0%) · 4 samples · 0 tokens · 0.0s · $0.7500",
        "  ✗ err       0/1  error: boom",
        "  ✗ unscored  1/2  c — nope",
        "  ✗ bare      0/1  plain",
        "  ✗ empty     0/0",
    ]
    assert "$0.5000" in str(Report(cases=[report.cases[0]]))


def test_empty_report_str():
    assert str(Report(cases=[])) == "eval: 0/0 cases passed (100%) · 0 samples · 0 tokens · 0.0s"
