"""Task files: parsing, path resolution, errors that name the line; the approval policy."""

from __future__ import annotations

import pytest

from lovia.exceptions import UserError
from lovia.messages import ToolCall
from lovia_server.batch.task import ApprovalPolicy, parse_tasks


def test_relative_paths_and_agent_files_resolve_against_the_task_file(tmp_path):
    text = (
        "# a comment\n\n"
        '{"id": "a", "prompt": "p", "source": {"path": "proj"}, "agent": "agents/x.py:build"}\n'
        '{"id": "b", "prompt": "p", "source": {"git": "https://example.com/r.git", "commit": "abc"},'
        ' "approvals": "allow", "preset": "trusted"}\n'
    )
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


def test_the_approval_policy_matches_tool_and_argument_globs():
    policy = ApprovalPolicy(allow=["shell:pytest*", "write_file"])
    shell = lambda cmd: ToolCall("c", "shell", f'{{"command": "{cmd}"}}')  # noqa: E731
    assert policy.allows(shell("pytest -q tests"))
    assert not policy.allows(shell("rm -rf /"))
    assert policy.allows(ToolCall("c", "write_file", '{"path": "a.txt", "content": ""}'))
    assert not policy.allows(ToolCall("c", "edit_file", "not json"))
    assert ApprovalPolicy(default="allow").allows(ToolCall("c", "edit_file", "{}"))
