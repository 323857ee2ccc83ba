"""The editor's eyes for the agent in headless Neovim 0.7: a real language server (pyright,
installed by ./dev test into tests/e2e/pyright) runs beside lovia-server, and the documented
recipe (contrib/nvim/lovia_editor_intel.lua) answers lovia/editor/* from Neovim's diagnostics and
from pyright. A scripted model (the fake OpenAI server) breaks calc.py, fixes it, for a few
rounds, then asks for the references and the definition of ``add``, the outline of calc.py and a
workspace symbol search; what the model received is checked."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_server import RecordedRequest, Reply

NVIM = shutil.which("nvim")
HERE = Path(__file__).parent
REPO = HERE.parent.parent
PYRIGHT = HERE / "pyright" / "node_modules" / ".bin" / "pyright-langserver"
RECIPE = REPO / "contrib" / "nvim" / "lovia_editor_intel.lua"
pytestmark = pytest.mark.skipif(
    NVIM is None, reason="neovim is not installed (.ci/run installs it)"
)

CALC = "def add(a: int, b: int) -> int:\n    return a + b\n"
MAIN = "from calc import add\n\ntotal: int = add(2, 3)\n"
ROUNDS = 3
BREAK = {"path": "calc.py", "old": "return a + b", "new": "return a + missing"}
FIX = {"path": "calc.py", "old": "return a + missing", "new": "return a + b"}
STEPS: list[tuple[str, dict[str, str]]] = [
    ("edit_file", BREAK if i % 2 == 0 else FIX) for i in range(2 * ROUNDS)
]
STEPS.append(("find_references", {"path": "calc.py", "symbol": "add"}))
STEPS.append(("go_to_definition", {"path": "main.py", "symbol": "add", "line": 3}))
STEPS.append(("symbols", {"path": "calc.py"}))
STEPS.append(("symbols", {"query": "add"}))


class Model:
    """The scripted model: one step per request, with when each request came and went."""

    def __init__(self) -> None:
        self.turns: list[dict[str, Any]] = []

    def __call__(self, request: RecordedRequest) -> Reply:
        got = time.monotonic()
        results = [m["content"] for m in request.messages if m.get("role") == "tool"]
        step = len(results)
        reply = (
            oai.tool_calls(oai.call(STEPS[step][0], STEPS[step][1], id=f"call_{step}"))
            if step < len(STEPS)
            else oai.text("Done.")
        )
        tools = [t["function"]["name"] for t in (request.json or {}).get("tools", [])]
        self.turns.append(
            {
                "received": got,
                "sent": time.monotonic(),
                "result": results[-1] if results else None,
                "tools": tools,
            }
        )
        return reply


def _pct(values: list[float], p: int) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, -(-p * len(s) // 100) - 1))]


def test_neovim_recipe_reports_pyright_errors_after_edits_references_and_symbols(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    if not PYRIGHT.exists():
        missing = "pyright is not installed (./dev test runs npm ci in tests/e2e/pyright)"
        if os.environ.get("LOVIA_REQUIRE_ALL") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "main.py").write_text(MAIN)
    model = Model()
    fake_openai.responder = model
    out = tmp_path / "out.json"
    env = {
        **os.environ,
        **fake_openai.env(),
        "LOVIA_PY": sys.executable,
        "LOVIA_ROOT": str(root),
        "LOVIA_STATE": str(tmp_path / "state"),
        "LOVIA_OUT": str(out),
        "LOVIA_PROMPT": "Break calc.py and fix it, then find who calls add.",
        "LOVIA_PYRIGHT": str(PYRIGHT),
        "LOVIA_RECIPE": str(RECIPE),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "XDG_STATE_HOME": str(tmp_path / "xdg"),
    }
    script = HERE / "nvim_editor_intel.lua"
    proc = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {script}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    data = json.loads(out.read_text())
    events = data["events"]
    assert events[-1]["kind"] == "run.finished" and events[-1]["status"] == "completed"
    turns = model.turns
    for i, t in enumerate(turns):  # the transcript (pytest -s shows it)
        print(f"--- request {i} carried:\n{t['result']}")
    assert len(turns) == len(STEPS) + 1
    assert {"diagnostics", "find_references", "go_to_definition", "symbols"} <= set(
        turns[0]["tools"]
    )

    latencies = []
    for i in range(2 * ROUNDS):
        result = turns[i + 1]["result"]
        latencies.append(turns[i + 1]["received"] - turns[i]["sent"])
        if i % 2 == 0:
            # pyright's own words, at the edited line of the edited file
            assert "New problems after this edit (1 errors, 0 warnings):" in result, result
            assert 'calc.py:2:16  error: "missing" is not defined' in result, result
        else:
            assert result.endswith("No new problems."), result
    for seconds in latencies:
        assert seconds < 3.0, latencies
    refs, definition, outline, search = (t["result"] for t in turns[-4:])
    assert "main.py:3:14" in refs, refs
    assert "add(2, 3)" in refs, refs
    # pyright's definition of the call in main.py, its outline of calc.py and its search
    assert definition.startswith("calc.py:1:5  def add("), definition
    assert "function add  :1" in outline, outline
    assert "calc.py:1:5  function add" in search, search
    assert (root / "calc.py").read_text() == CALC
    # calc.py was loaded for pyright by the recipe, and lovia and pyright are attached to it
    assert data["calcLoaded"] is True
    assert sorted(data["calcClients"]) == ["lovia", "pyright"]
    ms = [round(s * 1000) for s in latencies]
    print(f"edit->result ms: {ms} p50 {round(_pct(ms, 50))} p95 {round(_pct(ms, 95))}")
