"""run_batch with the in-process executor: patches, outputs, resume, failures, approvals."""

from __future__ import annotations

import json
from pathlib import Path

from lovia.executor.base import JobOutcome
from lovia.executor.local import InProcessExecutor
from lovia.workspace.sandbox import BubblewrapExecutor
from lovia_server.batch.results import ResultsFile
from lovia_server.batch.runner import BatchOptions, _settle, run_batch
from lovia_server.batch.task import BatchTask, TaskSource, parse_tasks
from tests.support.batch_tasks import MODEL, git_tasks, make_repo


async def test_git_tasks_produce_output_patch_usage_and_transcript(tmp_path, model_env):
    tasks = git_tasks(tmp_path / "repos", 3)
    results = tmp_path / "out" / "results.jsonl"
    tally = await run_batch(tasks, results, executor=InProcessExecutor(concurrency=2))
    assert tally.statuses["done"] == 3
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    by_id = {r["id"]: r for r in lines}
    first = by_id["t00"]
    assert first["status"] == "done" and first["output"] == "wrote word0"
    assert "+++ b/answer0.txt" in first["patch"] and "+word0" in first["patch"]
    assert "LATER.md" not in first["patch"]  # checked out at the task's commit, not HEAD
    assert first["usage"]["input_tokens"] > 0 and first["attempts"] == 1
    assert first["sandboxed"] == (BubblewrapExecutor.if_available() is not None)
    transcript = results.parent / first["transcript"]
    assert any(e.get("name") == "write_file" for e in json.loads(transcript.read_text()))
    assert "sk-batch-test-secret" not in results.read_text()


async def test_a_resumed_batch_skips_settled_tasks(tmp_path, model_env):
    tasks = git_tasks(tmp_path / "repos", 4)
    results = tmp_path / "results.jsonl"
    await run_batch(tasks[:2], results)
    calls_before = sum(r.method == "POST" for r in model_env.requests)
    tally = await run_batch(tasks, results)
    assert tally.skipped == 2 and tally.statuses["done"] == 2
    calls = sum(r.method == "POST" for r in model_env.requests) - calls_before
    assert calls == 4  # two tasks, two model calls each
    ids = [json.loads(line)["id"] for line in results.read_text().splitlines()]
    assert sorted(ids) == ["t00", "t01", "t02", "t03"]


async def test_a_torn_last_line_is_cut_and_its_task_runs_again(tmp_path, model_env):
    tasks = git_tasks(tmp_path / "repos", 2)
    results = tmp_path / "results.jsonl"
    await run_batch(tasks[:1], results)
    with results.open("a") as fh:
        fh.write('{"id": "t01", "status": "do')
    tally = await run_batch(tasks, results)
    assert tally.skipped == 1 and tally.statuses["done"] == 1
    assert set(ResultsFile(results).load()) == {"t00", "t01"}


async def test_a_bad_commit_fails_the_task_once_without_a_model_call(tmp_path, model_env):
    repo, _ = make_repo(tmp_path, "r")
    task = BatchTask(
        id="bad",
        prompt="write x to x.txt",
        source=TaskSource(git=str(repo), commit="0" * 40),
        model=MODEL,
    )
    tally = await run_batch([task], tmp_path / "results.jsonl")
    [result] = tally.results
    assert (
        result.status == "failed"
        and result.error == f"workspace: commit {'0' * 40!r} is not in {repo}"
    )
    assert result.attempts == 1 and model_env.requests == []


async def test_a_run_that_does_not_finish_keeps_its_transcript_up_to_the_failure(
    tmp_path, model_env
):
    src = tmp_path / "project"
    src.mkdir()
    # One turn allowed: the model writes the file, and the run stops before it can answer.
    task = BatchTask(
        id="short",
        prompt="write word to out.txt",
        source=TaskSource(path=str(src)),
        model=MODEL,
        max_turns=1,
    )
    results = tmp_path / "results.jsonl"
    tally = await run_batch([task], results)
    [result] = tally.results
    assert result.status == "failed" and "turn" in (result.error or "").lower()
    assert "+word" in result.patch
    line = json.loads(results.read_text())
    entries = json.loads((tmp_path / line["transcript"]).read_text())
    assert [e["type"] for e in entries] == ["input", "tool_call", "tool_result"]
    assert entries[0]["content"] == "write word to out.txt"
    assert entries[1]["name"] == "write_file"
    assert entries[2]["call_id"] == entries[1]["call_id"] and not entries[2]["is_error"]


async def test_a_local_directory_is_shipped_and_its_tree_removed(tmp_path, model_env):
    src = tmp_path / "project"
    (src / ".git").mkdir(parents=True)
    (src / ".git" / "junk").write_text("not shipped")
    (src / "main.py").write_text("print('hi')\n")
    task = BatchTask(
        id="dir", prompt="write hello to notes.txt", source=TaskSource(path=str(src)), model=MODEL
    )
    keep = task.model_copy(update={"id": "kept", "keep_tree": True})
    tally = await run_batch([task, keep], tmp_path / "results.jsonl")
    by_id = {r.id: r for r in tally.results}
    assert by_id["dir"].status == "done" and "+hello" in by_id["dir"].patch
    assert "main.py" not in by_id["dir"].patch and by_id["dir"].tree is None
    kept = Path(by_id["kept"].tree.split(":", 1)[1])
    assert (kept / "notes.txt").read_text() == "hello\n" and not (kept / ".git" / "junk").exists()
    assert not (src / "notes.txt").exists()


async def test_approvals_are_denied_by_default_and_allowed_by_rule(tmp_path, model_env):
    src = tmp_path / "project"
    src.mkdir()
    (src / "keep.txt").write_text("x\n")
    base = dict(
        prompt="write hi to .vscode/tasks.json", source=TaskSource(path=str(src)), model=MODEL
    )
    # Editor settings are protected paths: writes always ask, so the batch policy decides.
    denied = BatchTask(id="denied", **base)
    allowed = BatchTask(id="allowed", approvals={"allow": ["write_file:.vscode/*"]}, **base)
    tally = await run_batch(
        [denied, allowed], tmp_path / "results.jsonl", options=BatchOptions(sandbox=False)
    )
    by_id = {r.id: r for r in tally.results}
    assert by_id["denied"].status == "done" and by_id["denied"].patch == ""
    assert (
        by_id["allowed"].status == "done" and "+++ b/.vscode/tasks.json" in by_id["allowed"].patch
    )


async def test_provider_keys_are_redacted_from_results_and_transcripts(tmp_path, model_env):
    src = tmp_path / "project"
    src.mkdir()
    secret = model_env.env()["OPENAI_API_KEY"]
    task = BatchTask(
        id="leak", prompt=f"reply {secret}", source=TaskSource(path=str(src)), model=MODEL
    )
    results = tmp_path / "results.jsonl"
    tally = await run_batch([task], results)
    assert tally.statuses["done"] == 1
    line = json.loads(results.read_text())
    assert line["output"] == "[redacted]"
    transcript = (tmp_path / line["transcript"]).read_text()
    assert secret not in transcript and "[redacted]" in transcript


async def test_an_agent_file_is_shipped_as_code_and_given_the_task_model(tmp_path, model_env):
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "mine.py").write_text(
        "from lovia import Agent\n\n"
        "def build():\n"
        "    return Agent(name='mine', instructions='Be brief.')\n"
    )
    src = tmp_path / "project"
    src.mkdir()
    line = {
        "id": "own",
        "prompt": "write mine to mine.txt",
        "source": {"path": "project"},
        "agent": "agents/mine.py:build",
        "model": MODEL,
    }
    tasks = parse_tasks(json.dumps(line), base=tmp_path)
    tally = await run_batch(tasks, tmp_path / "results.jsonl")
    [result] = tally.results
    assert result.status == "done" and result.output == "wrote mine" and "+mine" in result.patch
    first_prompt = next(r.json for r in model_env.requests if r.method == "POST")
    assert first_prompt["messages"][0]["content"].startswith("Be brief.")


def test_a_job_whose_worker_kept_dying_is_recorded_as_lost():
    task = BatchTask(id="x", prompt="p", source=TaskSource(path="/tmp"), model=MODEL)
    error = "WorkerCrashedError: worker lost after 4 attempt(s)"
    outcome = JobOutcome("x", error=error, attempts=4, lost=True)
    result = _settle(task, outcome, BatchOptions())
    assert (result.status, result.attempts, result.model) == ("lost", 4, MODEL)
    assert result.error.startswith("WorkerCrashedError")
    # A job that raised (it could not even be unpickled there, say) failed for a cause.
    raised = _settle(task, JobOutcome("x", error="ModuleNotFoundError: m"), BatchOptions())
    assert raised.status == "failed"


async def test_the_trees_post_tool_hook_reformats_what_the_agent_wrote(tmp_path, model_env):
    src = tmp_path / "project"
    (src / ".lovia").mkdir(parents=True)
    upper = (
        'python3 -c "import json, sys, pathlib; '
        "p = pathlib.Path(json.load(sys.stdin)['tool_input']['file_path']); "
        'p.write_text(p.read_text().upper())"'
    )
    hooks = {
        "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": upper}]}]
    }
    (src / ".lovia" / "hooks.json").write_text(json.dumps({"hooks": hooks}))
    task = BatchTask(
        id="fmt", prompt="write hello to notes.txt", source=TaskSource(path=str(src)), model=MODEL
    )
    tally = await run_batch([task], tmp_path / "results.jsonl", options=BatchOptions(sandbox=False))
    (result,) = tally.results
    assert result.status == "done" and "+HELLO" in result.patch, result
