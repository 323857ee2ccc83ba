"""The status line and the closing table of a batch."""

from __future__ import annotations

import io

from lovia_server.batch.display import BatchTally, Progress, status_line, summary_table
from lovia_server.batch.results import TaskResult, TaskUsage


def result(
    id: str, status: str = "done", attempts: int = 1, cost: float | None = None
) -> TaskResult:
    return TaskResult(
        id=id, status=status, attempts=attempts, cost=cost, duration=1.5,
        usage=TaskUsage(input_tokens=1000, output_tokens=234),
        error="ProviderError: boom\nmore" if status != "done" else None,
    )  # fmt: skip


def test_the_status_line_counts_tokens_cost_and_failures():
    tally = BatchTally(total=10, skipped=2)
    tally.add(result("a", cost=0.01))
    tally.add(result("b", "failed", attempts=2))
    line = status_line(tally, running=3)
    assert line.startswith("[######------------------] 2/8 done · 3 running · 1 failed")
    assert "2,468 tokens · $0.0100 · ETA " in line


def test_the_summary_table_has_a_row_per_task_and_the_totals():
    tally = BatchTally(total=3, skipped=1)
    tally.add(result("a"))
    tally.add(result("long-task-id", "lost", attempts=4))
    table = summary_table(tally)
    assert "long-task-id  lost        4      1,234      1.5  ProviderError: boom" in table
    assert "1 done, 1 lost; 1 skipped (already in results); 1 retried; 2,468 tokens" in table


def test_a_batch_with_nothing_left_to_run_says_so_without_an_empty_table():
    table = summary_table(BatchTally(total=3, skipped=3))
    assert table.startswith("nothing run; 3 skipped (already in results)")
    assert "task" not in table


def test_progress_draws_nothing_live_when_not_a_terminal():
    out = io.StringIO()
    progress = Progress(out)
    tally = BatchTally(total=1)
    progress.update(tally, 1, force=True)
    assert out.getvalue() == ""
    tally.add(result("a"))
    progress.close(tally)
    assert out.getvalue().startswith("task  status")
