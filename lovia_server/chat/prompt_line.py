"""The line editor of ``lovia chat`` in a terminal: prompt_toolkit's input line, docked under the
output while a run streams, so what the user types is never mixed into the answer.

While a prompt shows, prompt_toolkit owns the screen and nothing may write to it directly. The
output is split: complete lines are printed above the prompt (``run_in_terminal``, at most once
per ``interval`` — a redraw per delta would cost thousands of redraws for one answer), and the
line the run is still writing is drawn as the first line of the prompt's message until it ends.
This module is imported only in a terminal: prompt_toolkit takes ~120 ms to import.
"""

from __future__ import annotations

import asyncio
import re
import shutil
from collections import deque
from collections.abc import Callable
from typing import IO, Any

from prompt_toolkit import PromptSession
from prompt_toolkit.application import Application, run_in_terminal
from prompt_toolkit.application.current import set_app
from prompt_toolkit.completion import WordCompleter
from prompt_toolkit.formatted_text import ANSI
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.utils import get_cwidth

# lovia's own colours are the only escapes in the output (everything else went through
# ``printable``): they take no column.
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def split_row(text: str, width: int) -> tuple[str, str] | None:
    """The first screen row of ``text`` and the rest, or None when it fits in one row. A colour
    open at the cut is closed on the row and opened again on the rest."""
    used, at, colour = 0, 0, ""
    while at < len(text):
        sgr = _SGR.match(text, at)
        if sgr is not None:
            colour = "" if sgr.group() == "\x1b[0m" else sgr.group()
            at = sgr.end()
            continue
        w = get_cwidth(text[at])
        if used + w > width:
            return text[:at] + ("\x1b[0m" if colour else ""), colour + text[at:]
        used += w
        at += 1
    return None


class LiveOutput:
    """Where the chat's renderer writes while a prompt may be showing (a file-like ``write``)."""

    def __init__(self, stream: IO[str], app: Application[Any], *, interval: float = 0.03) -> None:
        self.stream = stream
        self.app = app
        self.interval = interval
        self._lines: list[str] = []
        self._partial = ""
        self._scheduled = False
        self._last = 0.0

    def write(self, text: str) -> None:
        self._partial += text
        if "\n" in self._partial:
            done, self._partial = self._partial.rsplit("\n", 1)
            self._lines.extend(done.split("\n"))
        width = max(self._width() - 1, 10)
        while (row := split_row(self._partial, width)) is not None:
            self._lines.append(row[0])
            self._partial = row[1]
        self._schedule()

    def flush(self) -> None:
        """Output reaches the screen at the next flush interval, not per write."""

    def message(self, prompt: str) -> ANSI:
        """The prompt's message: the line being written, then the prompt itself."""
        return ANSI(f"{self._partial}\n{prompt}" if self._partial else prompt)

    def close(self) -> None:
        """Out of the prompt for good: everything still held goes to the screen."""
        self._scheduled = True  # no later flush
        rest = self._lines + ([self._partial] if self._partial else [])
        self._lines, self._partial = [], ""
        if rest:
            self._emit("\n".join(rest) + "\n")

    def _width(self) -> int:
        try:
            return self.app.output.get_size().columns
        except Exception:  # no terminal size: the environment's guess
            return shutil.get_terminal_size().columns

    def _schedule(self) -> None:
        if self._scheduled:
            return
        self._scheduled = True
        loop = asyncio.get_running_loop()
        loop.call_later(max(0.0, self._last + self.interval - loop.time()), self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        self._last = asyncio.get_running_loop().time()
        lines, self._lines = self._lines, []
        if not self.app.is_running:
            if lines:  # no prompt showing: print as is; the partial line waits for one
                self._emit("\n".join(lines) + "\n")
            return
        if lines:
            text = "\n".join(lines) + "\n"
            with set_app(self.app):  # the callback runs outside the prompt's context
                run_in_terminal(lambda: self._emit(text))
        else:
            self.app.invalidate()

    def _emit(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()


class PromptLine:
    """One prompt_toolkit session for the whole chat: history across prompts, completion of the
    commands (the chat's and the server's). Ctrl-C at the prompt (raw mode: a key, not SIGINT)
    goes to ``on_interrupt``, Ctrl-D on an empty line ends the input."""

    def __init__(
        self,
        stream: IO[str],
        commands: list[str],
        on_interrupt: Callable[[], None],
        meta: dict[str, str] | None = None,
    ) -> None:
        """``commands`` and ``meta`` (what a completion shows beside a command) are read at
        each completion: the server's commands join them once it has listed them."""
        self.on_interrupt = on_interrupt
        self.session: PromptSession[str] = PromptSession(
            history=InMemoryHistory(),
            completer=WordCompleter(commands, sentence=True, meta_dict=meta),
            complete_while_typing=False,
            erase_when_done=True,  # the line typed is shown by what it does (you: …, a steer)
        )
        if meta is not None and isinstance(self.session.completer, WordCompleter):
            self.session.completer.meta_dict = meta  # the same dict (an empty one is not kept)
        self.output = LiveOutput(stream, self.session.app)
        self._unread: deque[str] = deque()
        self._draft = ""  # typed, not yet entered, when the prompt was taken down

    async def read(self, prompt: str) -> str | None:
        """The next line; None when the user ends the input (Ctrl-D)."""
        if self._unread:
            return self._unread.popleft()
        prompt = prompt or "> "
        while True:
            draft, self._draft = self._draft, ""
            try:
                return await self.session.prompt_async(
                    lambda: self.output.message(prompt),
                    default=draft,
                    handle_sigint=False,
                    set_exception_handler=False,
                )
            except asyncio.CancelledError:
                # The run ended while the user was typing: the next prompt starts with it.
                self._draft = self.session.default_buffer.text
                raise
            except KeyboardInterrupt:
                self.on_interrupt()
                await asyncio.sleep(0)  # a quit cancels this read before the next prompt
            except EOFError:
                return None

    def unread(self, line: str) -> None:
        self._unread.appendleft(line)

    def close(self) -> None:
        self.output.close()


__all__ = ["LiveOutput", "PromptLine", "split_row"]
