"""The approval prompt docs/neovim.md gives, run in headless Neovim with the options the server
sends: every choice has its own key (the labels share first letters: Accept, Accept always,
Always reject), the default is Reject, and the chosen key's decision is what is sent."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lovia_server.host.payloads import APPROVAL_OPTIONS, PROTECTED_OPTIONS

NVIM = shutil.which("nvim")
DOC = Path(__file__).resolve().parents[2] / "docs" / "neovim.md"
pytestmark = pytest.mark.skipif(
    NVIM is None, reason="neovim is not installed (.ci/run installs it)"
)

DRIVER = """
local out = {}
lovia = { client = 1 }
vim.lsp.get_client_by_id = function()
  return { request = function(method, params) out.method, out.params = method, params end }
end
vim.fn.confirm = function(text, choices, default)  -- what the user sees, and their key
  out.text, out.choices, out.default = text, choices, default
  for i, choice in ipairs(vim.split(choices, "\\n", { plain = true })) do
    if choice:find("&" .. PRESS, 1, true) then return i end
  end
  return 0
end
%s
lovia.ask(EVENT)
local f = assert(io.open(OUT, "w"))
f:write(vim.fn.json_encode(out))
f:close()
"""


def _ask_snippet() -> str:
    text = DOC.read_text()
    found = re.search(r"^function lovia\.ask\(ev\)\n.*?^end\n", text, re.M | re.S)
    assert found, "docs/neovim.md has no lovia.ask"
    return found.group(0)


@pytest.mark.parametrize("kind", ["file", "command", "other", "protected"])
def test_every_choice_of_the_documented_prompt_has_its_own_key(tmp_path: Path, kind: str) -> None:
    options = PROTECTED_OPTIONS if kind == "protected" else APPROVAL_OPTIONS[kind]
    event = {
        "runId": "r1",
        "approvalId": "a1",
        "title": "Edit app.py",
        "detail": "+ one line",
        "options": [o.model_dump(mode="json") for o in options],
    }
    for press, option in enumerate(options, start=1):
        out = tmp_path / f"out{press}.json"
        script = tmp_path / "drive.lua"
        script.write_text(
            f"EVENT = vim.fn.json_decode({json.dumps(json.dumps(event))})\n"
            f"PRESS = {json.dumps(str(press))}\nOUT = {json.dumps(str(out))}\n"
            + DRIVER
            % _ask_snippet()
        )
        assert NVIM is not None
        subprocess.run(
            [
                NVIM,
                "--headless",
                "-u",
                "NONE",
                "-i",
                "NONE",
                "-n",
                "-c",
                f"luafile {script}",
                "-c",
                "qa!",
            ],
            check=True,
            timeout=60,
            capture_output=True,
        )
        seen = json.loads(out.read_text())
        choices = seen["choices"].split("\n")
        keys = [c[c.index("&") + 1].lower() for c in choices]
        assert len(set(keys)) == len(keys), choices  # no two choices share a key
        assert [c.split(" ", 1)[1] for c in choices] == [o.label for o in options]
        assert options[seen["default"] - 1].decision == "reject_once"
        assert seen["method"] == "lovia/approve"
        assert seen["params"]["decision"] == option.decision  # the key pressed is what is sent
