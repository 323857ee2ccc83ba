"""The real lovia server, noting when each answer was queued and written (bench only).

``bench/load_bench.py --trace`` starts this instead of ``python -m lovia_server``. It wraps
``FrameWriter.send`` and its write of each frame to the pipe: for every frame in the answer lane
it records ``time.monotonic_ns()`` when the server handed it to the writer and when the writer
wrote it to the pipe (at once, or once the frames ahead of it were taken). Together with the
client's send and first-byte stamps (the same system-wide monotonic clock) a slow answer splits into the
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

from lovia_server.transport import frame_writer as writer

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


_send = writer.FrameWriter.send
_put = writer.FrameWriter._put


def send(self: Any, data: bytes, **how: Any) -> bool:
    if how.get("lane") == "answer":
        msg_id = _answer_id(data)
        if msg_id is not None:
            STAMPS[msg_id] = [time.monotonic_ns(), 0]
            WAITING.add(msg_id)
    return _send(self, data, **how)


WAITING: set[str] = set()  # answers handed to the writer and not yet written


def put(self: Any, data: bytes) -> None:
    if WAITING and b'"method"' not in data[:200]:  # only answers are looked into
        msg_id = _answer_id(data)
        if msg_id in WAITING:
            WAITING.discard(msg_id)
            STAMPS[msg_id][1] = time.monotonic_ns()
    _put(self, data)


def _dump() -> None:
    path = os.environ.get("LOVIA_TRACE_FILE")
    if path:
        with open(path, "w") as out:
            json.dump(STAMPS, out)


writer.FrameWriter.send = send  # type: ignore[method-assign]
writer.FrameWriter._put = put  # type: ignore[method-assign]
atexit.register(_dump)
runpy.run_module("lovia_server", run_name="__main__", alter_sys=True)
