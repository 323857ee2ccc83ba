"""A new Emacs user's eglot (Debian's emacs-nox 28 and elpa-eglot 1.9) with clangd and lovia
side by side through rass, the multiplexer (docs/editors.md, "Emacs"). The user's init is the
few lines that page gives; Emacs runs in tmux and is typed at; the model is the scripted fake
OpenAI server."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.emacs_tmux import EmacsInTmux, missing_tools
from tests.support import fake_openai as oai
from tests.support.fake_openai import FakeOpenAI

BIN = Path(sys.executable).parent
RASS = shutil.which("rass", path=str(BIN)) or shutil.which("rass")


def _skip_or_fail() -> None:
    missing = missing_tools() + ([] if RASS else ["rass (pip install -e '.[emacs]')"])
    if missing:
        reason = f"needs {', '.join(missing)} (.ci/run installs them)"
        if os.environ.get("LOVIA_REQUIRE_ALL") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


# What docs/editors.md tells an Emacs user to put in ~/.emacs.d/init.el.
USER_INIT = """\
(require 'eglot)
(add-to-list 'eglot-server-programs
             '(c-mode . ("rass" "--log-level" "warn" "--" "clangd" "--" "lovia-server")))
(setq-default eglot-workspace-configuration
              '((:lovia . (:model "openai:fake-model"))))
(add-hook 'c-mode-hook #'eglot-ensure)
"""

CALC = """\
int add(int a, int b) { return a + b; }

int main(void) {
    int total = add(2, 3);
    return totl;
}
"""


def start_emacs(tmp_path: Path, fake_openai: FakeOpenAI, files: dict[str, str]) -> EmacsInTmux:
    home = tmp_path / "home"
    (home / ".emacs.d").mkdir(parents=True)
    (home / ".emacs.d" / "init.el").write_text(USER_INIT)
    root = (tmp_path / "proj").resolve()
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    env = {
        **os.environ,
        **fake_openai.env(),
        "HOME": str(home),
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "TERM": "xterm-256color",
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "XDG_DATA_HOME": str(tmp_path / "xdg"),
        "XDG_STATE_HOME": str(tmp_path / "xdg"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
    }
    env.pop("TMUX", None)
    return EmacsInTmux(home, env, root, list(files))


@pytest.fixture
def calc_session(tmp_path: Path, fake_openai: FakeOpenAI) -> Iterator[EmacsInTmux]:
    _skip_or_fail()
    emacs = start_emacs(tmp_path, fake_openai, {"calc.c": CALC})
    try:
        yield emacs
    finally:
        emacs.close()


IN_CALC = '(with-current-buffer "calc.c" {})'


def wait_for_eglot(emacs: EmacsInTmux) -> None:
    emacs.wait(
        lambda: emacs.eval(IN_CALC.format("(and (eglot-current-server) t)")) == "t",
        90,
        "eglot to connect in calc.c",
    )


def diagnostics(emacs: EmacsInTmux) -> str:
    return emacs.text_of(
        IN_CALC.format(
            '(mapconcat (lambda (d) (format "%s:%s" (line-number-at-pos (flymake-diagnostic-beg d))'
            ' (flymake-diagnostic-text d))) (flymake-diagnostics) "\\n")'
        )
    )


def test_clangd_still_answers_completions_and_diagnostics_through_rass_with_lovia(
    calc_session: EmacsInTmux,
) -> None:
    emacs = calc_session
    wait_for_eglot(emacs)
    # Both servers answered initialize: rass merged clangd's and lovia's server info.
    name = emacs.text_of(
        IN_CALC.format("(plist-get (eglot--server-info (eglot-current-server)) :name)")
    )
    assert "clangd" in name and "lovia" in name, name
    caps = emacs.text_of(
        IN_CALC.format("(prin1-to-string (eglot--capabilities (eglot-current-server)))")
    )
    assert ":lovia" in caps and ":completionProvider" in caps, caps
    # clangd's diagnostic reaches flymake.
    emacs.wait(
        lambda: "undeclared identifier 'totl'" in diagnostics(emacs), 60, "clangd's diagnostic"
    )
    assert diagnostics(emacs).startswith("5:"), diagnostics(emacs)
    # Completion at "return to|tl" is clangd's: the local variable `total` is offered.
    labels = emacs.text_of(
        IN_CALC.format(
            '(progn (goto-char (point-min)) (search-forward "return to")'
            " (let* ((capf (eglot-completion-at-point))"
            ' (all (all-completions "to" (nth 2 capf)))) (mapconcat #\'identity all ",")))'
        )
    )
    assert "total" in labels.split(","), labels
    # Hover on `add` in main is clangd's too.
    hover = emacs.text_of(
        IN_CALC.format(
            '(progn (goto-char (point-min)) (search-forward "= ad")'
            " (let ((h (jsonrpc-request (eglot-current-server) :textDocument/hover"
            " (eglot--TextDocumentPositionParams)))) (prin1-to-string h)))"
        )
    )
    assert "int add(int a, int b)" in hover, hover
    # Typing still works: the fix by hand clears clangd's diagnostic.
    emacs.eval(IN_CALC.format('(progn (goto-char (point-min)) (search-forward "totl"))'))
    emacs.eval('(switch-to-buffer "calc.c")')
    emacs.keys("BSpace", "BSpace")
    emacs.type("tal")
    emacs.wait(lambda: diagnostics(emacs) == "", 60, "the diagnostic to clear after the edit")


NEW_TEST = "#include <assert.h>\nint add(int, int);\nint main(void) { assert(add(2, 3) == 5); }\n"
ANSWER = "Fixed: totl was a typo for total; added calc_test.c."


class FixModel:
    """The scripted model of the fix run: edit calc.c, create calc_test.c, answer."""

    def __init__(self) -> None:
        self.requests: list[list[dict[str, object]]] = []

    def __call__(self, request: object) -> object:
        messages = request.messages  # type: ignore[attr-defined]
        self.requests.append(messages)
        done = sum(1 for m in messages if m.get("role") == "tool")
        if done == 0:
            edit = {"path": "calc.c", "old": "return totl;", "new": "return total;"}
            return oai.tool_calls(oai.call("edit_file", edit, id="e1"))
        if done == 1:
            return oai.tool_calls(
                oai.call("write_file", {"path": "calc_test.c", "content": NEW_TEST}, id="w1")
            )
        return oai.text(ANSWER)


def choose_action(emacs: EmacsInTmux, first_letter: str) -> None:
    """``M-x eglot-code-actions``, then the lovia action starting with that letter, as typed:
    ``lovia:`` SPC (completes the word) the letter TAB (completes the title) RET."""
    emacs.keys("M-x")
    emacs.wait_screen("M-x", 10)
    emacs.type("eglot-code-actions")
    emacs.keys("Enter")
    emacs.wait_screen("Pick an action", 30)
    emacs.type("lovia:")
    emacs.keys("Space")
    emacs.type(first_letter)
    emacs.keys("Tab")
    emacs.wait(
        lambda: "lovia: " + first_letter in emacs.screen().split("Pick an action")[-1],
        10,
        "the action's title to complete",
    )
    emacs.keys("Enter")


def answer(emacs: EmacsInTmux, choice: str) -> None:
    """eglot 1.9 fills the prompt with the first choice (RET takes it): clear it, type ours."""
    emacs.keys("C-a", "C-k")
    emacs.type(choice)
    emacs.keys("Enter")


def test_fix_this_problem_from_eglot_code_actions_with_the_diff_a_safe_default_and_c_g(
    calc_session: EmacsInTmux, fake_openai: FakeOpenAI
) -> None:
    emacs = calc_session
    model = FixModel()
    fake_openai.responder = model
    root = Path(emacs.text_of('(with-current-buffer "calc.c" default-directory)'))
    wait_for_eglot(emacs)
    emacs.wait(
        lambda: "undeclared identifier 'totl'" in diagnostics(emacs), 60, "clangd's diagnostic"
    )
    emacs.eval(
        '(progn (switch-to-buffer "calc.c") (goto-char (point-min)) (search-forward "totl"))'
    )

    # The menu has clangd's fix and lovia's; the user picks lovia's.
    choose_action(emacs, "F")
    screen = emacs.wait_screen("Choose an option", 60)
    # The approval shows the diff, and the default (RET) is a safe one.
    assert "-    return totl;" in screen and "+    return total;" in screen, screen
    asked = emacs.events_tail(20000)
    assert "window/showMessageRequest" in asked, asked
    assert re.search(r':actions\s*\[\(:title "Reject"\)', asked), asked
    assert "Choose an option: Reject" in screen, screen  # what RET would answer
    save_capture("emacs-eglot-approval.txt", screen)

    # C-g: the prompt goes, the run waits (the model is not asked again).
    emacs.keys("C-g")
    emacs.wait(lambda: "Choose an option" not in emacs.screen(), 10, "the prompt to close")
    time.sleep(1.0)
    assert len(model.requests) == 1, model.requests
    assert "return totl;" in emacs.buffer_text("calc.c")

    # The approval is reachable again from the menu.
    choose_action(emacs, "S")  # lovia: Show pending approvals
    screen = emacs.wait_screen("Choose an option", 30)
    assert "+    return total;" in screen, screen
    answer(emacs, "Accept")
    # eglot's own confirmation of a server-initiated edit.
    emacs.wait_screen("(y or n)", 30)
    emacs.keys("y")
    # The edit lands in the buffer.
    emacs.wait(lambda: "return total;" in emacs.buffer_text("calc.c"), 30, "the edit in the buffer")

    # The new file: asked too, then written on disk. (While a prompt is open eglot reads
    # nothing else from the server: clangd's new diagnostics wait behind it.)
    screen = emacs.wait_screen("Choose an option", 60)
    assert "calc_test.c" in screen, screen
    answer(emacs, "Accept")
    emacs.wait(lambda: (root / "calc_test.c").exists(), 30, "calc_test.c on disk")
    assert (root / "calc_test.c").read_text() == NEW_TEST
    # clangd's problem is gone. eglot sends the edit to the servers once Emacs goes idle after
    # a key; an edit made inside its prompts' idleness waits for the user's next key (C-l).
    emacs.keys("C-l")
    emacs.wait(lambda: diagnostics(emacs) == "", 60, "clangd's diagnostic to clear")
    # The answer is in *Messages*.
    emacs.wait(lambda: ANSWER in emacs.messages(), 60, "the answer in *Messages*")
    assert len(model.requests) == 3
    save_capture("emacs-eglot-end.txt", emacs.screen())


def save_capture(name: str, screen: str) -> None:
    """Screens for the docs, kept when LOVIA_CAPTURES names a folder."""
    folder = os.environ.get("LOVIA_CAPTURES")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / name).write_text(screen)
