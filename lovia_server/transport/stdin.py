"""Reading the client's messages from standard input without a thread.

A thread that reads stdin is joined (or left blocked) when the process exits, and a read of a
pipe the client keeps open never returns: a server that exits while a read is pending (an
``exit`` deferred until ``shutdown`` was answered, a SIGTERM) would hang there. So the event
loop reads instead (each message also arrives without a thread hop): a pipe or socket through
the loop's read transport, a terminal when the loop says it is readable (it stays blocking: it
is the user's shell's too), a file in chunks (a file never waits for a writer).
"""

from __future__ import annotations

import asyncio
import os
import stat
from typing import BinaryIO

CHUNK = 1 << 16


async def open_stdin(stream: BinaryIO, *, limit: int) -> asyncio.StreamReader:
    """A stream reader of ``stream`` fed by the running loop; ``limit``: the longest line
    ``readline``/``readuntil`` take (``readexactly`` has none)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit, loop=loop)
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError):
        reader.feed_eof()
        return reader
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), stream
        )
        return reader
    if not stat.S_ISREG(mode):
        try:
            loop.add_reader(fd, _read_ready, loop, fd, reader)
            return reader
        except (OSError, ValueError, NotImplementedError):
            pass  # the loop cannot wait for it: read it as a file
    _feed_file(loop, fd, reader)
    return reader


def _read_ready(loop: asyncio.AbstractEventLoop, fd: int, reader: asyncio.StreamReader) -> None:
    try:
        data = os.read(fd, CHUNK)
    except BlockingIOError:
        return
    except OSError:
        data = b""
    if data:
        reader.feed_data(data)
        return
    loop.remove_reader(fd)
    reader.feed_eof()


def _feed_file(loop: asyncio.AbstractEventLoop, fd: int, reader: asyncio.StreamReader) -> None:
    async def feed() -> None:
        try:
            while data := os.read(fd, CHUNK):
                reader.feed_data(data)
                await asyncio.sleep(0)
        except OSError:
            pass
        finally:
            reader.feed_eof()

    task = loop.create_task(feed())
    _feeding.add(task)
    task.add_done_callback(_feeding.discard)


_feeding: set[asyncio.Task[None]] = set()


class HeaderReader:
    """``readline``/``readexactly`` over a stream reader as a blocking file answers them (pygls'
    reader interface): EOF reads as ``b""`` or the bytes before it; a line over the limit is
    dropped and reads as a line no header parser knows, so the next header line re-syncs."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.stream = stream

    async def readline(self) -> bytes:
        try:
            return await self.stream.readline()
        except ValueError:  # over the limit: the stream dropped it
            return b"\r\n-"  # not a header pygls knows, not the blank line ending the headers

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self.stream.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


__all__ = ["HeaderReader", "open_stdin"]
