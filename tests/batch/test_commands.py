"""``/name args`` task prompts through the real ``lovia batch``: the project's commands of the
task's own tree, expanded as the server expands them (docs/customization.md#commands)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.batch_model import TaskModel
from tests.support.batch_tasks import MODEL, git, lovia

UNKNOWN_HINT = (
    "The task's repository has no command by that name: its commands are the built-ins and the "
    "files in .lovia/commands, .claude/commands and .github/prompts (and ~/.lovia/commands of "
    "the machine that runs the task). To send a message that starts with '/', begin it with a "
    "space."
)


def _repo(root: Path, name: str, files: dict[str, str]) -> dict[str, str]:
    """A git repository holding ``files``; the task source of its commit."""
    repo = root / name
    for rel, text in {"README.md": f"# {name}\n", **files}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    return {"git": str(repo), "commit": git(repo, "rev-parse", "HEAD")}


def _run(tmp_path: Path, model: TaskModel, tasks: list[dict]) -> tuple[dict[str, dict], str, int]:
    file = tmp_path / "tasks.jsonl"
    file.write_text("".join(json.dumps({"model": MODEL, **t}) + "\n" for t in tasks))
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    args = (str(file), "--no-sandbox", "--transcripts", "inline")
    proc = lovia(*args, model=model, cwd=tmp_path, env={"HOME": str(home)})
    _, err = proc.communicate(timeout=120)
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    return {r["id"]: r for r in map(json.loads, lines)}, err, proc.returncode


def _user_messages(model: TaskModel) -> list[str]:
    return [
        str(m.get("content"))
        for request in model.requests
        for m in request.messages
        if m.get("role") == "user"
    ]


def test_a_task_prompt_runs_its_trees_command_with_the_arguments(tmp_path, task_model):
    claude = "---\ndescription: Fix a GitHub issue\nargument-hint: [issue-number]\n---\n\n"
    one = _repo(
        tmp_path,
        "one",
        {
            ".claude/commands/fix-issue.md": claude
            + "Fix issue #$ARGUMENTS following our coding standards.\n",
            ".lovia/commands/put.md": "Following our standards, write $1 to $2 and stop.\n",
        },
    )
    two = _repo(tmp_path, "two", {".github/prompts/put.prompt.md": "write $1 to two-$2\n"})
    user = tmp_path / "home" / ".lovia" / "commands"
    user.mkdir(parents=True)
    (user / "mine.md").write_text("write $ARGUMENTS\n")
    results, err, code = _run(
        tmp_path,
        task_model,
        [
            {"id": "fix", "prompt": "/fix-issue 123", "source": one},
            {"id": "put-one", "prompt": "/put hello out.txt", "source": one},
            {"id": "put-two", "prompt": "/put hello out.txt", "source": two},
            {"id": "mine", "prompt": "/mine there to mine.txt", "source": two},
        ],
    )
    assert code == 0, err
    sent = _user_messages(task_model)
    # the request bodies carry the expanded command, never the /name typed in the task file
    assert "Fix issue #123 following our coding standards." in sent
    assert "Following our standards, write hello to out.txt and stop." in sent
    assert "write hello to two-out.txt" in sent
    assert "write there to mine.txt" in sent
    assert not [s for s in sent if s.startswith("/")], sent
    # each task's command comes from the tree it works on
    assert "+++ b/out.txt" in results["put-one"]["patch"]
    assert "+++ b/two-out.txt" in results["put-two"]["patch"]
    assert "+++ b/mine.txt" in results["mine"]["patch"]
    assert {r["status"] for r in results.values()} == {"done"}


def test_an_unknown_command_fails_its_task_only_before_any_model_call(tmp_path, task_model):
    source = _repo(tmp_path, "repo", {})
    results, err, code = _run(
        tmp_path,
        task_model,
        [
            {"id": "unknown", "prompt": "/nope 42", "source": source},
            {"id": "help", "prompt": "/help", "source": source},
            {"id": "new", "prompt": "/new write a to a.txt", "source": source},
            {"id": "compact", "prompt": "/compact keep the a.txt plan", "source": source},
            {"id": "path", "prompt": "/usr/bin/env is broken: write b to b.txt", "source": source},
            {"id": "plain", "prompt": "Please write c to c.txt", "source": source},
        ],
    )
    assert code == 1, err
    unknown = results["unknown"]
    assert unknown["status"] == "failed"
    # lovia/run's -32602 message; the hint names the folders (a batch refuses /help)
    assert unknown["error"] == f"command: Unknown command /nope\n  hint: {UNKNOWN_HINT}"
    assert unknown["transcript"] is None and unknown["patch"] == ""
    assert unknown["usage"]["input_tokens"] == 0
    assert "command: Unknown command /nope" in err  # the closing table says why
    assert results["help"]["status"] == "failed"
    assert results["help"]["error"].startswith("command: /help lists the commands to a person")
    assert "hint: " in results["help"]["error"]
    assert results["new"]["status"] == "failed"
    assert results["new"]["error"].startswith("command: /new starts a new conversation")
    assert "Drop /new" in results["new"]["error"]
    assert results["compact"]["status"] == "failed"
    assert results["compact"]["error"].startswith("command: /compact compacts a conversation")
    # a path is a message, and the other tasks of the batch ran
    assert results["path"]["status"] == results["plain"]["status"] == "done"
    assert "+++ b/b.txt" in results["path"]["patch"]
    assert "+++ b/c.txt" in results["plain"]["patch"]
    sent = _user_messages(task_model)
    assert "/usr/bin/env is broken: write b to b.txt" in sent
    assert not [s for s in sent if "nope" in s or "/help" in s or "a.txt" in s], sent


def test_a_plan_mode_command_cannot_write_even_with_every_approval(tmp_path, task_model):
    source = _repo(
        tmp_path,
        "repo",
        {
            ".lovia/commands/look.md": "---\ndescription: Look only\nmode: plan\n---\n"
            "write $1 to $2\n",
            ".lovia/commands/act.md": "---\ndescription: Do it\nmode: act\n---\nwrite $1 to $2\n",
        },
    )
    results, err, code = _run(
        tmp_path,
        task_model,
        [
            {"id": "look", "prompt": "/look one a.txt", "source": source, "approvals": "allow"},
            {"id": "act", "prompt": "/act two b.txt", "source": source, "approvals": "allow"},
        ],
    )
    assert code == 0, err
    look, act = results["look"], results["act"]
    assert look["status"] == act["status"] == "done"
    assert look["patch"] == ""
    assert "+++ b/b.txt" in act["patch"]
    # the write was refused by the plan-mode policy, not by the (blanket) approvals
    assert "plan mode: write_file refused" in json.dumps(look["transcript"]), look["transcript"]
    # the model was told it is planning; the act task's run was not
    bodies = [json.dumps(r.json) for r in task_model.requests]
    look_bodies = [b for b in bodies if "write one to a.txt" in b]
    act_bodies = [b for b in bodies if "write two to b.txt" in b]
    assert look_bodies and all("# Plan mode" in b for b in look_bodies)
    assert act_bodies and not any("# Plan mode" in b for b in act_bodies)


def test_a_commands_model_is_used_when_it_is_a_lovia_model_id(tmp_path, task_model):
    source = _repo(
        tmp_path,
        "repo",
        {
            ".lovia/commands/other.md": "---\nmodel: openai:other-model\n---\nwrite $1 to $2\n",
            ".claude/commands/alias.md": "---\nmodel: sonnet\n---\nwrite $1 to $2\n",
            ".lovia/commands/bad.md": "---\nmodel: nope:zzz\n---\nwrite $1 to $2\n",
        },
    )
    results, err, code = _run(
        tmp_path,
        task_model,
        [
            {"id": "other", "prompt": "/other x x.txt", "source": source},
            {"id": "alias", "prompt": "/alias y y.txt", "source": source},
            {"id": "bad", "prompt": "/bad z z.txt", "source": source},
        ],
    )
    assert code == 1, err
    assert results["other"]["model"] == "openai:other-model"
    assert results["alias"]["model"] == MODEL  # a Claude Code alias keeps the task's model
    models = {
        str(m["content"]): r.json["model"]
        for r in task_model.requests
        for m in r.messages
        if m.get("role") == "user"
    }
    assert models == {"write x to x.txt": "other-model", "write y to y.txt": "fake-model"}
    bad = results["bad"]
    assert bad["status"] == "failed" and bad["transcript"] is None
    assert bad["error"].startswith("command: /bad names the model 'nope:zzz': Unknown model spec")
