"""Terminal input for ``lovia chat``: one non-blocking reader of standard input."""

from __future__ import annotations

import asyncio
import codecs
import os
import threading
from collections import deque


class LineReader:
    """The one reader of the terminal for the whole chat.

    Every line lands in one queue, whoever asks next (the prompt, an approval, a steer) gets it,
    and nothing blocks the event loop: a run that ends never leaves a reader behind that would
    swallow the next line or keep the process alive.
    """

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._lines: deque[str] = deque()
        self._partial = ""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._eof = False
        self._changed = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watching = False

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self.fd < 0:  # no standard input at all
            self._feed(b"")
            return
        try:
            self._loop.add_reader(self.fd, self._on_readable)
            self._watching = True
        except (OSError, ValueError, NotImplementedError):
            # A regular file (stdin redirected from one) cannot be polled: read it in a thread,
            # which ends at its end of file.
            threading.Thread(
                target=self._read_blocking, name="lovia-chat-stdin", daemon=True
            ).start()

    def close(self) -> None:
        if self._watching and self._loop is not None:
            self._loop.remove_reader(self.fd)
            self._watching = False

    async def read(self) -> str | None:
        """The next line without its newline; None at end of input."""
        while not self._lines:
            if self._eof:
                return None
            self._changed.clear()
            await self._changed.wait()
        return self._lines.popleft()

    def unread(self, line: str) -> None:
        """Put a line back: it is the next one read."""
        self._lines.appendleft(line)
        self._changed.set()

    def _on_readable(self) -> None:
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        self._feed(data)

    def _read_blocking(self) -> None:
        assert self._loop is not None
        while True:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                data = b""
            try:
                self._loop.call_soon_threadsafe(self._feed, data)
            except RuntimeError:  # the loop is closed: the chat has ended
                return
            if not data:
                return

    def _feed(self, data: bytes) -> None:
        if data:
            self._partial += self._decoder.decode(data)
            *complete, self._partial = self._partial.split("\n")
            self._lines.extend(line.rstrip("\r") for line in complete)
        else:
            self.close()
            rest = self._partial + self._decoder.decode(b"", final=True)
            self._partial = ""
            if rest:
                self._lines.append(rest)
            self._eof = True
        self._changed.set()


__all__ = ["LineReader"]
