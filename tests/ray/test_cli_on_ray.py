"""``lovia batch --ray ADDRESS`` on the two-node cluster: Ctrl-C cancels, the rerun resumes."""

from __future__ import annotations

import json
import signal
import time

import pytest

from tests.support.batch_model import TaskModel
from tests.support.batch_tasks import lovia, write_tasks

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]


def posts(model: TaskModel) -> int:
    return sum(1 for r in model.requests if r.method == "POST")


def test_ctrl_c_cancels_the_cluster_tasks_and_the_rerun_resumes(tmp_path, ray_cluster):
    tasks = write_tasks(tmp_path, 8)
    results = tmp_path / "results.jsonl"
    with TaskModel(delay=1.0) as model:
        args = (str(tasks), "--ray", ray_cluster.address, "--no-sandbox")
        proc = lovia(*args, model=model, cwd=tmp_path)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not (results.exists() and results.read_text()):
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        kept = [json.loads(line) for line in results.read_text().splitlines()]
        assert 1 <= len(kept) < 8 and all(r["status"] == "done" for r in kept)
        time.sleep(3)
        settled = posts(model)
        time.sleep(4)
        assert posts(model) == settled, "cancelled tasks kept calling the model"
        again = lovia(*args, model=model, cwd=tmp_path)
        _, err = again.communicate(timeout=300)
        assert again.returncode == 0, err
        assert f"{len(kept)} skipped (already in results)" in err
    final = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(r["id"] for r in final) == [f"t{i:02d}" for i in range(8)]
    assert len({r["node"] for r in final}) == 2
