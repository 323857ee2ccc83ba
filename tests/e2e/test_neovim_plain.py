"""Neovim with no lovia handlers: the built-in client as it comes, no ``init_options``, no recipe.
A problem another language server (attached beside lovia) reports is fixed from
``vim.lsp.buf.code_action()``: the approval prompt shows
the diff with *Reject* first, a dismissed prompt leaves the approval waiting and reachable from
the menu, the edit lands in the buffer, the answer is shown, a new file is on disk."""

from __future__ import annotations

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
        name="fixer",
        model=ScriptedProvider([
            call("edit_file", {"path": "app.py", "old": "undefined_name", "new": "1"},
                 call_id="e1"),
            call("write_file", {"path": "new_mod.py", "content": "X = 1\\n"}, call_id="w1"),
            text("Fixed the undefined name and added new_mod.py."),
        ]),
    )
    """
)


def test_a_plain_neovim_fixes_a_problem_from_the_code_action_menu(tmp_path: Path) -> None:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / "agent.py").write_text(AGENT)
    (root / "app.py").write_text("x = undefined_name\n")
    out = tmp_path / "seen.json"
    env = {
        **os.environ,
        "LOVIA_PY": sys.executable,
        "LOVIA_LS": str(Path(__file__).with_name("problem_language_server.py")),
        "LOVIA_ROOT": str(root),
        "LOVIA_OUT": str(out),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "XDG_STATE_HOME": str(tmp_path / "xdg"),
    }
    script = Path(__file__).with_name("nvim_plain_client.lua")
    assert NVIM is not None
    proc = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {script}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    seen = json.loads(out.read_text())

    first_menu = seen["menus"][0]
    assert first_menu[0] == "lovia: Fix this problem"
    assert {"lovia: Explain this", "lovia: Write tests for this", "lovia: Ask about this…"} <= set(
        first_menu
    )
    # the prompt: the diff in the message, Reject first (Neovim's list has no default, but a
    # client that pre-selects the first action selects a safe one)
    prompt = seen["prompts"][0]
    assert "-x = undefined_name" in prompt[0] and "+x = 1" in prompt[0]
    assert prompt[2] == "1. Reject"
    # dismissed: nothing decided, the run waits, and the menu offers the approval again
    assert seen["textWhileDismissed"] == "x = undefined_name"
    assert "lovia: Show pending approvals" in seen["menus"][1]
    assert "lovia: Cancel" in seen["menus"][1]
    assert len(seen["prompts"]) == 3  # the same approval asked again, then the new file's
    assert seen["prompts"][1][0] == prompt[0]
    assert "new_mod.py" in seen["prompts"][2][0] and "+X = 1" in seen["prompts"][2][0]
    # the edit landed in the buffer (unsaved: the user saves it), the new file is on disk
    assert seen["buffer"] == "x = 1\n" and seen["modified"] is True
    assert seen["problemsAfter"] == 0  # the other language server sees the problem gone
    assert seen["clients"] == 2  # lovia beside the user's language server
    assert (root / "new_mod.py").read_text() == "X = 1\n"
    messages = seen["messages"]
    # (Neovim declares work-done progress: the run's progress goes there, not to messages)
    assert any("Show pending approvals" in m for m in messages)
    assert f"lovia: created {root / 'new_mod.py'}" in messages
    assert "lovia: Fixed the undefined name and added new_mod.py." in messages
