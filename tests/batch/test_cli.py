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
        # the cancelled runs' log lines go to the log file, not onto the screen
        assert "CancelledError" not in err and "run.interrupted" not in err, err
        kept = [json.loads(line) for line in results.read_text().splitlines()]
        assert 1 <= len(kept) < 6 and all(r["status"] == "done" for r in kept)
        again = lovia(*args, model=model, cwd=tmp_path)
        _, err = again.communicate(timeout=120)
        assert again.returncode == 0, err
        assert f"{len(kept)} skipped (already in results)" in err
    ids = [json.loads(line)["id"] for line in results.read_text().splitlines()]
    assert sorted(ids) == [f"t{i:02d}" for i in range(6)]


def _one_error(err: str) -> tuple[str, str]:
    """The ``error:`` line and the one ``hint:`` line of a refused batch."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 2 and lines[0].startswith("error: "), err
    assert lines[1].startswith("hint: "), err
    return lines[0], lines[1]


def test_a_missing_task_file_says_so_with_the_usage_not_the_format(tmp_path, task_model):
    proc = lovia("nope.jsonl", model=task_model, cwd=tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    error, hint = _one_error(err)
    assert error == "error: There is no task file nope.jsonl", err
    assert "lovia batch tasks.jsonl" in hint and '"prompt"' not in hint, err


def test_a_missing_agent_file_is_a_bad_line_named_as_the_agent(tmp_path, task_model):
    (tmp_path / "repo").mkdir()
    file = tmp_path / "tasks.jsonl"
    file.write_text(
        '{"id": "t1", "prompt": "x", "source": {"path": "repo"}, "agent": "missing.py:agent"}\n'
    )
    proc = lovia(str(file), model=task_model, cwd=tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    error, hint = _one_error(err)
    assert error.startswith(f"error: {file}:1: agent file missing.py not found"), err
    assert "workspace" not in error and "Errno" not in error, err
    assert not (tmp_path / "results.jsonl").exists()  # nothing ran


@pytest.mark.parametrize("where", ["task", "flag"])
def test_an_unknown_model_is_refused_before_any_task_runs(tmp_path, task_model, where):
    tasks = write_tasks(tmp_path, 2)
    args = [str(tasks)]
    if where == "task":
        lines = tasks.read_text().splitlines()
        lines[1] = lines[1].replace('"openai:fake-model"', '"nope:zzz"')
        tasks.write_text("\n".join(lines) + "\n")
    else:
        tasks.write_text(tasks.read_text().replace(',"model":"openai:fake-model"', ""))
        args += ["--model", "nope:zzz"]
    proc = lovia(*args, "--no-sandbox", model=task_model, cwd=tmp_path)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    error, hint = _one_error(err)
    who = "task t01" if where == "task" else "--model"
    assert error == f"error: {who}: Unknown model spec: 'nope:zzz'", err
    assert "openai" in hint
    assert not (tmp_path / "results.jsonl").exists()  # nothing ran
    assert task_model.started == []


def test_a_commit_that_is_not_there_says_so_in_the_result(tmp_path, task_model):
    tasks = write_tasks(tmp_path, 1)
    line = json.loads(tasks.read_text())
    line["source"]["commit"] = "deadbeef"
    tasks.write_text(json.dumps(line) + "\n")
    proc = lovia(str(tasks), "--no-sandbox", model=task_model, cwd=tmp_path)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    (result,) = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert result["error"] == f"workspace: commit 'deadbeef' is not in {line['source']['git']}"


@pytest.mark.parametrize(
    ("argv", "tasks", "ray"),
    [
        (
            ["--ray", "tasks.jsonl"],
            "tasks.jsonl",
            "",
        ),  # the address is optional: a file is the tasks
        (["tasks.jsonl", "--ray"], "tasks.jsonl", ""),
        (["tasks.jsonl", "--ray", "10.0.0.5:6379"], "tasks.jsonl", "10.0.0.5:6379"),
        (["--ray", "auto", "tasks.jsonl"], "tasks.jsonl", "auto"),
    ],
)
def test_ray_may_come_before_the_task_file(argv, tasks, ray):
    from lovia_server.batch.cli import parse

    args = parse(argv, "lovia batch")
    assert (args.tasks, args.ray) == (tasks, ray)


def test_no_task_file_at_all_is_a_usage_error_that_says_what_is_missing(capsys):
    from lovia_server.batch.cli import parse

    with pytest.raises(SystemExit) as exit_:
        parse(["--ray", "10.0.0.5:6379"], "lovia batch")
    assert exit_.value.code == 2
    assert "the task file is missing" in capsys.readouterr().err


def test_a_failed_runs_log_goes_to_the_log_file_not_the_screen(tmp_path, task_model):
    from tests.support import fake_openai as oai

    task_model.responder = lambda request: oai.error(400, "model 'fake-model' does not exist")
    tasks = write_tasks(tmp_path, 1)
    proc = lovia(str(tasks), "--no-sandbox", model=task_model, cwd=tmp_path)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "ProviderError: OpenAI Chat stream returned HTTP 400" in err  # the table says why...
    assert "run.failed" not in err and "Traceback" not in err, err  # ...the log is elsewhere
    assert "run.failed" in (tmp_path / "results.log").read_text()
