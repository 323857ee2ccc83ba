"""``serve_stdio()``: one front door over this process's stdin and stdout, as an editor starts it.

Only protocol frames may reach the client's stdout: the writer keeps its own descriptor of it,
and fd 1 (``print()``, a library's or a child's stray output) is stderr from here on. The door
serves until the client closes stdin or SIGTERM arrives; then what is queued for the client
gets a few seconds to leave.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable

from lovia_server.transport.frame_writer import FrameWriter
from lovia_server.transport.stdin import open_stdin

Serve = Callable[[asyncio.StreamReader, FrameWriter], Awaitable[None]]
"""A door: serve the client reading ``reader`` and writing through the writer, until EOF."""


def serve_stdio(serve: Serve, *, limit: int) -> None:
    """Run ``serve`` on a new event loop over stdio; ``limit``: the longest line the reader
    takes. Returns once the door is done (EOF, SIGTERM, Ctrl-C)."""
    stdin = sys.stdin.buffer
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    async def main() -> None:
        writer = await FrameWriter.open(protocol_out)
        reader = await open_stdin(stdin, limit=limit)
        task = asyncio.current_task()
        with contextlib.suppress(NotImplementedError):
            asyncio.get_running_loop().add_signal_handler(
                signal.SIGTERM, lambda: task and task.cancel()
            )
        try:
            await serve(reader, writer)
        except asyncio.CancelledError:
            pass
        finally:
            await writer.finish()

    with contextlib.suppress(KeyboardInterrupt, SystemExit):
        asyncio.run(main())


__all__ = ["Serve", "serve_stdio"]
