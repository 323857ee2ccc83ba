"""One truth for a file while the agent works (issue 36), in the session every front door uses:
a whole-file write computed from an older text than the file's is refused; an approved change
(``base``) is merged into the newer text; ``edit_file`` applies to the current text."""

from __future__ import annotations

from pathlib import Path

import pytest

from lovia.workspace import LocalWorkspaceSession
from lovia.workspace.errors import EditConflictError, FileChangedError
from lovia.workspace.text_merge import merge_text
from lovia.workspace.tools import render_workspace_result

OLD = "".join(f"line {i}\n" for i in range(1, 13))
AGENT = OLD.replace("line 3\n", "line three\n")
OTHER = OLD.replace("line 10\n", "line ten\n")


async def test_a_write_after_the_file_changed_since_the_read_is_refused(
    trusted: LocalWorkspaceSession, root: Path
) -> None:
    (root / "app.py").write_text(OLD)
    await trusted.read_text("app.py", start=1, end=2)  # a partial read knows the file too
    (root / "app.py").write_text(OTHER)
    with pytest.raises(FileChangedError) as info:
        await trusted.write_text("app.py", AGENT)
    assert "app.py changed since you last read it" in str(info.value)
    assert info.value.hint and "Read app.py again" in info.value.hint
    assert (root / "app.py").read_text() == OTHER
    await trusted.read_text("app.py")  # read again: the write goes through
    change = await trusted.write_text("app.py", OTHER.replace("line 3\n", "line three\n"))
    assert render_workspace_result(change) == "updated app.py (92 bytes)"


async def test_the_agents_own_write_is_what_it_knows_and_an_unread_file_is_not_compared(
    trusted: LocalWorkspaceSession, root: Path
) -> None:
    (root / "app.py").write_text(OLD)
    await trusted.write_text("app.py", AGENT)  # never read: nothing to compare with
    await trusted.write_text("app.py", OLD)  # its own previous write is what it knows
    assert (root / "app.py").read_text() == OLD


async def test_an_edit_applies_to_the_current_text_and_a_whole_write_then_needs_a_read(
    trusted: LocalWorkspaceSession, root: Path
) -> None:
    (root / "app.py").write_text(OLD)
    await trusted.read_text("app.py")
    (root / "app.py").write_text(OTHER)
    result = await trusted.edit_text("app.py", "line 3\n", "line three\n")
    assert (root / "app.py").read_text() == OTHER.replace("line 3\n", "line three\n")
    assert "had changed since you last read it" in render_workspace_result(result)
    again = await trusted.edit_text("app.py", "line 4\n", "line four\n")  # told once
    assert render_workspace_result(again) == "edited app.py (1 replacement)"
    with pytest.raises(FileChangedError):
        await trusted.write_text("app.py", AGENT)


async def test_an_approved_change_is_merged_into_a_newer_text_or_conflicts(
    trusted: LocalWorkspaceSession, root: Path
) -> None:
    (root / "app.py").write_text(OTHER)
    change = await trusted.write_text("app.py", AGENT, base=OLD)
    assert (root / "app.py").read_text() == OTHER.replace("line 3\n", "line three\n")
    assert "their changes were kept" in render_workspace_result(change)
    mine = OLD.replace("line 3\n", "line 3 mine\n")
    (root / "app.py").write_text(mine)
    with pytest.raises(EditConflictError, match="overlaps a change made to the same lines"):
        await trusted.write_text("app.py", AGENT, base=OLD)
    assert (root / "app.py").read_text() == mine


async def test_merge_text_keeps_both_sides_and_refuses_overlaps() -> None:
    assert await merge_text(OTHER, OLD, AGENT) == OTHER.replace("line 3\n", "line three\n")
    assert await merge_text(OLD, OLD, AGENT) == AGENT
    assert await merge_text(OTHER, OLD, OLD) == OTHER
    assert await merge_text(OLD.replace("line 3", "x"), OLD, AGENT) is None
