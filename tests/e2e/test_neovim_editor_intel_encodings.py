"""The Neovim recipe (contrib/nvim/lovia_editor_intel.lua) in headless Neovim 0.7 with a
language server that counts columns in UTF-8 bytes, UTF-32 or UTF-16
(tests/e2e/encoding_language_server.py, started as nvim-lspconfig starts clangd), through the real lovia server and a scripted model: positions
on lines with accents and an emoji are converted both ways, a buffer whose file the server
changed on disk is reloaded before an answer (a buffer with unsaved changes is not), and a file
no language server in Neovim handles is said to be so, not "none found"."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_server import RecordedRequest, Reply

NVIM = shutil.which("nvim")
HERE = Path(__file__).parent
REPO = HERE.parent.parent
RECIPE = REPO / "contrib" / "nvim" / "lovia_editor_intel.lua"
pytestmark = pytest.mark.skipif(
    NVIM is None, reason="neovim is not installed (.ci/run installs it)"
)

LINE1 = "/* café crème brûlée */ int answer(void) { return 42; }"
LINE2 = "int total(void) { /* déjà vu 🍮 */ return answer() + answer(); }"
PROG = f"{LINE1}\n{LINE2}\n"

Step = tuple[str, dict[str, Any]]


def _col(line: str, word: str, nth: int = 0) -> int:
    """The 1-based character column of the ``nth`` occurrence of ``word`` in ``line``."""
    at = -1
    for _ in range(nth + 1):
        at = line.index(word, at + 1)
    return at + 1


class Model:
    """The scripted model: one tool call per request; keeps each tool result it received."""

    def __init__(self, steps: list[Step]) -> None:
        self.steps = steps
        self.results: list[str] = []

    def __call__(self, request: RecordedRequest) -> Reply:
        results = [m["content"] for m in request.messages if m.get("role") == "tool"]
        self.results = results
        step = len(results)
        if step < len(self.steps):
            name, args = self.steps[step]
            return oai.tool_calls(oai.call(name, args, id=f"call_{step}"))
        return oai.text("Done.")


def _run(
    tmp_path: Path,
    fake_openai: FakeOpenAI,
    files: dict[str, str],
    steps: list[Step],
    *,
    open_: Sequence[str] = (),
    stale: dict[str, str] | None = None,
    unsaved: dict[str, str] | None = None,
    encoding: str = "utf-8",
    ls_cmd: Sequence[str] = (),
) -> tuple[list[str], dict[str, Any]]:
    """Runs the model's steps in headless Neovim; the tool results it received and the
    opened buffers' lines at the end."""
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    model = Model(steps)
    fake_openai.responder = model
    out = tmp_path / "out.json"
    env = {
        **os.environ,
        **fake_openai.env(),
        "LOVIA_PY": sys.executable,
        "LOVIA_ROOT": str(root),
        "LOVIA_STATE": str(tmp_path / "state"),
        "LOVIA_OUT": str(out),
        "LOVIA_PROMPT": "Find who calls answer.",
        "LOVIA_RECIPE": str(RECIPE),
        "LOVIA_ENCODING_LS": str(HERE / "encoding_language_server.py"),
        "LOVIA_LS_ENCODING": encoding,
        "LOVIA_LS_CMD": json.dumps(list(ls_cmd)) if ls_cmd else "",
        "LOVIA_OPEN": json.dumps(list(open_)),
        "LOVIA_STALE": json.dumps(stale or {}),
        "LOVIA_UNSAVED": json.dumps(unsaved or {}),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "XDG_STATE_HOME": str(tmp_path / "xdg"),
    }
    script = HERE / "nvim_editor_intel_encodings.lua"
    assert NVIM is not None
    proc = subprocess.run(
        [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {script}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    data = json.loads(out.read_text())
    events = data["events"]
    assert events[-1]["kind"] == "run.finished" and events[-1]["status"] == "completed"
    for i, result in enumerate(model.results):  # the transcript (pytest -s shows it)
        print(f"--- tool result {i}:\n{result}")
    assert len(model.results) == len(steps)
    buffers = data["buffers"] if isinstance(data["buffers"], dict) else {}
    return model.results, buffers


@pytest.mark.parametrize("encoding", ["utf-8", "utf-32", "utf-16"])
def test_positions_on_accented_lines_are_converted_to_and_from_the_servers_encoding(
    tmp_path: Path, fake_openai: FakeOpenAI, encoding: str
) -> None:
    steps: list[Step] = [
        ("go_to_definition", {"path": "prog.c", "symbol": "answer", "line": 2}),
        ("find_references", {"path": "prog.c", "symbol": "answer", "line": 1}),
        ("symbols", {"path": "prog.c"}),
    ]
    (definition, refs, outline), _ = _run(
        tmp_path, fake_openai, {"prog.c": PROG}, steps, open_=["prog.c"], encoding=encoding
    )
    assert definition.startswith(f"prog.c:1:{_col(LINE1, 'answer')}  /* café"), definition
    assert refs.splitlines() == [
        f"prog.c:1:{_col(LINE1, 'answer')}  {LINE1}",
        f"prog.c:2:{_col(LINE2, 'answer')}  {LINE2}",
        f"prog.c:2:{_col(LINE2, 'answer', 1)}  {LINE2}",
    ], refs
    assert outline.splitlines() == ["function answer  :1", "function total  :2"], outline


CLANGD = shutil.which("clangd")


@pytest.mark.skipif(CLANGD is None, reason="clangd is not installed (.ci/run installs it)")
def test_clangd_counting_utf8_bytes_gets_and_gives_utf16_positions(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """The real clangd, started as nvim-lspconfig starts it (it chooses UTF-8 columns): the
    symbol after the accented comment is found, and reference columns count characters."""
    assert CLANGD is not None
    steps: list[Step] = [
        ("go_to_definition", {"path": "prog.c", "symbol": "answer", "line": 2}),
        ("find_references", {"path": "prog.c", "symbol": "answer", "line": 1}),
        ("symbols", {"path": "prog.c"}),
    ]
    (definition, refs, outline), _ = _run(
        tmp_path,
        fake_openai,
        {"prog.c": PROG},
        steps,
        open_=["prog.c"],
        ls_cmd=[CLANGD, "--background-index=false", "--log=error"],
    )
    assert definition.startswith(f"prog.c:1:{_col(LINE1, 'answer')}  /* café"), definition
    assert refs.splitlines() == [
        f"prog.c:1:{_col(LINE1, 'answer')}  {LINE1}",
        f"prog.c:2:{_col(LINE2, 'answer')}  {LINE2}",
        f"prog.c:2:{_col(LINE2, 'answer', 1)}  {LINE2}",
    ], refs
    assert [line.split()[:2] for line in outline.splitlines()] == [
        ["function", "answer"],
        ["function", "total"],
    ], outline


def test_a_buffer_changed_on_disk_is_reloaded_before_an_answer_unsaved_changes_are_kept(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    files = {
        "moved.c": "int moved(void) { return 1; }\n",
        "draft.c": "int draft(void) { return 0; }\n",
    }
    stale = {
        "moved.c": "/* ligne ajoutée */\nint renamed(void) { return 1; }\n",
        "draft.c": "int disk_only(void) { return 0; }\n",
    }
    steps: list[Step] = [
        ("symbols", {"path": "moved.c"}),
        ("find_references", {"path": "moved.c", "symbol": "renamed"}),
        ("symbols", {"path": "draft.c"}),
    ]
    (outline, refs, draft), buffers = _run(
        tmp_path,
        fake_openai,
        files,
        steps,
        open_=["moved.c", "draft.c"],
        stale=stale,
        unsaved={"draft.c": "int unsaved(void) { return 2; }"},
    )
    # the language server was asked about the text on disk, not the buffer's old text
    assert outline.splitlines() == ["function renamed  :2"], outline
    assert refs.startswith("moved.c:2:5  int renamed(void)"), refs
    assert buffers["moved.c"] == {
        "lines": ["/* ligne ajoutée */", "int renamed(void) { return 1; }"],
        "modified": False,
    }
    # the buffer with the user's unsaved line was not reloaded over it
    assert draft.splitlines() == ["function unsaved  :1", "function draft  :2"], draft
    assert buffers["draft.c"]["modified"] is True
    assert buffers["draft.c"]["lines"][0] == "int unsaved(void) { return 2; }"


def test_a_file_no_language_server_handles_is_said_so_not_none_found(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    steps: list[Step] = [
        ("go_to_definition", {"path": "notes.txt", "symbol": "answer"}),
        ("find_references", {"path": "notes.txt", "symbol": "answer"}),
        ("symbols", {"path": "notes.txt"}),
        ("symbols", {"query": "answer"}),
        ("go_to_definition", {"path": "prog.c", "symbol": "missing"}),
    ]
    results, _ = _run(
        tmp_path,
        fake_openai,
        {"notes.txt": "the answer is in prog.c\n", "prog.c": PROG + "int x = missing;\n"},
        steps,
        open_=["prog.c"],
    )
    unhandled = (
        "No language server in the editor handles notes.txt; use grep_files or read_file instead."
    )
    assert results[:3] == [unhandled] * 3, results
    # the language server offers no workspace symbol search
    assert results[3] == (
        "No language server in the editor searches workspace symbols; use grep_files instead."
    ), results
    # a file a language server handles still gets its real empty answer
    assert results[4] == "No definition found.", results
