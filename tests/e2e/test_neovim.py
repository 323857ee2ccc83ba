"""A real editor: headless Neovim 0.7 runs a prompt through lovia-server with its LSP client,
with the server's default settings: edits ask first, and land in Neovim's buffers."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

NVIM = shutil.which("nvim")
pytestmark = pytest.mark.skipif(
    NVIM is None, reason="neovim is not installed (.ci/run installs it)"
)

AGENT = textwrap.dedent(
    """
    from lovia import Agent
    from lovia.testing import ScriptedProvider, call, text

    agent = Agent(
        name="nvim-editor",
        model=ScriptedProvider([
            call("read_file", {"path": "notes.txt"}, call_id="r1"),
            call("edit_file", {"path": "notes.txt", "old": "draft", "new": "final"}, call_id="e1"),
            call("edit_file", {"path": "other.txt", "old": "beta", "new": "gamma"}, call_id="e2"),
            call("write_file", {"path": "new.txt", "content": "fresh\\n"}, call_id="w1"),
            text("Edited notes.txt."),
        ]),
    )
    """
)


def test_neovim_with_default_settings_reviews_edits_and_buffers_match_the_files(tmp_path):
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / "agent.py").write_text(AGENT)
    (root / "notes.txt").write_text("draft on disk\n")
    (root / "other.txt").write_text("alpha\nbeta\n")
    out = tmp_path / "events.json"
    env = {
        **os.environ,
        "LOVIA_PY": sys.executable,
        "LOVIA_ROOT": str(root),
        "LOVIA_STATE": str(tmp_path / "state"),
        "LOVIA_OUT": str(out),
        "LOVIA_PROMPT": "finalise the notes",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "XDG_STATE_HOME": str(tmp_path / "xdg"),
    }
    script = Path(__file__).with_name("nvim_client.lua")
    proc = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {script}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    data = json.loads(out.read_text())
    events = data["events"]
    kinds = [e["kind"] for e in events]
    assert data["run"]["status"] == "running"
    assert kinds[0] == "run.started" and kinds[-1] == "run.finished"
    assert events[-1]["status"] == "completed"
    read = next(e for e in events if e["kind"] == "tool.result" and e["toolCallId"] == "r1")
    assert "draft from the editor buffer" in read["content"][0]["text"]
    # Default settings: every edit asked first, with the diff from the editor's buffer.
    asked = {e["toolCallId"]: e for e in events if e["kind"] == "approval.requested"}
    assert set(asked) == {"e1", "e2", "w1"}
    assert asked["e1"]["action"] == "file.write"
    assert asked["e1"]["diff"][0]["oldText"] == "draft from the editor buffer\n"
    assert asked["e1"]["diff"][0]["newText"] == "final from the editor buffer\n"
    resolved = [e for e in events if e["kind"] == "approval.resolved"]
    assert all(r["outcome"] == "allowed" and r["by"] == "user" for r in resolved)
    # The buffers hold what the agent wrote: the unsaved one keeps the user's text under the
    # edit (the disk waits for the user's save), the unmodified one was saved right away.
    buffers = data["buffers"]
    assert buffers["notes"] == {"text": "final from the editor buffer\n", "modified": True}
    assert data["notesOnDiskBeforeSave"] == "draft on disk\n"
    assert (root / "notes.txt").read_text() == buffers["notes"]["text"]  # after the user's :w
    assert buffers["other"] == {"text": "alpha\ngamma\n", "modified": False}
    assert (root / "other.txt").read_text() == buffers["other"]["text"]
    assert (root / "new.txt").read_text() == "fresh\n"  # no buffer: the server wrote it
