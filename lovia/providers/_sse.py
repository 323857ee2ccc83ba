"""Server-sent events: an incremental parser yielding the JSON objects of ``data:`` fields."""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any

DONE = b"[DONE]"
_decode = json.JSONDecoder().decode


class SSEParser:
    """Feed raw bytes, get the decoded JSON objects of complete events.

    Only ``data:`` lines count (``event:``, ``id:``, ``retry:`` and comments are ignored);
    consecutive data lines are joined with ``"\\n"`` until a blank line. ``[DONE]`` sets
    :attr:`done` and everything after it is ignored. Empty, non-JSON and non-object payloads
    are skipped and counted in :attr:`skipped`.
    """

    __slots__ = ("_buf", "_data", "done", "skipped")

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[bytes] = []
        self.done = False
        self.skipped = 0

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        if self.done:
            return []
        if (
            not self._buf
            and chunk.startswith(b"data: ")
            and chunk.endswith(b"\n\n")
            and chunk.count(b"\n") == 2
        ):
            # the usual shape: exactly one single-line event per chunk
            self._data.append(chunk[6:-2])
            out: list[dict[str, Any]] = []
            self._dispatch(out)
            return out
        if self._buf:
            chunk = self._buf + chunk
        lines = chunk.split(b"\n")
        self._buf = lines.pop()
        out = []
        for line in lines:
            self._line(line, out)
            if self.done:
                break
        return out

    def close(self) -> list[dict[str, Any]]:
        """Flush what is buffered at end of stream."""
        out: list[dict[str, Any]] = []
        if self._buf and not self.done:
            self._line(self._buf, out)
        self._buf = b""
        if not self.done:
            self._dispatch(out)
        return out

    def _line(self, line: bytes, out: list[dict[str, Any]]) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line:
            self._dispatch(out)
        elif line.startswith(b"data:"):
            value = line[5:]
            self._data.append(value[1:] if value.startswith(b" ") else value)

    def _dispatch(self, out: list[dict[str, Any]]) -> None:
        if not self._data:
            return
        payload = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
        self._data = []
        if payload.strip() == DONE:
            self.done = True
            return
        try:
            value = _decode(payload.decode()) if payload.strip() else None
        except ValueError:  # also UnicodeDecodeError
            value = None
        if isinstance(value, dict):
            out.append(value)
        else:
            self.skipped += 1


async def iter_sse_json(
    chunks: AsyncIterable[bytes], *, on_done: Callable[[], None] | None = None
) -> AsyncIterator[dict[str, Any]]:
    """The JSON objects of an SSE byte stream; ``[DONE]`` calls ``on_done`` and stops."""
    parser = SSEParser()
    async for chunk in chunks:
        for event in parser.feed(chunk):
            yield event
        if parser.done:
            break
    else:
        for event in parser.close():
            yield event
    if parser.done and on_done is not None:
        on_done()


__all__ = ["SSEParser", "iter_sse_json"]
