"""``lovia batch --ray ADDRESS`` on the two-node cluster: Ctrl-C cancels, the rerun resumes;
``lovia batch --ray`` with no address starts a Ray of its own and stops it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

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


def _processes_naming(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_ray_without_an_address_starts_a_local_ray_for_the_batch_and_stops_it(
    tmp_path, ray_cluster, request
):
    """The laptop case: no address, no RAY_ADDRESS, no cluster started by ``ray start``
    here (its own temp dir), so the command starts a Ray, runs the tasks there, and leaves
    no Ray process behind. (``ray_cluster`` only says whether Ray can run here at all.)"""
    tasks = write_tasks(tmp_path, 3)
    results = tmp_path / "results.jsonl"
    # short: Ray's socket paths under it must fit in 107 bytes
    own_tmp = Path(tempfile.mkdtemp(prefix="lr", dir="/tmp"))
    request.addfinalizer(lambda: shutil.rmtree(own_tmp, ignore_errors=True))
    env = {"RAY_TMPDIR": str(own_tmp), "HOME": str(tmp_path / "home"), "RAY_ADDRESS": ""}
    (tmp_path / "home").mkdir()
    with TaskModel(delay=0.2) as model:
        proc = lovia(str(tasks), "--ray", "--no-sandbox", model=model, cwd=tmp_path, env=env)
        _, err = proc.communicate(timeout=400)
    assert proc.returncode == 0, err
    final = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(r["id"] for r in final) == ["t00", "t01", "t02"]
    assert all(r["status"] == "done" and r["node"] for r in final)
    # the Ray it started was not the test cluster, and it is gone
    assert not {r["node"] for r in final} & set(ray_cluster.alive_nodes())
    assert any(own_tmp.iterdir()), "the local Ray did not use its own temp dir"
    deadline = time.monotonic() + 30
    while _processes_naming(str(own_tmp)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _processes_naming(str(own_tmp)) == []
