"""Workspace tools present themselves: kinds, titles, locations and edit previews computed by
the workspace's own edit logic on a real session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lovia.tools.base import Tool
from lovia.tools.presentation import CallPresentation, ToolLocation, present_call, preview_call
from lovia.workspace import LocalWorkspaceSession, WorkspaceError
from lovia.workspace import tools as wt

L = ToolLocation

CASES: list[tuple[str, Tool, dict[str, Any], CallPresentation]] = [
    ("read", wt.read_file, {"path": "a.py"}, CallPresentation("read", "Read a.py", [L("a.py")])),
    (
        "read range",
        wt.read_file,
        {"path": "a.py", "start": 5, "end": 9},
        CallPresentation("read", "Read a.py (lines 5-9)", [L("a.py", 5)]),
    ),
    (
        "read open end",
        wt.read_file,
        {"path": "a.py", "start": 5},
        CallPresentation("read", "Read a.py (lines 5-end)", [L("a.py", 5)]),
    ),
    ("read no path", wt.read_file, {}, CallPresentation("read", "Read file", [])),
    (
        "image",
        wt.view_image,
        {"path": "p.png"},
        CallPresentation("read", "View image p.png", [L("p.png")]),
    ),
    ("image no path", wt.view_image, {}, CallPresentation("read", "View image", [])),
    ("list default", wt.list_files, {}, CallPresentation("search", "List .", [])),
    ("list", wt.list_files, {"path": "src"}, CallPresentation("search", "List src", [L("src")])),
    (
        "grep",
        wt.grep_files,
        {"pattern": "def x", "path": "src"},
        CallPresentation("search", "Search 'def x' in src", [L("src")]),
    ),
    ("grep root", wt.grep_files, {"pattern": "x"}, CallPresentation("search", "Search 'x' in .")),
    (
        "write",
        wt.write_file,
        {"path": "n.txt", "content": "x"},
        CallPresentation("edit", "Write n.txt", [L("n.txt")]),
    ),
    (
        "edit",
        wt.edit_file,
        {"path": "a.py", "old": "a", "new": "b"},
        CallPresentation("edit", "Edit a.py", [L("a.py")]),
    ),
    ("shell", wt.shell, {"command": "ls -la"}, CallPresentation("execute", "Run `ls -la`")),
    (
        "shell described",
        wt.shell,
        {"command": "ls", "description": "List things", "cwd": "src"},
        CallPresentation("execute", "List things", [L("src")]),
    ),
    (
        "shell cwd .",
        wt.shell,
        {"command": "ls", "cwd": "."},
        CallPresentation("execute", "Run `ls`"),
    ),
    (
        "output",
        wt.read_process_output,
        {"process_id": "bg-1"},
        CallPresentation("read", "Read output of bg-1"),
    ),
    ("kill", wt.kill_process, {"process_id": "bg-1"}, CallPresentation("execute", "Stop bg-1")),
]


@pytest.mark.parametrize(("label", "t", "args", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_workspace_tool_presents_its_calls(
    label: str, t: Tool, args: dict[str, Any], expected: CallPresentation
) -> None:
    assert present_call(t, t.name, args) == expected


def test_a_long_command_is_shortened_in_the_title() -> None:
    title = present_call(wt.shell, "shell", {"command": "echo " + "x" * 200}).title
    assert title.startswith("Run `echo x") and title.endswith("…`") and len(title) == 76


def test_only_edit_tools_offer_a_preview() -> None:
    with_preview = {t.name for t in _bundle() if t.preview is not None}
    assert with_preview == {"write_file", "edit_file"}


def _bundle() -> list[Tool]:
    return [
        wt.read_file,
        wt.view_image,
        wt.list_files,
        wt.grep_files,
        wt.write_file,
        wt.edit_file,
        wt.shell,
        wt.read_process_output,
        wt.kill_process,
    ]


async def test_write_preview_of_a_new_file_has_no_old_text(
    coding: LocalWorkspaceSession, root: Path
) -> None:
    diffs = await preview_call(wt.write_file, {"path": "sub/new.txt", "content": "hi\n"}, coding)
    assert diffs == [{"path": str(root / "sub" / "new.txt"), "oldText": None, "newText": "hi\n"}]
    assert not (root / "sub").exists()


async def test_write_preview_of_an_existing_file_shows_both_texts(
    coding: LocalWorkspaceSession, root: Path
) -> None:
    (root / "a.txt").write_text("old\n")
    diffs = await preview_call(wt.write_file, {"path": "a.txt", "content": "new\n"}, coding)
    assert diffs == [{"path": str(root / "a.txt"), "oldText": "old\n", "newText": "new\n"}]
    assert (root / "a.txt").read_text() == "old\n"


async def test_edit_preview_matches_what_the_edit_writes(
    coding: LocalWorkspaceSession, root: Path
) -> None:
    (root / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    args = {"path": "crlf.txt", "old": "one\ntwo", "new": "uno\ndos"}
    (diff,) = await preview_call(wt.edit_file, args, coding)
    assert diff["oldText"] == "one\r\ntwo\r\nthree\r\n"
    result = await coding.edit_text("crlf.txt", args["old"], args["new"])
    assert result.changed
    assert diff["newText"] == (root / "crlf.txt").read_bytes().decode() == "uno\r\ndos\r\nthree\r\n"


async def test_edit_preview_replace_all(coding: LocalWorkspaceSession, root: Path) -> None:
    (root / "a.txt").write_text("x x x")
    args = {"path": "a.txt", "old": "x", "new": "y", "replace_all": True}
    (diff,) = await preview_call(wt.edit_file, args, coding)
    assert diff["newText"] == "y y y"


@pytest.mark.parametrize(
    "args",
    [
        {"path": "a.txt", "old": "absent", "new": "y"},  # not found
        {"path": "a.txt", "old": "x", "new": "y"},  # ambiguous
        {"path": "a.txt", "old": "", "new": "y"},  # empty old
        {"path": "missing.txt", "old": "x", "new": "y"},  # no file to edit
        {"path": ".env", "old": "S", "new": "T"},  # denied path
        {"path": 3, "old": "x", "new": "y"},  # malformed arguments
    ],
)
async def test_an_edit_that_would_fail_previews_nothing(
    coding: LocalWorkspaceSession, root: Path, args: dict[str, Any]
) -> None:
    (root / "a.txt").write_text("x x")
    (root / ".env").write_text("S=1\n")
    assert await wt.edit_file.preview(args, coding) == []  # type: ignore[misc]


async def test_a_denied_write_previews_nothing(coding: LocalWorkspaceSession, root: Path) -> None:
    (root / ".env").write_text("S=1\n")
    assert await preview_call(wt.write_file, {"path": ".env", "content": "x"}, coding) == []


async def test_the_preview_reads_the_overlay_like_the_edit(root: Path) -> None:
    (root / "a.py").write_text("on disk\n")

    class Overlay:
        def text_for(self, path: Path) -> str | None:
            return "unsaved\n" if path == root / "a.py" else None

    session = LocalWorkspaceSession(root, overlay=Overlay())
    try:
        (diff,) = await preview_call(
            wt.edit_file, {"path": "a.py", "old": "unsaved", "new": "saved"}, session
        )
    finally:
        await session.close()
    assert (diff["oldText"], diff["newText"]) == ("unsaved\n", "saved\n")


async def test_current_text_is_none_for_a_missing_file_and_refuses_denied_paths(
    coding: LocalWorkspaceSession, root: Path
) -> None:
    (root / ".env").write_text("S=1\n")
    assert await coding.current_text("nope.txt") is None
    with pytest.raises(WorkspaceError, match="denied"):
        await coding.current_text(".env")


async def test_a_workspace_without_current_text_previews_nothing(root: Path) -> None:
    class Bare:
        def __init__(self) -> None:
            self.root = root

    assert await preview_call(wt.write_file, {"path": "a", "content": "x"}, Bare()) == []
