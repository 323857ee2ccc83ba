"""Command files: where they are found, how they expand, and what is never read."""

from __future__ import annotations

from pathlib import Path

import pytest

from lovia.exceptions import UserError
from lovia.workspace import WorkspacePolicy
from lovia.workspace.project_commands import (
    COMMAND_PROTECTED_PATHS,
    expand,
    find_commands,
    front_matter,
    help_text,
    invoke,
    parse_command,
    split_invocation,
)
from lovia.workspace.protected import DEFAULT_PROTECTED_PATHS, protects

# Claude Code's documented example, byte for byte as a project would have it.
FIX_ISSUE = """\
---
allowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*)
argument-hint: [issue-number] [priority]
description: Fix a GitHub issue
model: claude-3-5-haiku-20241022
---

Fix issue #$ARGUMENTS following our coding standards.
"""


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_claude_code_command_file_parses_and_expands() -> None:
    command = parse_command("fix-issue", FIX_ISSUE, "workspace", "x", too_large=False)
    assert command.description == "Fix a GitHub issue"
    assert command.argument_hint == "[issue-number] [priority]"
    assert command.allowed_tools == (
        "Bash(git add:*)",
        "Bash(git status:*)",
        "Bash(git commit:*)",
    )
    assert command.model == "claude-3-5-haiku-20241022"
    assert expand(command, "123 high") == "Fix issue #123 high following our coding standards."


def test_positional_arguments_and_appended_arguments() -> None:
    review = parse_command(
        "review-pr", "Review PR #$1 with priority $2 and assign to $3.", "user", "x",
        too_large=False,
    )  # fmt: skip
    assert expand(review, '456 high "Alice B"') == (
        "Review PR #456 with priority high and assign to Alice B."
    )
    assert expand(review, "7") == "Review PR #7 with priority  and assign to ."
    plain = parse_command("optimize", "# Optimise\nFind slow code.", "user", "x", too_large=False)
    assert plain.description == "Optimise"  # no front matter: the first line
    assert expand(plain, "") == "# Optimise\nFind slow code."
    assert (
        expand(plain, "in the parser") == "# Optimise\nFind slow code.\n\nARGUMENTS: in the parser"
    )


def test_front_matter_lists_and_copilot_fields() -> None:
    fields, body = front_matter("---\nallowed-tools:\n  - Read\n  - Grep\nmode: ask\n---\nbody\n")
    assert fields == {"allowed-tools": ["Read", "Grep"], "mode": "ask"}
    assert body == "body\n"
    ask = parse_command("q", "---\nmode: 'ask'\n---\nx", "workspace", "x", too_large=False)
    assert ask.mode == "plan"
    agent = parse_command("q", "---\nagent: agent\n---\nx", "workspace", "x", too_large=False)
    assert agent.mode == "act"


def test_invocations_and_messages_that_look_like_paths() -> None:
    assert split_invocation("/fix-issue 123") == ("fix-issue", "123")
    assert split_invocation("/frontend:component Button  ") == ("frontend:component", "Button")
    assert split_invocation("/help") == ("help", "")
    assert split_invocation("/usr/bin/python is broken") is None
    assert split_invocation(" /help") is None
    assert split_invocation("fix /help") is None


def test_sources_namespaces_and_precedence(tmp_path: Path) -> None:
    root, home = tmp_path / "repo", tmp_path / "home"
    _write(root, ".claude/commands/fix-issue.md", FIX_ISSUE)
    _write(root, ".claude/commands/frontend/component.md", "Make a component $1")
    _write(root, ".lovia/commands/fix-issue.md", "---\ndescription: ours\n---\nours $ARGUMENTS")
    _write(root, ".github/prompts/release-notes.prompt.md", "---\ndescription: notes\n---\nx")
    _write(root, ".github/prompts/not-a-prompt.md", "ignored")
    _write(root, ".claude/commands/help.md", "a file cannot replace a built-in")
    _write(home, "mine.md", "---\ndescription: my own\n---\nmine")
    commands = find_commands(root, WorkspacePolicy.coding(), user_dir=str(home))
    by_name = {c.name: c for c in commands}
    assert by_name["fix-issue"].description == "ours"  # .lovia before .claude
    assert by_name["fix-issue"].path == ".lovia/commands/fix-issue.md"
    assert by_name["frontend:component"].source == "workspace"
    assert by_name["release-notes"].path == ".github/prompts/release-notes.prompt.md"
    assert "not-a-prompt" not in by_name
    assert by_name["help"].source == "built-in"
    assert by_name["mine"].source == "user" and by_name["mine"].path == str(home / "mine.md")
    assert {"help", "new", "plan", "init", "review", "compact"} <= set(by_name)
    listing = help_text(commands)
    assert "/fix-issue" in listing and "ours" in listing and "[workspace:" in listing


def test_denied_files_are_never_read_nor_listed(tmp_path: Path) -> None:
    root, home = tmp_path / "repo", tmp_path / "home"
    _write(root, ".claude/commands/secret.md", "secret")
    _write(root, ".claude/commands/fine.md", "fine")
    _write(home, "private.md", "private")
    policy = WorkspacePolicy.coding(
        denied_paths=(".claude/commands/secret.md", str(home / "private.md"))
    )
    names = {c.name for c in find_commands(root, policy, user_dir=str(home))}
    assert "fine" in names and "secret" not in names and "private" not in names


def test_a_file_over_the_limit_is_listed_but_refused_with_a_hint(tmp_path: Path) -> None:
    _write(tmp_path, ".lovia/commands/big.md", "---\ndescription: big\n---\n" + "x" * 500)
    commands = find_commands(tmp_path, WorkspacePolicy.coding(), user_dir=None, max_file_chars=100)
    big = next(c for c in commands if c.name == "big")
    assert big.too_large and big.description == "big"
    with pytest.raises(UserError, match="longer than") as caught:
        invoke("/big now", commands)
    assert caught.value.hint


def test_unknown_commands_are_errors_not_messages(tmp_path: Path) -> None:
    commands = find_commands(tmp_path, WorkspacePolicy.coding(), user_dir=None)
    with pytest.raises(UserError, match="Unknown command /nope") as caught:
        invoke("/nope 1", commands)
    assert caught.value.hint is not None and "/help" in caught.value.hint
    assert invoke("not a command", commands) is None
    helped = invoke("/help", commands)
    assert helped is not None and helped.command.action == "help" and helped.prompt == ""
    planned = invoke("/plan add a cache", commands)
    assert planned is not None and planned.command.mode == "plan"
    assert planned.prompt == "add a cache"


def test_command_files_are_protected_paths(tmp_path: Path) -> None:
    policy = WorkspacePolicy.coding()
    for pattern in COMMAND_PROTECTED_PATHS:
        assert pattern in DEFAULT_PROTECTED_PATHS
    for rel in (
        ".claude/commands/fix-issue.md",
        ".claude/commands/frontend/component.md",
        ".github/prompts/x.prompt.md",
        ".lovia/commands/x.md",
    ):
        assert protects(policy, tmp_path, rel), rel
