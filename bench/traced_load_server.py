"""The real lovia server, noting when each answer was queued and written (bench only).

``bench/load_bench.py --trace`` starts this instead of ``python -m lovia_server``. It wraps
``QueuedWriter.send`` and the writer thread's pick of the next frame: for every urgent frame
(an answer) it records ``time.monotonic_ns()`` when the server handed it to the writer and when
the writer thread took it to write into the pipe. Together with the client's send and
first-byte stamps (the same system-wide monotonic clock) a slow answer splits into the
server's own time, the wait for the frame then being written, and the pipe's backlog. At exit
the stamps go to ``$LOVIA_TRACE_FILE`` as ``{"<id>": [queued_ns, taken_ns], ...}``.
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import time
from typing import Any

from lovia_server import writer

STAMPS: dict[str, list[int]] = {}


def _answer_id(frame: bytes) -> str | None:
    _, sep, body = frame.partition(b"\r\n\r\n")
    try:
        message = json.loads(body if sep else frame)
    except ValueError:
        return None
    if isinstance(message, dict) and "method" not in message and "id" in message:
        return str(message["id"])
    return None


_send = writer.QueuedWriter.send
_next = writer.QueuedWriter._next


def send(self: Any, data: bytes, *, urgent: bool = False, droppable: bool = False) -> bool:
    if urgent:
        msg_id = _answer_id(data)
        if msg_id is not None:
            STAMPS[msg_id] = [time.monotonic_ns(), 0]
    return _send(self, data, urgent=urgent, droppable=droppable)


def next_frame(self: Any) -> tuple[bytes, bool] | None:
    item = _next(self)
    if item is not None and item[1]:
        msg_id = _answer_id(item[0])
        if msg_id is not None and msg_id in STAMPS:
            STAMPS[msg_id][1] = time.monotonic_ns()
    return item


def _dump() -> None:
    path = os.environ.get("LOVIA_TRACE_FILE")
    if path:
        with open(path, "w") as out:
            json.dump(STAMPS, out)


writer.QueuedWriter.send = send  # type: ignore[method-assign]
writer.QueuedWriter._next = next_frame  # type: ignore[method-assign]
atexit.register(_dump)
runpy.run_module("lovia_server", run_name="__main__", alter_sys=True)
