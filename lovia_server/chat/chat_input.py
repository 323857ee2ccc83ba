"""Where ``lovia chat`` reads its lines: the line editor in a terminal, else standard input.

In a terminal (and with the ``chat`` extra installed) prompt_toolkit keeps the input line intact
while the answer streams above it. Without a terminal (piped input, ``--yes`` scripts) or in a
terminal that cannot move its cursor (``TERM=dumb``) lines are read as they come."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from typing import Any

from lovia_server.chat.line_reader import LineReader
from lovia_server.chat.terminal_view import Terminal

EDITOR_HINT = (
    "note: for a line editor that keeps your typing intact while the answer streams, "
    "pip install 'prompt_toolkit>=3.0.40' (the chat extra)"
)


class ChatInput:
    """The lines the chat reads: ``read(prompt)``, ``unread(line)``, ``close()``."""

    def __init__(self, term: Terminal, fd: int, *, tty: bool) -> None:
        self.term = term
        self.fd = fd
        self.tty = tty
        self.editor: Any = None  # a PromptLine when the line editor runs
        self.reader: LineReader | None = None
        self._loading: asyncio.Future[Any] | None = None
        self.commands: list[str] = []
        self.meta: dict[str, str] = {}
        self.on_interrupt: Callable[[], None] = lambda: None

    def start(self, commands: list[str], on_interrupt: Callable[[], None]) -> None:
        self.commands, self.on_interrupt = list(commands), on_interrupt
        if self.tty and os.environ.get("TERM", "") not in ("", "dumb"):
            # Imported in a thread while the server starts: it is ~0.1 s of the start-up.
            self._loading = asyncio.get_running_loop().run_in_executor(None, _load_editor)
            return
        self._plain()

    def _plain(self) -> None:
        self.reader = LineReader(self.fd)
        self.reader.start()

    async def _editor(self) -> None:
        loading, self._loading = self._loading, None
        editor_class = await loading if loading is not None else None
        if editor_class is None:
            self.term.line(self.term.c("2", EDITOR_HINT))
            self._plain()
            return
        self.editor = editor_class(self.term.out, self.commands, self.on_interrupt, self.meta)
        self.term.out = self.editor.output

    async def read(self, prompt: str) -> str | None:
        if self._loading is not None:
            await self._editor()
        if self.editor is not None:
            line: str | None = await self.editor.read(prompt)
            return line
        assert self.reader is not None
        if prompt:
            self.term.write(prompt)
        line = await self.reader.read()
        self.term.at_line_start = True  # the user's Enter ended the line
        return line

    def add_commands(self, meta: dict[str, str]) -> None:
        """More commands to complete (the server's), with what to show beside each."""
        self.commands += [name for name in meta if name not in self.commands]
        self.meta.update(meta)

    def unread(self, line: str) -> None:
        if self.editor is not None:
            self.editor.unread(line)
        elif self.reader is not None:
            self.reader.unread(line)

    def close(self) -> None:
        if self._loading is not None:
            self._loading.cancel()
        if self.editor is not None:
            self.editor.close()
            self.term.out = self.editor.output.stream
        if self.reader is not None:
            self.reader.close()


def _load_editor() -> Any:
    """The line editor's class, or None without prompt_toolkit."""
    try:
        from lovia_server.chat.prompt_line import PromptLine
    except ImportError:
        return None
    return PromptLine


def stdin_is_tty() -> bool:
    return sys.stdin is not None and sys.stdin.isatty()


__all__ = ["EDITOR_HINT", "ChatInput", "stdin_is_tty"]
