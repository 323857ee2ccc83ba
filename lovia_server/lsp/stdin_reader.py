"""Reading the client's messages from standard input without a thread.

pygls reads stdin through a thread of the server's pool. That thread is joined when the process
exits, and a read of a pipe the client keeps open never returns: a server that exits while a
read is pending (an ``exit`` deferred until ``shutdown`` was answered, a SIGTERM) would hang
there. A pipe is read by the event loop instead (each message also arrives without a thread
hop); anything else (a file) keeps pygls' reader.
"""

from __future__ import annotations

import asyncio
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from pygls.io_ import AsyncReader

LINE_LIMIT = 1024 * 1024
"""Bytes a header line may take; a longer one is dropped (the next header line re-syncs)."""


class PipeReader:
    """pygls' reader interface over an ``asyncio.StreamReader``: EOF reads as ``b""`` (or the
    bytes that came before it), as it does with a blocking file."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self.stream = stream

    async def readline(self) -> bytes:
        try:
            return await self.stream.readline()
        except ValueError:  # over LINE_LIMIT: the stream dropped it
            return b"\r\n-"  # not a header pygls knows, not the blank line ending the headers

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self.stream.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial


async def stdin_reader(stdin: BinaryIO, pool: ThreadPoolExecutor) -> AsyncReader:
    """The event loop's reader of ``stdin`` when it is a pipe or socket, else pygls' own."""
    from pygls.io_ import StdinAsyncReader

    try:
        mode = os.fstat(stdin.fileno()).st_mode
    except (OSError, ValueError):
        return StdinAsyncReader(stdin, pool)
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return StdinAsyncReader(stdin, pool)
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=LINE_LIMIT, loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream, loop=loop), stdin)
    return PipeReader(stream)


__all__ = ["LINE_LIMIT", "PipeReader", "stdin_reader"]
