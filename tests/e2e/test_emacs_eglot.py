"""A new Emacs user's eglot (Debian's emacs-nox 28 and elpa-eglot 1.9) with clangd and lovia
side by side through rass, the multiplexer (docs/editors.md, "Emacs"). The user's init is the
few lines that page gives; Emacs runs in tmux and is typed at; the model is the scripted fake
OpenAI server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.emacs_tmux import EmacsInTmux, missing_tools
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
