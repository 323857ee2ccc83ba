"""A large ``lovia/event`` sent as several small ``lovia/part`` frames, and put back together.

A frame is written whole: an answer that arrives while a 200 KB ``message.completed`` is on its
way to a client reading 20 KB/s waits ten seconds for it. A client that declares
``initializationOptions.lovia.notificationParts`` lets the server cut such a frame into parts
(sized to what the client reads in a few tens of milliseconds, at least ``PART_MIN`` bytes);
answers then go out between two parts. Each part carries a slice of the
original message's JSON text; the client joins the slices of one ``id`` in ``index`` order and
handles the result as the ``lovia/event`` notification it was. Only events are cut: other
notifications (logs, progress) go to the client's LSP library, which knows no parts.

Both ends live here, so that the split and the join cannot drift apart.
"""

from __future__ import annotations

import json
from typing import Any

PART_METHOD = "lovia/part"
PART_MIN = 512
"""The smallest part a frame is cut into, header included (a slice is cut to fit after
escaping): below this the envelope would be too much of each part."""
_HEADER = b"Content-Length: %d\r\n\r\n"
_EVENT = b'{"jsonrpc":"2.0","method":"lovia/event",'  # as jsonrpc.notify_json writes it
_OVERHEAD = 120  # the part's envelope, header included, with room for large ids and counts


def _frame(body: bytes) -> bytes:
    return _HEADER % len(body) + body


def _slices(text: str, budget: int) -> list[str]:
    """``text`` cut into pieces whose JSON string encoding (UTF-8) stays within ``budget``."""
    pieces: list[str] = []
    start = 0
    while start < len(text):
        end = min(len(text), start + budget)
        while True:
            size = len(json.dumps(text[start:end], ensure_ascii=False).encode())
            if size <= budget or end - start <= 1:
                break
            # Escapes and multi-byte characters made it too long: shrink in proportion.
            end = start + max(1, (end - start) * budget // size)
        pieces.append(text[start:end])
        start = end
    return pieces


def split_frame(frame: bytes, part_id: int, size: int) -> list[bytes] | None:
    """The part frames for one framed ``lovia/event``, or ``None`` when it is small enough or
    another message (a response or a request stays whole: the client's request layer expects
    one message; other notifications go to its LSP library)."""
    if len(frame) <= size:
        return None
    head_end = frame.find(b"\r\n\r\n")
    if head_end < 0 or not frame.startswith(b"Content-Length:"):
        return None
    body = frame[head_end + 4 :]
    if not body.startswith(_EVENT):
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    pieces = _slices(text, max(PART_MIN, size) - _OVERHEAD)
    count = len(pieces)
    frames = []
    for index, piece in enumerate(pieces):
        params = json.dumps(
            {"id": part_id, "index": index, "count": count, "text": piece},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        body_out = '{"jsonrpc":"2.0","method":"' + PART_METHOD + '","params":' + params + "}"
        frames.append(_frame(body_out.encode()))
    return frames


class PartAssembler:
    """Joins ``lovia/part`` params back into the messages they were cut from."""

    def __init__(self) -> None:
        # Parts come unbroken, so at most one message is open: its id and the slices so far.
        self._id: int | None = None
        self._gathered: list[str] = []

    def feed(self, params: Any) -> dict[str, Any] | None:
        """The whole message once its last part arrived, else ``None``. Parts of one message
        arrive in order and unbroken by other notifications; a part that does not continue
        what is open (a lost or restarted message) drops what was gathered."""
        if not isinstance(params, dict):
            return None
        part_id, index, count, text = (params.get(k) for k in ("id", "index", "count", "text"))
        if not (
            isinstance(part_id, int)
            and isinstance(index, int)
            and isinstance(count, int)
            and isinstance(text, str)
        ):
            return None
        if index == 0:
            self._id, self._gathered = part_id, []
        if part_id != self._id or len(self._gathered) != index:
            self._id, self._gathered = None, []
            return None
        self._gathered.append(text)
        if index + 1 < count:
            return None
        gathered, self._id, self._gathered = self._gathered, None, []
        try:
            message = json.loads("".join(gathered))
        except ValueError:
            return None
        return message if isinstance(message, dict) else None


__all__ = ["PART_METHOD", "PART_MIN", "PartAssembler", "split_frame"]
