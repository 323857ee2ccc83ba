"""``file:`` URIs <-> paths (no heavy imports: used while answering ``initialize``)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse


def path_uri(path: str | Path) -> str:
    return Path(path).absolute().as_uri()


def uri_to_path(uri: str) -> Path | None:
    """A ``file:`` URI as a path; other schemes give ``None``."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if parsed.netloc and parsed.netloc != "localhost":
        path = f"//{parsed.netloc}{path}"
    return Path(path)


__all__ = ["path_uri", "uri_to_path"]
