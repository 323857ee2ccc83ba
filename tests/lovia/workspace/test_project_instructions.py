"""Which project instruction files apply where, in which order, and what is never read."""

from __future__ import annotations

import os
from pathlib import Path

from lovia.transcript import InputEntry, ToolResultEntry
from lovia.workspace import ProjectInstructions, Workspace, WorkspacePolicy
from lovia.workspace.project_instructions import (
    INSTRUCTION_PROTECTED_PATHS,
    apply_to_patterns,
    delivered,
    files_for,
    glob_matches,
    joining_note,
    parse_front_matter,
    scoped_files,
    startup_files,
    system_section,
)
from lovia.workspace.protected import DEFAULT_PROTECTED_PATHS, protects

OPTIONS = ProjectInstructions()


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_globs_follow_vscode_semantics() -> None:
    assert glob_matches("**/*.ts", "a.ts")
    assert glob_matches("**/*.ts", "web/deep/a.ts")
    assert not glob_matches("**/*.ts", "web/a.tsx")
    assert glob_matches("*.rst", "index.rst") and not glob_matches("*.rst", "docs/index.rst")
    assert glob_matches("docs/**", "docs/a/b.md") and not glob_matches("docs/**", "src/docs.md")
    assert glob_matches("src/?.py", "src/a.py") and not glob_matches("src/?.py", "src/ab.py")


def test_front_matter_and_comma_separated_apply_to() -> None:
    fields, body = parse_front_matter('---\napplyTo: "**/*.ts, **/*.tsx"\n---\nbody\n')
    assert body == "body\n"
    assert apply_to_patterns(fields["applyTo"]) == ("**/*.ts", "**/*.tsx")
    assert apply_to_patterns("'/src/**'") == ("src/**",)
    assert parse_front_matter("no front matter\n") == ({}, "no front matter\n")
    assert parse_front_matter("---\nunclosed: yes\n") == ({}, "---\nunclosed: yes\n")


def test_startup_files_order_and_scope(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    user = tmp_path / "user.md"
    user.write_text("user\n")
    _write(root, "AGENTS.md", "agents\n")
    _write(root, "CLAUDE.md", "claude\n")
    _write(root, ".github/copilot-instructions.md", "copilot\n")
    _write(root, ".github/instructions/all.instructions.md", "---\napplyTo: '**'\n---\nall\n")
    _write(root, ".github/instructions/ts.instructions.md", "---\napplyTo: '**/*.ts'\n---\nts\n")
    _write(root, ".github/instructions/none.instructions.md", "no applyTo: never applied\n")
    _write(root, "sub/AGENTS.md", "nested\n")
    files = startup_files(root, WorkspacePolicy.coding(), ProjectInstructions(user_file=str(user)))
    assert [(f.path, f.scope, f.text) for f in files] == [
        (str(user), "user", "user"),
        ("AGENTS.md", "root", "agents"),
        ("CLAUDE.md", "root", "claude"),
        (".github/copilot-instructions.md", "root", "copilot"),
        (".github/instructions/all.instructions.md", "scoped", "all"),
    ]
    assert [f.path for f in scoped_files(root, WorkspacePolicy.coding(), OPTIONS)] == [
        ".github/instructions/ts.instructions.md"
    ]
    section = system_section(files)
    assert section.startswith("## Project instructions")
    assert '<project-instructions source="AGENTS.md">\nagents\n</project-instructions>' in section
    assert system_section([]) == ""


def test_nested_files_outermost_first_and_only_on_the_way_down(tmp_path: Path) -> None:
    root = tmp_path
    _write(root, "AGENTS.md", "root\n")
    _write(root, "a/AGENTS.md", "a\n")
    _write(root, "a/CLAUDE.md", "a-claude\n")
    _write(root, "a/b/AGENTS.md", "b\n")
    _write(root, "a/b/c/x.py", "")
    _write(root, "other/AGENTS.md", "other\n")
    _write(root, ".github/instructions/py.instructions.md", "---\napplyTo: '**/*.py'\n---\npy\n")
    policy = WorkspacePolicy.coding()
    found = files_for(root, policy, OPTIONS, "a/b/c/x.py")
    assert [f.path for f in found] == [
        "a/AGENTS.md",
        "a/CLAUDE.md",
        "a/b/AGENTS.md",
        ".github/instructions/py.instructions.md",
    ]
    # a folder brings the files down to and including its own; the root's are in the prompt
    assert [f.path for f in files_for(root, policy, OPTIONS, "a")] == ["a/AGENTS.md", "a/CLAUDE.md"]
    assert files_for(root, policy, OPTIONS, ".") == []
    assert files_for(root, policy, OPTIONS, str(tmp_path.parent / "elsewhere.py")) == []


def test_denied_and_outside_files_are_never_read(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    outside = tmp_path / "secret.md"
    outside.write_text("SECRET\n")
    _write(root, "AGENTS.md", "root\n")
    _write(root, "a/x.py", "")
    os.symlink(outside, root / "a" / "AGENTS.md")  # a link leaving the workspace
    _write(root, "CLAUDE.md", "claude\n")
    policy = WorkspacePolicy.coding(denied_paths=("CLAUDE.md",))
    assert [f.path for f in startup_files(root, policy, OPTIONS)] == ["AGENTS.md"]
    assert files_for(root, policy, OPTIONS, "a/x.py") == []
    # the user's own file is outside by design: only denied_paths keep it out
    user = ProjectInstructions(user_file=str(outside))
    assert [f.scope for f in startup_files(root, policy, user)] == ["user", "root"]
    denying = WorkspacePolicy.coding(denied_paths=("CLAUDE.md", str(outside)))
    assert [f.scope for f in startup_files(root, denying, user)] == ["root"]


def test_sizes_are_bounded_per_file_and_in_total_with_a_note(tmp_path: Path) -> None:
    _write(tmp_path, "AGENTS.md", "a" * 50)
    _write(tmp_path, "CLAUDE.md", "c" * 50)
    _write(tmp_path, ".github/copilot-instructions.md", "g" * 10)
    small = ProjectInstructions(max_file_chars=30, max_total_chars=45)
    files = startup_files(tmp_path, WorkspacePolicy.coding(), small)
    assert [(f.path, f.cut) for f in files] == [("AGENTS.md", True), ("CLAUDE.md", True)]
    assert files[0].text == "a" * 30 + "\n\n[lovia: AGENTS.md was cut to its first 30 characters]"
    assert files[1].text.startswith("c" * 15 + "\n\n[lovia: CLAUDE.md was cut")


def test_delivered_reads_the_blocks_back_from_the_conversation(tmp_path: Path) -> None:
    _write(tmp_path, "a/AGENTS.md", "a\n")
    _write(tmp_path, "a/x.py", "")
    note = joining_note(files_for(tmp_path, WorkspacePolicy.coding(), OPTIONS, "a/x.py"))
    entries = [
        InputEntry(role="user", content="hi"),
        ToolResultEntry(call_id="c1", output=f"{note}\n\nx"),
    ]
    assert delivered(entries) == {"a/AGENTS.md"}
    assert delivered([InputEntry(role="user", content="hi")]) == set()


def test_instruction_files_are_protected_everywhere(tmp_path: Path) -> None:
    assert set(INSTRUCTION_PROTECTED_PATHS) <= set(DEFAULT_PROTECTED_PATHS)
    policy = WorkspacePolicy.trusted()
    for rel in (
        "AGENTS.md",
        "deep/down/AGENTS.md",
        "sub/claude.md",
        ".github/copilot-instructions.md",
        ".github/instructions/new.instructions.md",
    ):
        assert protects(policy, tmp_path, rel), rel
    assert policy.decide_path(rel="AGENTS.md", abs_posix=f"{tmp_path}/AGENTS.md", op="write") == (
        "ask"
    )
    assert not protects(policy, tmp_path, "docs/agents.txt")


def test_the_system_prompt_is_unchanged_without_instruction_files(tmp_path: Path) -> None:
    plain = Workspace.local(str(tmp_path))
    reading = Workspace.local(str(tmp_path), project_instructions=True)
    assert reading.project_instructions is not None
    assert plain.instructions() == reading.instructions()
    _write(tmp_path, "AGENTS.md", "be brief\n")
    assert reading.instructions().endswith(
        '<project-instructions source="AGENTS.md">\nbe brief\n</project-instructions>'
    )
    assert plain.instructions() == Workspace.local(str(tmp_path)).instructions()


async def test_a_nested_file_joins_once_per_conversation_across_runs(tmp_path: Path) -> None:
    from lovia import Agent, Runner, SQLiteSession
    from lovia.testing import ScriptedProvider, call, text
    from lovia.transcript import ToolResultEntry

    ws = tmp_path / "ws"
    _write(ws, "sub/AGENTS.md", "sub rule\n")
    _write(ws, "sub/a.py", "a = 1\n")
    _write(ws, "sub/b.py", "b = 2\n")
    agent = Agent(
        name="reader",
        model=ScriptedProvider(
            [
                call("read_file", {"path": "sub/a.py"}, call_id="r1"),
                text("one"),
                call("read_file", {"path": "sub/b.py"}, call_id="r2"),
                text("two"),
            ]
        ),
        workspace=Workspace.local(str(ws), project_instructions=ProjectInstructions()),
    )
    outputs: dict[str, str] = {}
    async with SQLiteSession(str(tmp_path / "state.db")) as session:
        for prompt in ("read a", "read b"):
            result = await Runner.run(agent, prompt, session=session, session_id="s1")
            outputs.update(
                (e.call_id, e.output) for e in result.entries if isinstance(e, ToolResultEntry)
            )
    assert "sub rule" in outputs["r1"] and "a = 1" in outputs["r1"]
    assert "sub rule" not in outputs["r2"] and "b = 2" in outputs["r2"]


async def test_parallel_calls_under_one_folder_bring_its_file_in_once(tmp_path: Path) -> None:
    """Calls of one turn run together: all of them finish before any result is in the
    conversation, and the folder's file must still join ahead of only one of them."""
    import asyncio

    from lovia import Agent
    from lovia.run_context import RunContext
    from lovia.testing import ScriptedProvider
    from lovia.workspace.project_instructions import with_join_policies

    ws = tmp_path / "ws"
    _write(ws, "sub/AGENTS.md", "sub rule\n")
    policy = WorkspacePolicy()
    tools = with_join_policies(Workspace.local(str(ws)).tools(), ws, policy, ProjectInstructions())
    read = next(t for t in tools if t.name == "read_file")
    join = read.policies[0]
    ctx: RunContext[None] = RunContext(
        context=None, entries=[], agent=Agent(name="a", model=ScriptedProvider([]))
    )
    release = asyncio.Event()

    async def invoke(args: dict[str, object], ctx: object) -> str:
        await release.wait()
        return f"contents of {args['path']}"

    calls = [asyncio.create_task(join(invoke, {"path": f"sub/{n}.py"}, ctx)) for n in "abc"]
    await asyncio.sleep(0)
    release.set()
    outputs = await asyncio.gather(*calls)
    assert sum("sub rule" in str(o) for o in outputs) == 1
    assert all(f"sub/{n}.py" in str(o) for o, n in zip(outputs, "abc", strict=True))
    import gc

    from lovia.workspace.project_instructions import _CLAIMED

    key = id(ctx)
    assert key in _CLAIMED
    del ctx, calls
    gc.collect()
    assert key not in _CLAIMED  # the run's claims go with its context
