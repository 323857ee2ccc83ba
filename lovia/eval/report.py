"""Eval results: samples, cases and the report, with JSON round trip and a baseline diff."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lovia.eval.checks import CheckResult
from lovia.messages import Usage
from lovia.transcript import to_json_safe

SCHEMA_VERSION = 1


def _json_or_repr(value: Any) -> Any:
    safe = to_json_safe(value)
    if safe is None and value is not None:
        return repr(value)
    return safe


@dataclass
class SampleResult:
    """One run of one case: its output, cost figures, check results or the run error."""

    checks: list[CheckResult] = field(default_factory=list)
    output: Any = None
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    latency: float = 0.0
    cost: float | None = None
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and all(c.passed for c in self.checks)

    def first_failure(self) -> str | None:
        """A one-line description of why this sample failed (``None`` when it passed)."""
        if self.error is not None:
            return f"error: {self.error}"
        for check in self.checks:
            if not check.passed:
                text = check.name
                if check.score is not None:
                    text += f" (score {check.score:.2f})"
                if check.reason:
                    text += f" — {check.reason}"
                return text
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "output": _json_or_repr(self.output),
            "turns": self.turns,
            "usage": {
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
                "cache_read_tokens": self.usage.cache_read_tokens,
                "cache_write_tokens": self.usage.cache_write_tokens,
            },
            "latency": self.latency,
            "cost": self.cost,
            "error": self.error,
            "checks": [
                {"name": c.name, "passed": c.passed, "score": c.score, "reason": c.reason}
                for c in self.checks
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SampleResult:
        usage = data.get("usage") or {}
        return cls(
            checks=[
                CheckResult(
                    name=str(c.get("name", "")),
                    passed=bool(c.get("passed", False)),
                    score=c.get("score"),
                    reason=str(c.get("reason") or ""),
                )
                for c in data.get("checks") or []
            ],
            output=data.get("output"),
            turns=int(data.get("turns") or 0),
            usage=Usage(
                input_tokens=int(usage.get("input_tokens") or 0),
                output_tokens=int(usage.get("output_tokens") or 0),
                cache_read_tokens=int(usage.get("cache_read_tokens") or 0),
                cache_write_tokens=int(usage.get("cache_write_tokens") or 0),
            ),
            latency=float(data.get("latency") or 0.0),
            cost=data.get("cost"),
            error=data.get("error"),
        )


@dataclass
class CaseResult:
    """All samples of one case; it passes when its pass rate reaches ``pass_threshold``."""

    name: str
    samples: list[SampleResult]
    pass_threshold: float = 1.0
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def passed_samples(self) -> int:
        return sum(1 for s in self.samples if s.passed)

    @property
    def pass_rate(self) -> float:
        if not self.samples:
            return 0.0
        return self.passed_samples / len(self.samples)

    @property
    def passed(self) -> bool:
        return bool(self.samples) and self.pass_rate >= self.pass_threshold

    def pass_at_k(self, k: int) -> float:
        """Unbiased pass@k: the chance that at least one of ``k`` drawn samples passed."""
        n = len(self.samples)
        if not 1 <= k <= n:
            raise ValueError(f"k must be in 1..{n}, got {k}")
        failed = n - self.passed_samples
        if failed < k:
            return 1.0
        return 1.0 - math.comb(failed, k) / math.comb(n, k)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "pass_threshold": self.pass_threshold,
            "metadata": {str(k): _json_or_repr(v) for k, v in self.metadata.items()},
            "samples": [s.to_dict() for s in self.samples],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaseResult:
        return cls(
            name=str(data.get("name", "")),
            samples=[SampleResult.from_dict(s) for s in data.get("samples") or []],
            pass_threshold=float(data.get("pass_threshold", 1.0)),
            metadata=dict(data.get("metadata") or {}),
        )


@dataclass
class Diff:
    """How a report moved against a baseline, by case name."""

    regressions: list[str] = field(default_factory=list)
    improvements: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.regressions

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        groups = [
            ("regressed", self.regressions),
            ("improved", self.improvements),
            ("added", self.added),
            ("removed", self.removed),
        ]
        if self.ok and not any(items for _, items in groups):
            return "baseline: no changes"
        lines = ["baseline: ok" if self.ok else "baseline: REGRESSIONS"]
        lines.extend(f"  {label}: {', '.join(sorted(items))}" for label, items in groups if items)
        return "\n".join(lines)


def _index(cases: list[CaseResult], which: str) -> dict[str, CaseResult]:
    counts = Counter(c.name for c in cases)
    duplicates = sorted(name for name, n in counts.items() if n > 1)
    if duplicates:
        raise ValueError(f"duplicate case names in {which} report: {duplicates}")
    return {c.name: c for c in cases}


@dataclass
class Report:
    """The result of :func:`lovia.eval.evaluate`: one :class:`CaseResult` per case, in order."""

    cases: list[CaseResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.cases)

    @property
    def pass_rate(self) -> float:
        if not self.cases:
            return 1.0
        return sum(1 for c in self.cases if c.passed) / len(self.cases)

    # ------------------------------------------------------------------ serialisation

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "cases": [c.to_dict() for c in self.cases],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        version = data.get("schema_version", SCHEMA_VERSION)
        if version != SCHEMA_VERSION:
            raise ValueError(
                f"unsupported report schema_version {version!r} (expected {SCHEMA_VERSION})"
            )
        return cls(cases=[CaseResult.from_dict(c) for c in data.get("cases") or []])

    def save(self, path: str | Path) -> None:
        text = json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"
        Path(path).write_text(text, encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Report:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("a report file must hold a JSON object")
        return cls.from_dict(data)

    # ------------------------------------------------------------------ baseline

    def compare(self, baseline: Report) -> Diff:
        """Case-by-case movement against ``baseline``, joined by case name."""
        current = _index(self.cases, "current")
        before = _index(baseline.cases, "baseline")
        diff = Diff()
        for name, case in current.items():
            old = before.get(name)
            if old is None:
                diff.added.append(name)
            elif old.passed and not case.passed:
                diff.regressions.append(name)
            elif case.passed and not old.passed:
                diff.improvements.append(name)
        diff.removed.extend(name for name in before if name not in current)
        return diff

    # ------------------------------------------------------------------ rendering

    def __str__(self) -> str:
        samples = [s for c in self.cases for s in c.samples]
        passed = sum(1 for c in self.cases if c.passed)
        tokens = sum(s.usage.total_tokens for s in samples)
        latency = sum(s.latency for s in samples)
        header = (
            f"eval: {passed}/{len(self.cases)} cases passed ({self.pass_rate:.0%}) · "
            f"{len(samples)} samples · {tokens:,} tokens · {latency:.1f}s"
        )
        costs = [s.cost for s in samples if s.cost is not None]
        if costs:
            header += f" · ${sum(costs):.4f}"
        lines = [header]
        width = max((len(c.name) for c in self.cases), default=0)
        for case in self.cases:
            mark = "✓" if case.passed else "✗"
            line = f"  {mark} {case.name:<{width}}  {case.passed_samples}/{len(case.samples)}"
            if not case.passed:
                failure = next(
                    (f for f in (s.first_failure() for s in case.samples) if f is not None), None
                )
                if failure is not None:
                    line += f"  {failure}"
            lines.append(line)
        return "\n".join(lines)


__all__ = ["SCHEMA_VERSION", "CaseResult", "Diff", "Report", "SampleResult"]
