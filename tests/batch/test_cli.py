"""``lovia batch`` as a user runs it: a task file in, results out, Ctrl-C, resume."""

from __future__ import annotations

import json
import signal
import time

import pytest

from tests.support.batch_model import TaskModel
from tests.support.batch_tasks import lovia, write_tasks


def test_a_batch_writes_results_and_a_summary_table(tmp_path, task_model):
    tasks = write_tasks(tmp_path, 3)
    proc = lovia(str(tasks), "--no-sandbox", model=task_model, cwd=tmp_path)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    results = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted(r["status"] for r in results) == ["done"] * 3
    assert "3 done; 0 skipped (already in results); 0 retried" in err
    assert "sk-batch-test-secret" not in (tmp_path / "results.jsonl").read_text() + err


def test_a_bad_task_file_names_the_line(tmp_path, task_model):
    file = tmp_path / "tasks.jsonl"
    file.write_text('{"id": "a", "prompt": "x", "source": {"path": "."}}\n{"id": "b"}\n')
    proc = lovia(str(file), model=task_model, cwd=tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert f"{file}:2: prompt: Field required" in err
    assert err.count("hint:") == 1, err  # said once, on its own line
    assert [line for line in err.splitlines() if line.startswith("hint: ")], err


@pytest.mark.timeout(300)
def test_ctrl_c_keeps_a_valid_results_file_and_the_rerun_resumes(tmp_path):
    tasks = write_tasks(tmp_path, 6)
    results = tmp_path / "results.jsonl"
    with TaskModel(delay=1.0) as model:
        args = (str(tasks), "--concurrency", "2", "--no-sandbox")
        proc = lovia(*args, model=model, cwd=tmp_path)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (results.exists() and results.read_text()):
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "run the same command again to resume" in err
        kept = [json.loads(line) for line in results.read_text().splitlines()]
        assert 1 <= len(kept) < 6 and all(r["status"] == "done" for r in kept)
        again = lovia(*args, model=model, cwd=tmp_path)
        _, err = again.communicate(timeout=120)
        assert again.returncode == 0, err
        assert f"{len(kept)} skipped (already in results)" in err
    ids = [json.loads(line)["id"] for line in results.read_text().splitlines()]
    assert sorted(ids) == [f"t{i:02d}" for i in range(6)]
