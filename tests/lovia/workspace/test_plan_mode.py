"""Plan mode narrows the workspace policy: nothing is written and nothing asks.

Through a real ``LocalWorkspaceSession`` on a real directory, under the presets a host uses.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from lovia.workspace import CommandRule, LocalWorkspaceSession, WorkspacePolicy
from lovia.workspace.errors import PermissionDeniedError
from lovia.workspace.plan_mode import plan_instructions, plan_policy, refusal

PRESETS = {
    "coding": dataclasses.replace(WorkspacePolicy.coding(), write="ask"),
    "trusted": WorkspacePolicy.trusted(
        command_rules=(CommandRule("make", "allow"),),
    ),
    "readonly": WorkspacePolicy.readonly(),
}


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("print('hi')\n")
    (tmp_path / "README.md").write_text("# proj\n")
    return tmp_path.resolve()


def session(root: Path, preset: str) -> LocalWorkspaceSession:
    return LocalWorkspaceSession(root, policy=plan_policy(PRESETS[preset]))


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_write_is_denied_and_nothing_asks(root: Path, preset: str) -> None:
    ws = session(root, preset)
    for path in ("src/app.py", "new.txt", ".vscode/settings.json", "AGENTS.md", "/tmp/x"):
        assert ws.decide_path(path, write=True) == "deny", path
    assert ws.decide_path("src/app.py") == "allow"
    # reading outside: coding asks, so plan mode denies; trusted allows it and still does
    assert ws.decide_path("/etc/hostname") == ("allow" if preset == "trusted" else "deny")
    for command in (
        "echo x > f",
        "rm -rf src",
        "make",
        'python -c \'open("f","w")\'',
        "git commit -m x",
        "curl https://example.com",
        "$CMD",
        "sed -i s/a/b/ src/app.py",
    ):
        assert ws.decide_command(command) == "deny", (preset, command)


@pytest.mark.parametrize("preset", ["coding", "trusted"])
def test_read_only_commands_still_run(root: Path, preset: str) -> None:
    ws = session(root, preset)
    for command in ("ls", "cat README.md", "grep -rn hi src", "wc -l src/app.py"):
        assert ws.decide_command(command) == "allow", command


def test_only_narrows(root: Path) -> None:
    # the readonly preset's shell stays off; a denied path stays denied
    assert session(root, "readonly").decide_command("ls") == "deny"
    policy = plan_policy(dataclasses.replace(PRESETS["coding"], denied_paths=("README.md",)))
    assert LocalWorkspaceSession(root, policy=policy).decide_path("README.md") == "deny"
    off = dataclasses.replace(PRESETS["coding"], allow_read_only_commands=False)
    assert LocalWorkspaceSession(root, policy=plan_policy(off)).decide_command("ls") == "deny"
    assert plan_policy(plan_policy(PRESETS["coding"])) == plan_policy(PRESETS["coding"])


async def test_the_session_refuses_writes_and_commands(root: Path) -> None:
    ws = session(root, "trusted")
    with pytest.raises(PermissionDeniedError):
        await ws.write_text("src/app.py", "changed\n")
    with pytest.raises(PermissionDeniedError):
        await ws.run("echo x > f")
    assert (root / "src" / "app.py").read_text() == "print('hi')\n"
    assert not (root / "f").exists()
    result = await ws.run("cat README.md")
    assert "# proj" in result.stdout


def test_prompt_and_refusal_text() -> None:
    text = plan_instructions(plan_policy(PRESETS["coding"]))
    assert "plan mode" in text and "Files to touch:" in text
    assert "read-only commands" in text
    assert "not run commands" in plan_instructions(plan_policy(PRESETS["readonly"]))
    assert refusal("write_file changes files.") == (
        "plan mode: write_file changes files — propose it in the plan instead."
    )
