"""The stdout writer: never blocks the loop, counts its backlog, reports when the client drained it."""

import asyncio
import os

from lovia_server.writer import QueuedWriter


async def test_drained_completes_once_the_reader_took_everything():
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(os.fdopen(write_fd, "wb"))
    try:
        assert writer.drained() is None  # nothing queued
        payload = b"x" * (1 << 20)  # far more than a pipe holds: the writer thread blocks
        writer.write(payload)
        waiter = writer.drained()
        assert waiter is not None
        await asyncio.sleep(0.05)
        assert not waiter.done() and writer.backlog() > 0  # the client has not read
        got = 0
        while got < len(payload):
            got += len(await asyncio.to_thread(os.read, read_fd, 1 << 16))
        await asyncio.wait_for(waiter, 5)
        assert writer.backlog() == 0 and writer.drained() is None
    finally:
        writer.close()
        os.close(read_fd)


async def test_a_closed_pipe_releases_waiters():
    read_fd, write_fd = os.pipe()
    writer = QueuedWriter(os.fdopen(write_fd, "wb"))
    writer.write(b"y" * (1 << 20))
    waiter = writer.drained()
    assert waiter is not None
    os.close(read_fd)  # the client went away: the write fails, nobody waits forever
    await asyncio.wait_for(waiter, 5)
    writer.close()
