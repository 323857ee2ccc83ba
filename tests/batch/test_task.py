"""Task files: parsing, path resolution and where sources may come from, errors that name
the line, the shape of approval rules."""

from __future__ import annotations

import json

import pytest

from lovia.exceptions import UserError
from lovia_server.batch.task import parse_tasks


def test_relative_paths_and_agent_files_resolve_against_the_task_file(tmp_path):
    text = (
        "# a comment\n\n"
        '{"id": "a", "prompt": "p", "source": {"path": "proj"}, "agent": "agents/x.py:build"}\n'
        '{"id": "b", "prompt": "p", "source": {"git": "https://example.com/r.git", "commit": "abc"},'
        ' "approvals": "allow", "preset": "trusted"}\n'
    )
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "x.py").write_text("agent = None\n")
    a, b = parse_tasks(text, base=tmp_path)
    assert a.source.path == str(tmp_path / "proj")
    assert a.agent == f"{tmp_path / 'agents/x.py'}:build"
    assert b.source.git == "https://example.com/r.git" and b.approvals.default == "allow"
    assert (a.preset, b.preset, a.max_turns, a.keep_tree) == ("coding", "trusted", 50, False)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"id": "a", "prompt": "p", "source": {}}',
            "source: Value error, source needs exactly one",
        ),
        (
            '{"id": "a", "prompt": "p", "source": {"path": "x", "commit": "c"}}',
            "'commit' goes with 'git'",
        ),
        ('{"id": "a/b", "prompt": "p", "source": {"path": "x"}}', "id: Value error"),
        (
            '{"id": "a", "prompt": "p", "source": {"path": "x"}, "colour": 1}',
            "colour: Extra inputs",
        ),
        ("not json", "Invalid JSON"),
    ],
)
def test_a_bad_line_is_reported_with_its_number(tmp_path, line, message):
    good = '{"id": "ok", "prompt": "p", "source": {"path": "x"}}\n'
    with pytest.raises(UserError) as info:
        parse_tasks(good + line + "\n", base=tmp_path, origin="tasks.jsonl")
    assert str(info.value).startswith("tasks.jsonl:2: ") and message in str(info.value)
    assert "docs/batch.md" in (info.value.hint or "")


def test_duplicate_ids_are_refused(tmp_path):
    line = '{"id": "same", "prompt": "p", "source": {"path": "x"}}\n'
    with pytest.raises(UserError, match="used twice"):
        parse_tasks(line * 2, base=tmp_path)


def test_a_local_source_outside_the_task_files_folder_is_refused(tmp_path):
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "proj").mkdir()
    (tmp_path / "tasks" / "up").symlink_to(tmp_path)
    for source in ('{"path": ".."}', '{"path": "up"}', '{"git": ".."}', '{"git": "file://.."}'):
        line = f'{{"id": "a", "prompt": "p", "source": {source}}}\n'
        with pytest.raises(UserError) as info:
            parse_tasks(line, base=tmp_path / "tasks", origin="t.jsonl")
        assert str(info.value).startswith("t.jsonl:1: the source") and "outside" in str(info.value)
        assert str(tmp_path / "tasks") in (info.value.hint or "")
    # inside is fine, and --source-root widens the folder on purpose
    [task] = parse_tasks(
        '{"id": "a", "prompt": "p", "source": {"path": "proj"}}', base=tmp_path / "tasks"
    )
    assert task.source.path == str(tmp_path / "tasks" / "proj")
    line = '{"id": "a", "prompt": "p", "source": {"path": ".."}}'
    [task] = parse_tasks(line, base=tmp_path / "tasks", source_root=tmp_path)
    assert task.source.path == str(tmp_path)


@pytest.mark.parametrize("rule", ["shell:pytest*; cat*", "shell:py*test", "shell:", ":x"])
def test_an_approval_rule_of_the_wrong_shape_is_refused(tmp_path, rule):
    line = json.dumps(
        {"id": "a", "prompt": "p", "source": {"path": "."}, "approvals": {"allow": [rule]}}
    )
    with pytest.raises(UserError, match="approval rule"):
        parse_tasks(line, base=tmp_path)
