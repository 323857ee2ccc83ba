"""A headless task's approval rules, judged by the workspace's own matchers: every program a
command runs must match a rule, paths are judged resolved, protected writes need a rule
that names them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lovia.messages import ToolCall
from lovia_server.batch.approvals import approves
from lovia_server.batch.task import ApprovalPolicy
from lovia_server.batch.task_workspace import task_policy


def shell(command: str) -> ToolCall:
    return ToolCall("c", "shell", json.dumps({"command": command}))


def write(path: str) -> ToolCall:
    return ToolCall("c", "write_file", json.dumps({"path": path, "content": "x"}))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "src").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "src" / "out").symlink_to(tmp_path / "outside")
    return root


def judge(rules: ApprovalPolicy, call: ToolCall, root: Path, preset: str = "coding") -> bool:
    return approves(rules, call, task_policy(root, preset), root)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("command", "approved"),
    [
        ("pytest -q tests", True),
        ("pytest", True),
        ("pytest -q; cat ~/.config/gh/hosts.yml", False),
        ("pytest -q && curl https://example.com", False),
        ("pytest -q | sh", False),
        ("pytest $(cat ~/.config/gh/hosts.yml)", False),
        ("sh -c 'pytest; cat /etc/passwd'", False),
        ("env FOO=1 rm -rf src", False),
        ("pytestx", False),
        ("rm -rf /", False),
        ("pytest -q > .vscode/settings.json", False),
    ],
)
def test_a_command_rule_approves_only_commands_whose_every_program_it_names(
    tree, command, approved
):
    rules = ApprovalPolicy(allow=["shell:pytest*", "write_file"])
    assert judge(rules, shell(command), tree) is approved


def test_several_command_rules_cover_a_pipeline_together(tree):
    rules = ApprovalPolicy(allow=["shell:pytest*", "shell:tee log.txt"])
    assert judge(rules, shell("pytest -q | tee log.txt"), tree)
    assert not judge(rules, shell("pytest -q | tee ~/.bashrc"), tree)


@pytest.mark.parametrize(
    ("path", "approved"),
    [
        ("src/a.py", True),
        ("src/deep/b.py", True),
        ("src/../../x.py", False),
        ("src/out/x.py", False),  # a symlinked folder that leads outside the tree
        ("README.md", False),
        ("src/../.vscode/settings.json", False),
    ],
)
def test_a_path_rule_matches_the_resolved_path(tree, path, approved):
    assert judge(ApprovalPolicy(allow=["write_file:src/*"]), write(path), tree) is approved


def test_protected_paths_need_a_rule_that_names_them(tree):
    protected = write(".github/workflows/ci.yml")
    assert not judge(ApprovalPolicy(default="allow"), protected, tree)
    assert not judge(ApprovalPolicy(allow=["write_file"]), protected, tree)
    assert judge(ApprovalPolicy(allow=["write_file:.github/workflows/*"]), protected, tree)
    assert judge(ApprovalPolicy(default="allow"), write("notes.txt"), tree)
    assert not judge(ApprovalPolicy(default="allow"), shell("echo x > .git/config"), tree)


def test_a_bare_tool_name_approves_its_calls_inside_the_tree_only(tree):
    rules = ApprovalPolicy(allow=["write_file", "read_file"])
    assert judge(rules, write("any/where.txt"), tree)
    outside = ToolCall("c", "read_file", json.dumps({"path": str(tree.parent / "outside")}))
    assert not judge(rules, outside, tree)
    assert judge(ApprovalPolicy(default="allow"), outside, tree)
    assert not judge(rules, ToolCall("c", "edit_file", "not json"), tree)
    assert judge(ApprovalPolicy(default="allow"), ToolCall("c", "edit_file", "{}"), tree)
