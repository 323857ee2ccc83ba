"""Write many blobs into one git pack file (internal, used by restore points).

``git update-index --add`` of thousands of new files is slow mostly because git looks
for every new object in the store before writing it. The first snapshot of a big
workspace instead writes all its blobs here into one pack (zlib level 1, no deltas),
which ``git index-pack`` then indexes; ``update-index`` afterwards only hashes the
files and finds every object present. A pack that is not indexed yet is invisible
to git, so a crash half-way leaves nothing but a temporary file (removed on open).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import zlib
from collections.abc import Iterable
from pathlib import Path

TEMP_NAME = "tmp-lovia-bulk"
_BLOB = 3


def _header(kind: int, size: int) -> bytes:
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    out = bytearray()
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def write_blob_pack(pack_dir: Path, files: Iterable[Path], max_bytes: int) -> Path | None:
    """Write the regular files among ``files`` (≤ ``max_bytes`` each) as one pack.

    Returns the temporary ``.pack`` path (to be indexed with ``git index-pack``), or
    None when there was nothing to write. Unreadable files are left to git.
    """
    path = pack_dir / f"{TEMP_NAME}.pack"
    seen: set[bytes] = set()
    count = 0
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        with os.fdopen(fd, "w+b", closefd=False) as fh:
            fh.write(b"PACK" + struct.pack(">II", 2, 0))
            for file in files:
                try:
                    data = _read_regular(file, max_bytes)
                except OSError:
                    continue
                if data is None:
                    continue
                oid = hashlib.sha1(b"blob %d\0" % len(data) + data).digest()
                if oid in seen:
                    continue
                seen.add(oid)
                fh.write(_header(_BLOB, len(data)))
                fh.write(zlib.compress(data, 1))
                count += 1
            if not count:
                fh.close()
                os.unlink(path)
                return None
            fh.seek(8)
            fh.write(struct.pack(">I", count))
            fh.flush()
            fh.seek(0)
            digest = hashlib.sha1()
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
            fh.seek(0, os.SEEK_END)
            fh.write(digest.digest())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    finally:
        os.close(fd)
    return path


def _read_regular(path: Path, max_bytes: int) -> bytes | None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if (st.st_mode & 0o170000) != 0o100000 or st.st_size > max_bytes:
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def remove_temp(pack_dir: Path) -> None:
    for suffix in (".pack", ".idx", ".rev"):
        with contextlib.suppress(OSError):
            os.unlink(pack_dir / f"{TEMP_NAME}{suffix}")


__all__ = ["TEMP_NAME", "remove_temp", "write_blob_pack"]
