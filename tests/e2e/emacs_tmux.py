"""A user's Emacs in a terminal: ``emacs -nw`` inside a private tmux server, typed at with
``tmux send-keys``, its screen read with ``capture-pane``, and its state read back with
``emacsclient --eval`` (the harness's only addition to the user's init is ``server-start``).

Every wait is bounded and, on timeout, fails with the screen, ``*Messages*`` and the tail of
eglot's events buffer (``LOVIA_EVENTS_TAIL`` characters, 6000 by default), which is what one
needs to see on a busy machine."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

EMACS = shutil.which("emacs")
EMACSCLIENT = shutil.which("emacsclient")
TMUX = shutil.which("tmux")

HARNESS_EL = """
(setq native-comp-async-report-warnings-errors 'silent)  ; Debian's elpa, compiled on first use
(setq server-socket-dir {sockdir})
(server-start)
"""


def elisp_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class EmacsInTmux:
    """One ``emacs -nw`` in one tmux session; stopped by ``close`` (tmux kill-server)."""

    def __init__(self, home: Path, env: dict[str, str], cwd: Path, files: list[str]) -> None:
        assert EMACS and EMACSCLIENT and TMUX
        self.home = home
        self.sockdir = home / "emacs-server"
        self.tmux_socket = home / "tmux.sock"
        self.env = env
        harness = home / "harness.el"
        harness.write_text(HARNESS_EL.format(sockdir=elisp_string(str(self.sockdir))))
        self.sockdir.mkdir(mode=0o700, exist_ok=True)
        command = " ".join([EMACS, "-nw", "-l", str(harness), *files])
        self._tmux(
            "new-session", "-d", "-x", "150", "-y", "45", "-c", str(cwd), "-s", "emacs", command
        )
        self.wait(lambda: (self.sockdir / "server").exists(), 60, "emacs's server socket")
        self.wait(lambda: self.eval("(+ 1 2)") == "3", 30, "emacsclient to answer")

    def _tmux(self, *args: str) -> str:
        proc = subprocess.run(
            [TMUX or "tmux", "-S", str(self.tmux_socket), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=20,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"tmux {args[0]}: {proc.stderr}")
        return proc.stdout

    def keys(self, *keys: str) -> None:
        """Type as the user would (tmux key names: ``M-x``, ``C-g``, ``Enter``)."""
        self._tmux("send-keys", "-t", "emacs", *keys)

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", "emacs", "-l", text)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "emacs")

    def eval(self, expr: str, timeout: float = 15) -> str:
        """What ``emacsclient --eval`` prints (``prin1`` of the value); ``""`` on failure."""
        try:
            proc = subprocess.run(
                [EMACSCLIENT or "emacsclient", "-s", str(self.sockdir / "server"), "--eval", expr],
                env=self.env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return ""
        return proc.stdout.strip() if proc.returncode == 0 else ""

    def text_of(self, expr: str) -> str:
        """The string an expression returns, through a file (no printer escapes to undo)."""
        out = self.home / "eval-out.txt"
        out.unlink(missing_ok=True)
        self.eval(
            f'(let ((coding-system-for-write \'utf-8) (s (format "%s" {expr})))'
            f" (with-temp-file {elisp_string(str(out))} (insert s)) t)"
        )
        return out.read_text(encoding="utf-8") if out.exists() else ""

    def buffer_text(self, name: str) -> str:
        return self.text_of(
            f"(if (get-buffer {elisp_string(name)}) (with-current-buffer {elisp_string(name)}"
            ' (buffer-substring-no-properties (point-min) (point-max))) "")'
        )

    def messages(self) -> str:
        return self.buffer_text("*Messages*")

    def events_tail(self, chars: int = 6000) -> str:
        return self.text_of(
            '(let ((b (seq-find (lambda (b) (string-match-p "EGLOT.*events" (buffer-name b)))'
            " (buffer-list)))) (if b (with-current-buffer b (buffer-substring-no-properties"
            f' (max (point-min) (- (point-max) {chars})) (point-max))) ""))'
        )

    def report(self) -> str:
        return (
            f"--- screen:\n{self.screen()}\n--- *Messages*:\n{self.messages()[-3000:]}\n"
            f"--- eglot events (tail):\n{self.events_tail(int(os.environ.get('LOVIA_EVENTS_TAIL', '6000')))}"
        )

    def wait(self, check: Callable[[], object], seconds: float, what: str) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if check():
                    return
            except (OSError, subprocess.SubprocessError):
                pass
            time.sleep(0.2)
        raise AssertionError(f"waited {seconds:.0f} s for {what}\n{self.report()}")

    def wait_screen(self, needle: str, seconds: float) -> str:
        self.wait(lambda: needle in self.screen(), seconds, f"{needle!r} on the screen")
        return self.screen()

    def close(self) -> None:
        try:
            self.eval("(kill-emacs 0)", timeout=5)
        finally:
            subprocess.run(
                [TMUX or "tmux", "-S", str(self.tmux_socket), "kill-server"],
                capture_output=True,
                timeout=20,
            )


def missing_tools() -> list[str]:
    """What the Emacs tests need and this machine lacks (``.ci/run`` installs all of it)."""
    missing = [
        n for n, p in (("emacs", EMACS), ("emacsclient", EMACSCLIENT), ("tmux", TMUX)) if not p
    ]
    if not shutil.which("clangd"):
        missing.append("clangd")
    if not list(Path("/usr/share/emacs/site-lisp/elpa").glob("eglot-*")) and not os.environ.get(
        "LOVIA_EGLOT_OK"
    ):
        missing.append("elpa-eglot")
    return missing
