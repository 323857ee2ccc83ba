"""Protected paths: writes to editor, git and agent configuration always ask; deny patterns
fold case."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lovia.workspace import LocalWorkspaceSession, PathRule, Workspace, WorkspacePolicy
from lovia.workspace.command_guard import decide_command
from lovia.workspace.protected import (
    DEFAULT_PROTECTED_PATHS,
    protected_command_targets,
    protected_path,
    protected_warning,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = (tmp_path / "proj").resolve()
    (r / ".vscode").mkdir(parents=True)
    (r / ".git" / "hooks").mkdir(parents=True)
    (r / "src").mkdir()
    (r / "src" / "a.py").write_text("x = 1\n")
    return r


def _session(root: Path, policy: WorkspacePolicy) -> LocalWorkspaceSession:
    return LocalWorkspaceSession(root, policy=policy)


PRESETS = {
    "coding": WorkspacePolicy.coding(),
    "trusted": WorkspacePolicy.trusted(),
    "allow rule": WorkspacePolicy.trusted(
        path_rules=(PathRule("**", "allow"), PathRule(".vscode", "allow"))
    ),
}


@pytest.mark.parametrize("name", list(PRESETS))
@pytest.mark.parametrize(
    "path",
    [
        ".vscode/settings.json",
        ".VSCode/Settings.json",  # case variants (macOS and Windows file systems)
        "src/../.vscode/tasks.json",  # ..
        ".git/hooks/pre-commit",
        "vendor/lib/.git/config",  # a nested git dir
        ".github/workflows/ci.yml",  # does not exist yet
        ".lovia/skills/deploy/SKILL.md",
        "my.code-workspace",
        "~/.bashrc",
        "~/.config/fish/config.fish",
    ],
)
def test_writes_to_protected_paths_ask_under_every_preset_and_allow_rule(root, name, path):
    session = _session(root, PRESETS[name])
    decision = session.decide_path(path, write=True)
    if path.startswith("~") and name == "coding":
        assert decision == "deny"  # outside writes are denied: protection never loosens
    else:
        assert decision == "ask"


def test_reads_of_protected_paths_are_not_affected(root):
    session = _session(root, WorkspacePolicy.coding())
    assert session.decide_path(".vscode/settings.json") == "allow"
    assert session.decide_path(".git/HEAD") == "allow"
    assert session.decide_path("src/a.py", write=True) == "allow"


def test_a_symlink_alias_of_a_protected_dir_is_protected(root):
    (root / "cfg").symlink_to(root / ".vscode")
    (root / "src" / "deep").symlink_to(root / ".git")
    session = _session(root, WorkspacePolicy.trusted())
    assert session.decide_path("cfg/settings.json", write=True) == "ask"
    assert session.decide_path("src/deep/hooks/post-checkout", write=True) == "ask"


def test_protection_never_loosens_a_deny(root):
    readonly = _session(root, WorkspacePolicy.readonly())
    assert readonly.decide_path(".vscode/settings.json", write=True) == "deny"
    denied = _session(
        root, WorkspacePolicy.coding(path_rules=(PathRule(".vscode", "deny", ops={"write"}),))
    )
    assert denied.decide_path(".vscode/settings.json", write=True) == "deny"


def test_an_empty_list_turns_protection_off_for_framework_users(root):
    ws = Workspace.local(str(root), mode="trusted", protected_paths=())
    assert ws.policy.protected_paths == ()
    assert _session(root, ws.policy).decide_path(".vscode/settings.json", write=True) == "allow"
    assert Workspace.local(str(root)).policy.protected_paths == DEFAULT_PROTECTED_PATHS


@pytest.mark.parametrize(
    "command",
    [
        "echo '{\"lovia.permissions\": {}}' > .vscode/settings.json",
        "sed -i 's/coding/trusted/' .vscode/settings.json",
        "cp hook.sh .git/hooks/pre-commit",
        "tee .github/workflows/x.yml < x",
        "mkdir -p .lovia/skills/x",
        "echo evil >> ~/.bashrc",
        "git config core.fsmonitor ./x",  # writes .git/config (the guard already asks)
    ],
)
def test_commands_that_write_protected_paths_ask_even_when_allowed(root, command):
    # trusted allows every command; a user rule allows it too: protection still asks
    policy = WorkspacePolicy.trusted()
    assert decide_command(policy, root, command, ".") in ("ask", "deny")


def test_commands_that_only_read_protected_paths_keep_their_decision(root):
    policy = WorkspacePolicy.trusted()
    assert decide_command(policy, root, "cat .vscode/settings.json", ".") == "allow"
    assert decide_command(policy, root, "cat src/a.py > out.txt", ".") == "allow"


def test_the_card_lists_what_a_command_or_edit_would_change(root):
    policy = WorkspacePolicy.coding()
    assert protected_command_targets(policy, root, "echo x > .vscode/settings.json") == [
        ".vscode/settings.json"
    ]
    assert ".git" in protected_command_targets(policy, root, "git checkout .")
    assert protected_command_targets(policy, root, "cat .git/config") == []
    assert protected_command_targets(policy, root, "git config --edit") == [".git/config"]
    assert protected_command_targets(policy, root, "git config --get user.name") == []
    assert protected_command_targets(policy, root, "ls -la") == []
    assert protected_path(policy, root, "src/../.vscode/x.json") == ".vscode/x.json"
    assert protected_path(policy, root, "src/a.py") is None
    text = protected_warning([".vscode/settings.json"])
    assert "alters agent or editor configuration" in text and ".vscode/settings.json" in text


def test_deny_patterns_fold_case(root):
    for name in (".env", ".ENV", "Secrets", "key.PEM"):
        (root / name).write_text("s3cret\n") if not (root / name).exists() else None
    policy = WorkspacePolicy.coding(denied_paths=(".env", "secrets", "*.pem", "~/.ssh"))
    session = _session(root, policy)
    for name in (".env", ".ENV", "Secrets", "key.PEM", "~/.SSH/id_rsa"):
        assert session.decide_path(name) == "deny", name
        assert decide_command(policy, root, f"cat {name}", ".") == "deny", name
    # an allow rule grants only what it spells
    allowed = WorkspacePolicy.coding(path_rules=(PathRule("Docs", "allow", ops={"write"}),))
    assert allowed.decide_path(rel="docs/x", abs_posix=str(root / "docs/x"), op="write") == "allow"


async def test_a_protected_write_reaches_the_tool_layer_as_an_approval(root):
    ws = Workspace.local(str(root), mode="trusted")
    from lovia.workspace.tools import path_needs_approval

    class Ctx:
        workspace = _session(root, ws.policy)

    needs = path_needs_approval("write")
    assert needs({"path": ".vscode/settings.json"}, Ctx()) is True
    assert needs({"path": "src/a.py"}, Ctx()) is False


def test_instructions_say_configuration_changes_need_approval(root):
    text = Workspace.local(str(root), mode="trusted").instructions()
    assert "always need user approval" in text and "'.vscode'" in text
    assert (
        "always need user approval"
        not in Workspace.local(str(root), mode="readonly").instructions()
    )


def test_home_patterns_are_resolved_like_deny_patterns(root, monkeypatch, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    from lovia.workspace.patterns import _canonical_abs_pattern

    _canonical_abs_pattern.cache_clear()
    try:
        # the user allowed writes to the whole home: profiles and ~/.config still ask
        policy = WorkspacePolicy.trusted(path_rules=(PathRule(str(home), "allow"),))
        session = _session(root, policy)
        assert session.decide_path(os.fspath(home / "notes.txt"), write=True) == "allow"
        assert session.decide_path(os.fspath(home / ".zshrc"), write=True) == "ask"
        assert session.decide_path("~/.config/git/config", write=True) == "ask"
        assert session.decide_path(os.fspath(home / ".config/git/config")) == "allow"
    finally:
        _canonical_abs_pattern.cache_clear()
