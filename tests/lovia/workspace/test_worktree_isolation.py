"""Subagents in git worktrees, in-process: two children edit the same file at once, each in a
worktree of its own; both reports carry their diffs and the parent's file stays as it was."""

from __future__ import annotations

import shutil
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lovia import Agent, Runner, Subagents
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.transcript import InputEntry, ModelDelta, ToolResultEntry, TranscriptEntry
from lovia.workspace import Workspace, WorktreeIsolation
from tests.support.git_repo import git, init_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

SHARED = "one\ntwo\nthree\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    # draft.txt is carried into each worktree; .env is denied, never carried
    draft = {"draft.txt": "uncommitted\n", ".env": "TOKEN=1\n"}
    return init_repo((tmp_path / "repo").resolve(), {"shared.txt": SHARED}, uncommitted=draft)


class ByPrompt(ScriptedProvider):
    """Each conversation follows the script of its first user message (the parent's or a
    child's): the turn for how many tool results it has so far."""

    def __init__(self, scripts: dict[str, dict[int, Any]]) -> None:
        super().__init__([])
        self.scripts = scripts

    async def stream(self, entries: list[TranscriptEntry], **kw: Any) -> AsyncIterator[ModelDelta]:
        first = next(e for e in entries if isinstance(e, InputEntry) and e.role == "user")
        done = sum(isinstance(e, ToolResultEntry) for e in entries)
        self.script = deque([self.scripts[str(first.content)][done]])
        async for delta in super().stream(entries, **kw):
            yield delta


def edit(letter: str) -> dict[int, Any]:
    content = f"one\n{letter}\nthree\n"
    return {
        0: call("read_file", {"path": "draft.txt"}, call_id=f"r{letter}"),
        1: call("write_file", {"path": "shared.txt", "content": content}, call_id=f"w{letter}"),
        2: text(f"wrote {letter}"),
    }


async def test_two_children_in_worktrees_edit_the_same_file(repo: Path, tmp_path: Path) -> None:
    spawn = "spawn_subagent"
    model = ByPrompt(
        {
            "edit it twice": {
                0: batch(
                    (spawn, {"prompt": "variant A", "isolation": "worktree"}, "sa"),
                    (spawn, {"prompt": "variant B", "isolation": "worktree"}, "sb"),
                    ("wait_subagents", {"ids": ["t1"]}, "wa"),
                    ("wait_subagents", {"ids": ["t2"]}, "wb"),
                ),
                4: text("both reported"),
            },
            "variant A": edit("A"),
            "variant B": edit("B"),
        }
    )
    place = tmp_path / "worktrees"
    agent = Agent(
        name="lead",
        model=model,
        workspace=Workspace.local(str(repo), mode="trusted", denied_paths=(".env",)),
        plugins=[Subagents(isolation=WorktreeIsolation(directory=str(place)))],
    )
    result = await Runner.run(agent, "edit it twice")
    assert result.output == "both reported"
    outputs = {e.call_id: e.output for e in result.entries if isinstance(e, ToolResultEntry)}
    assert "in a worktree of its own" in outputs["sa"]
    for call_id, letter, task in (("wa", "A", "t1"), ("wb", "B", "t2")):
        report = outputs[call_id]
        assert report.startswith(f"[subagent {task}: done] agent=lead-sub"), report
        assert f"wrote {letter}" in report
        assert "1 file changed, +1 -1" in report
        assert "modified shared.txt (+1 -1)" in report
        assert f"+{letter}\n" in report and "-two\n" in report  # the patch excerpt
        assert "draft.txt" not in report.split("wrote")[1]  # carried: the base, not the work
        branch = report.split("Changes on branch ")[1].split()[0]
        assert branch.startswith(f"lovia/variant-{letter.lower()}-{task}-")
        assert f"`git merge {branch}` takes it" in report
        assert git(repo, "show", f"{branch}:shared.txt") == f"one\n{letter}\nthree\n"
        assert git(repo, "show", f"{branch}:draft.txt") == "uncommitted\n"
    # the parent's working copy is untouched; the worktrees are gone, their branches stay
    assert (repo / "shared.txt").read_text() == SHARED
    assert git(repo, "status", "--porcelain").splitlines() == ["?? .env", "?? draft.txt"]
    assert git(repo, "worktree", "list").count("\n") == 1
    assert not any(place.iterdir())
    branches = git(repo, "branch", "--list", "lovia/*").split()
    assert len(branches) == 2
    for branch in branches:
        assert "TOKEN" not in git(repo, "show", f"{branch}:shared.txt")
        assert ".env" not in git(repo, "ls-tree", "-r", "--name-only", branch)


async def test_a_child_that_changes_nothing_leaves_no_branch(repo: Path, tmp_path: Path) -> None:
    model = ByPrompt(
        {
            "look": {
                0: batch(
                    ("spawn_subagent", {"prompt": "read only", "isolation": "worktree"}, "s"),
                    ("wait_subagents", {}, "w"),
                ),
                2: text("ok"),
            },
            "read only": {
                0: call("read_file", {"path": "shared.txt"}, call_id="r"),
                1: text("read"),
            },
        }
    )
    agent = Agent(
        name="lead",
        model=model,
        workspace=Workspace.local(str(repo), mode="trusted"),
        plugins=[Subagents(isolation=WorktreeIsolation(directory=str(tmp_path / "wt")))],
    )
    result = await Runner.run(agent, "look")
    report = next(
        e.output for e in result.entries if isinstance(e, ToolResultEntry) and e.call_id == "w"
    )
    assert "It changed no files (its worktree and branch were removed)." in report
    assert git(repo, "branch", "--list", "lovia/*") == ""


async def test_isolation_outside_a_repository_fails_the_child_with_a_hint(tmp_path: Path) -> None:
    plain = (tmp_path / "plain").resolve()
    plain.mkdir()
    model = ByPrompt(
        {
            "go": {
                0: batch(
                    ("spawn_subagent", {"prompt": "x", "isolation": "worktree"}, "s"),
                    ("spawn_subagent", {"prompt": "y", "isolation": "elsewhere"}, "s2"),
                    ("wait_subagents", {}, "w"),
                ),
                3: text("ok"),
            },
            "x": {0: text("never")},
        }
    )
    agent = Agent(
        name="lead",
        model=model,
        workspace=Workspace.local(str(plain), mode="trusted"),
        plugins=[Subagents(isolation=WorktreeIsolation(directory=str(tmp_path / "wt")))],
    )
    result = await Runner.run(agent, "go")
    outputs = {e.call_id: e.output for e in result.entries if isinstance(e, ToolResultEntry)}
    assert outputs["s2"] == (
        "Nothing spawned: unknown isolation 'elsewhere' (available: workspace, worktree)."
    )
    assert outputs["w"].startswith("[subagent t1: failed]")
    assert "GitProblem: " in outputs["w"] and "not inside a git repository" in outputs["w"]
    assert "Hint: Worktree isolation needs a git repository" in outputs["w"]


async def test_without_isolation_the_spawn_tool_and_instructions_are_unchanged() -> None:
    plain = await Subagents().setup()
    assert "isolation" not in plain.tools[0].parameters["properties"]
    assert "worktree" not in (plain.instructions or "")
    isolated = await Subagents(isolation=WorktreeIsolation()).setup()
    prop = isolated.tools[0].parameters["properties"]["isolation"]
    assert prop["enum"] == ["workspace", "worktree"] and prop["default"] == "workspace"
    assert 'isolation: "worktree"' in (isolated.instructions or "")
