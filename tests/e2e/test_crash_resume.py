"""SIGKILL a process mid-run, resume it in a fresh process, and compare with an uninterrupted run.

The child (tests/support/crash_child.py) runs one four-turn tool-calling run on a shared SQLite
file. After every kill, a fresh process resumes the same run id. The session transcript must equal
the uninterrupted run's: nothing lost, nothing duplicated. Tools log each execution, which shows
the at-least-once rule: only a call whose result was not yet checkpointed runs again.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lovia import SQLiteCheckpointer, SQLiteSession
from lovia.transcript import AssistantTextEntry, InputEntry, entry_to_dict

# A scenario is up to six Python processes in a row: allow for a busy 2-core machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

CHILD = Path(__file__).resolve().parents[1] / "support" / "crash_child.py"
RUN_ID = "run-1"
SESSION_ID = "s1"
HISTORY = [InputEntry("user", "hello"), AssistantTextEntry("hi, what shall I record?")]


@dataclass
class Outcome:
    transcript: list[tuple[str, list[dict[str, Any]]]]
    tools: Counter[str]
    approvals: Counter[str]
    status: str | None


def child(db: Path, logs: Path, crash_at: str | None, *, delete_on_success: bool) -> int:
    env = {k: v for k, v in os.environ.items() if k != "LOVIA_CRASH_AT"}
    if crash_at is not None:
        env["LOVIA_CRASH_AT"] = crash_at
    args = [sys.executable, str(CHILD), str(db), RUN_ID, str(logs)]
    if delete_on_success:
        args.append("--delete-on-success")
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=180, check=False)
    if crash_at is None:
        assert done.returncode == 0, done.stderr
    return done.returncode


def run_with_crashes(
    base: Path, crash_points: list[str], *, delete_on_success: bool = False
) -> Outcome:
    base.mkdir()
    db = base / "state.db"
    asyncio.run(seed(db))
    for point in crash_points:
        code = child(db, base, point, delete_on_success=delete_on_success)
        assert code == -signal.SIGKILL, f"the child did not reach {point!r} (exit {code})"
    child(db, base, None, delete_on_success=delete_on_success)
    return asyncio.run(read_outcome(db, base))


async def seed(db: Path) -> None:
    async with SQLiteSession(db) as session:
        await session.append(SESSION_ID, HISTORY, run_id="r0")


def lines(path: Path) -> Counter[str]:
    return Counter(path.read_text().split()) if path.exists() else Counter()


async def read_outcome(db: Path, logs: Path) -> Outcome:
    async with SQLiteSession(db) as session, SQLiteCheckpointer(db) as checkpointer:
        segments = await session.segments(SESSION_ID)
        snapshot = await checkpointer.load(RUN_ID)
    if snapshot is not None:
        assert snapshot.entries == segments[-1].entries, "checkpoint and session disagree"
    return Outcome(
        transcript=[(s.run_id, [entry_to_dict(e) for e in s.entries]) for s in segments],
        tools=lines(logs / "tools.log"),
        approvals=lines(logs / "approvals.log"),
        status=snapshot.status if snapshot is not None else None,
    )


# (kill point, tools that run twice, how often the approval of c5 is asked)
KILL_POINTS = [
    ("model_before:1", "", 1),  # nothing checkpointed yet: the resume is a fresh start
    ("model_after:1", "", 1),  # first model output streamed, not saved
    ("saved:1", "", 1),  # first model output saved
    ("saved:2", "", 1),  # first tool result saved, end of turn not
    ("model_after:2", "", 1),  # the batch was requested, not saved
    ("saved:5", "", 1),  # between tool results: d saved, c and b still running
    ("tool:c", "c", 1),  # c's side effect happened, its result was not saved
    ("saved:6", "", 1),  # between tool results: d and c saved, b still running
    ("model_before:3", "", 1),  # the whole batch saved, next model call not answered
    ("approval:c5", "", 2),  # waiting for approval: asked again after the restart
    ("tool:e", "e", 2),  # approved and run, result not saved: asked and run again
    ("model_after:4", "", 1),  # final answer streamed, not saved
    ("saved:13", "", 1),  # final answer and end of turn saved, not finalised
    ("finalize", "", 1),  # completed head written, session append not done: replayed
]
CHAIN = ["model_after:2", "tool:c", "approval:c5", "model_after:4", "finalize"]
SCENARIOS: dict[str, tuple[list[str], bool]] = {
    "reference": ([], False),
    "chain": (CHAIN, False),
    "delete:tool:c": (["tool:c"], True),
    "delete:finalize": (["finalize"], True),
    **{point: ([point], False) for point, _, _ in KILL_POINTS},
}


def scenario(base: Path, name: str) -> Outcome:
    """One scenario: a sequence of child processes. Scenarios run one after another (each in its
    own test): side by side they fight for the CPU and time out on a busy 2-core machine."""
    points, delete_on_success = SCENARIOS[name]
    return run_with_crashes(
        base / name.replace(":", "_"), points, delete_on_success=delete_on_success
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    outcome = scenario(tmp_path_factory.mktemp("crash"), "reference")
    assert [run_id for run_id, _ in outcome.transcript] == ["r0", RUN_ID]
    assert outcome.tools == Counter("abcde")
    assert outcome.approvals == Counter(["c5"])
    assert outcome.status == "completed"
    return outcome


@pytest.mark.parametrize(("crash_at", "twice", "asked"), KILL_POINTS)
def test_a_killed_run_resumes_to_the_uninterrupted_transcript(
    tmp_path: Path, reference: Outcome, crash_at: str, twice: str, asked: int
) -> None:
    outcome = scenario(tmp_path, crash_at)
    assert outcome.transcript == reference.transcript
    assert outcome.tools == reference.tools + Counter(twice)
    assert outcome.approvals == Counter({"c5": asked})
    assert outcome.status == "completed"


def test_a_run_killed_again_and_again_still_ends_exactly_once(
    tmp_path: Path, reference: Outcome
) -> None:
    outcome = scenario(tmp_path, "chain")
    assert outcome.transcript == reference.transcript
    assert outcome.tools == reference.tools + Counter("c")
    assert outcome.approvals == Counter({"c5": 2})


def test_with_delete_on_success_a_resumed_run_drops_its_checkpoint(
    tmp_path: Path, reference: Outcome
) -> None:
    outcome = scenario(tmp_path, "delete:tool:c")
    assert outcome.transcript == reference.transcript
    assert outcome.tools == reference.tools + Counter("c")
    assert outcome.status is None


def test_with_delete_on_success_a_kill_after_the_delete_reruns_the_whole_run(
    tmp_path: Path, reference: Outcome
) -> None:
    # The delete is the final checkpoint write and the session append follows it. A kill in
    # between leaves the run in neither store, so the resume starts it afresh: the transcript is
    # still right, but every tool runs again. Keep delete_on_success=False where that matters.
    outcome = scenario(tmp_path, "delete:finalize")
    assert outcome.transcript == reference.transcript
    assert outcome.tools == reference.tools + reference.tools
    assert outcome.approvals == Counter({"c5": 2})
    assert outcome.status is None
