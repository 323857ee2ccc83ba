"""Hand-built run results for eval tests."""

from __future__ import annotations

from typing import Any

from lovia import Agent, RunResult, Usage
from lovia.transcript import TranscriptEntry


def make_result(
    output: Any = "",
    entries: list[TranscriptEntry] | None = None,
    turns: int = 1,
    usage: Usage | None = None,
) -> RunResult:
    return RunResult(
        output=output,
        entries=list(entries or []),
        final_agent=Agent(name="t"),
        usage=usage or Usage(),
        turns=turns,
    )
