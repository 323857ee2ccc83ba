"""A short run of ``bench/code_action_bench.py`` against the real server, so the benchmark keeps
working (its figures are not checked here: they belong to the benchmark, on a quiet machine)."""

from __future__ import annotations

from bench import code_action_bench as bench
from lovia_server.lsp.code_actions import MAX_PROBLEMS, LiveState, code_actions


def test_the_target_is_read_from_the_99th_percentile() -> None:
    assert bench.percentile([float(i) for i in range(1, 101)], 99) == 99.0
    assert bench.meets_target([1.0] * 99 + [10.0])
    assert not bench.meets_target([1.0] * 98 + [11.0, 11.0])
    assert not bench.meets_target([])


def test_the_benchmarks_request_gets_one_fix_with_the_problems_at_the_cursor() -> None:
    uri = "file:///ws/app.py"
    params = {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": 7, "character": 1}, "end": {"line": 7, "character": 1}},
        "context": {"diagnostics": bench.diagnostics(1000, 500)},
    }
    (fix, *rest) = code_actions(params, allowed=lambda _: True, live=LiveState(None, 0))
    assert fix["title"] == "lovia: Fix this problem" and fix["kind"] == "quickfix"
    assert [d["message"] for d in fix["diagnostics"]] == ["problem 7", "problem 507"]
    assert len(rest) == 3
    everywhere = {**params, "range": {"start": {"line": 0}, "end": {"line": 499}}}
    (fix, *_) = code_actions(everywhere, allowed=lambda _: True, live=LiveState(None, 0))
    assert len(fix["diagnostics"]) == MAX_PROBLEMS
    assert code_actions(params, allowed=lambda _: False, live=LiveState(None, 0)) == []


def test_a_request_carries_what_lsp_clients_send_at_the_cursor() -> None:
    problems = bench.diagnostics(1000, bench.LINES)
    here = bench.at_line("file:///ws/app.py", 7, problems, "in-range")
    assert [d["message"] for d in here["context"]["diagnostics"]] == ["problem 7", "problem 507"]
    assert here["range"]["start"] == {"line": 7, "character": 1}
    assert (
        len(bench.at_line("file:///ws/app.py", 7, problems, "all")["context"]["diagnostics"])
        == 1000
    )


async def test_a_short_run_answers_every_request() -> None:
    assert await bench.main(requests=5, count=50, sent="in-range") in (0, 1)
    assert await bench.main(requests=5, count=50, sent="all") == 0  # no target for "all"
