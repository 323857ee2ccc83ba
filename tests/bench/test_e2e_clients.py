"""The latency bench's attribution of stalls to the collector (``bench/e2e_clients.py``)."""

from __future__ import annotations

from bench.e2e_clients import stalls_in_collections, stalls_in_windows

MS = 1_000_000


def test_a_stall_counts_only_when_a_full_collection_ran_while_the_delta_waited() -> None:
    pairs = [(0, 30 * MS), (100 * MS, 101 * MS), (200 * MS, 240 * MS), (300 * MS, 330 * MS)]
    runs = [
        (2, 10 * MS, 18 * MS),  # during the first stall
        (2, 150 * MS, 160 * MS),  # between deltas
        (0, 210 * MS, 230 * MS),  # young generation: not counted
        (2, 310 * MS, 312 * MS),  # full but short (2 ms)
    ]
    assert stalls_in_collections(pairs, runs) == 1
    assert stalls_in_collections(pairs, []) == 0


def test_a_stall_counts_in_the_loop_when_a_late_wake_up_overlaps_it() -> None:
    pairs = [(0, 30 * MS), (100 * MS, 101 * MS), (200 * MS, 240 * MS)]
    lags = [(5 * MS, 25 * MS), (100 * MS, 101 * MS), (250 * MS, 260 * MS)]
    assert stalls_in_windows(pairs, lags) == 1
