"""Result stores: where offloaded tool outputs are archived for ``recall_tool_result``."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import tempfile
import urllib.parse
from collections import OrderedDict
from pathlib import Path
from typing import Protocol, runtime_checkable


@runtime_checkable
class ResultStore(Protocol):
    """Key/value archive of full tool outputs. ``put`` overwrites; there is no delete."""

    async def put(self, key: str, content: str) -> None: ...

    async def get(self, key: str) -> str | None: ...


class InMemoryResultStore:
    """A process-local LRU store (``max_entries=None`` for unbounded)."""

    def __init__(self, *, max_entries: int | None = 1024) -> None:
        if max_entries is not None and max_entries < 1:
            raise ValueError("max_entries must be >= 1 (or None for unbounded)")
        self._max = max_entries
        self._data: OrderedDict[str, str] = OrderedDict()

    async def put(self, key: str, content: str) -> None:
        self._data[key] = content
        self._data.move_to_end(key)
        if self._max is not None:
            while len(self._data) > self._max:
                self._data.popitem(last=False)

    async def get(self, key: str) -> str | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def __len__(self) -> int:
        return len(self._data)


class FileResultStore:
    """One UTF-8 file per key under ``dir`` (created on first put); writes are atomic."""

    def __init__(self, dir: str | os.PathLike[str]) -> None:
        self.dir = Path(dir)

    def _path(self, key: str) -> Path:
        quoted = urllib.parse.quote(key, safe="")[:80]
        digest = hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        return self.dir / f"{quoted}-{digest}.txt"

    async def put(self, key: str, content: str) -> None:
        await asyncio.to_thread(self._write, key, content)

    async def get(self, key: str) -> str | None:
        return await asyncio.to_thread(self._read, key)

    def _write(self, key: str, content: str) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        target = self._path(key)
        fd, tmp = tempfile.mkstemp(dir=self.dir, suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass", newline="") as f:
                f.write(content)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _read(self, key: str) -> str | None:
        try:
            with open(self._path(key), encoding="utf-8", errors="surrogatepass", newline="") as f:
                return f.read()
        except OSError:
            return None


__all__ = ["FileResultStore", "InMemoryResultStore", "ResultStore"]
