"""Multimodal content parts (text, images, files) carried by messages and tool results."""

from __future__ import annotations

import base64
import binascii
import mimetypes
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

IMAGE_MIME_BY_SUFFIX: dict[str, str] = {
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


def image_mime(path: str | Path) -> str | None:
    """The image mime type for a file name, by suffix (case-insensitive)."""
    return IMAGE_MIME_BY_SUFFIX.get(Path(path).suffix.lower())


@dataclass
class TextPart:
    text: str
    type: Literal["text"] = "text"


@dataclass
class ImagePart:
    url: str | None = None
    data: str | None = None
    mime_type: str | None = None
    detail: Literal["auto", "low", "high"] | None = None
    type: Literal["image"] = "image"

    def __post_init__(self) -> None:
        if (self.url is None) == (self.data is None):
            raise ValueError("ImagePart requires exactly one of url or data")
        if self.data is not None and not self.mime_type:
            raise ValueError("ImagePart with data also needs mime_type")

    @classmethod
    def from_path(cls, path: str | Path, *, mime_type: str | None = None) -> ImagePart:
        p = Path(path)
        mime = mime_type or image_mime(p)
        if mime is None:
            raise ValueError(f"Cannot infer mime_type for '{p.suffix}'")
        return cls(data=base64.b64encode(p.read_bytes()).decode("ascii"), mime_type=mime)


@dataclass
class FilePart:
    url: str | None = None
    data: str | None = None
    mime_type: str | None = None
    filename: str | None = None
    type: Literal["file"] = "file"

    def __post_init__(self) -> None:
        if (self.url is None) == (self.data is None):
            raise ValueError("FilePart requires exactly one of url or data")
        if self.data is not None:
            if not self.mime_type:
                raise ValueError("FilePart with data also needs mime_type")
            try:
                base64.b64decode(self.data, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise ValueError("FilePart data must be valid base64") from exc

    @classmethod
    def from_path(
        cls, path: str | Path, *, mime_type: str | None = None, filename: str | None = None
    ) -> FilePart:
        p = Path(path)
        mime = mime_type or mimetypes.guess_type(p.name)[0]
        if mime is None:
            raise ValueError(f"Cannot infer mime_type for '{p.suffix}'")
        return cls.from_bytes(p.read_bytes(), mime_type=mime, filename=filename or p.name)

    @classmethod
    def from_bytes(cls, data: bytes, *, mime_type: str, filename: str | None = None) -> FilePart:
        encoded = base64.b64encode(data).decode("ascii")
        return cls(data=encoded, mime_type=mime_type, filename=filename)

    @classmethod
    def from_base64(cls, data: str, *, mime_type: str, filename: str | None = None) -> FilePart:
        return cls(data=data, mime_type=mime_type, filename=filename)

    @classmethod
    def from_url(
        cls, url: str, *, mime_type: str | None = None, filename: str | None = None
    ) -> FilePart:
        return cls(url=url, mime_type=mime_type, filename=filename)


ContentPart: TypeAlias = TextPart | ImagePart | FilePart
_PART_TYPES = (TextPart, ImagePart, FilePart)


def normalize_content(x: Any) -> Any:
    """``None``/``str`` pass through; one part becomes a list; any iterable becomes a new list."""
    if x is None or isinstance(x, str):
        return x
    if isinstance(x, _PART_TYPES):
        return [x]
    return list(x)


def text_of(content: str | Iterable[ContentPart] | None) -> str:
    """Plain text of content; images and files appear as short placeholders."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    out: list[str] = []
    for part in content:
        if isinstance(part, TextPart):
            out.append(part.text)
        elif isinstance(part, ImagePart):
            out.append("[image]")
        elif isinstance(part, FilePart):
            out.append(f"[file:{part.filename}]" if part.filename else "[file]")
    return "".join(out)


def coerce_parts(value: Any) -> list[ContentPart] | None:
    """Part-shaped tool results as a part list, else ``None``.

    A result object may offer its own parts with ``__lovia_parts__()`` (a part list, or
    ``None`` to be rendered as text like any other value).
    """
    hook = getattr(value, "__lovia_parts__", None)
    if callable(hook) and not isinstance(value, type):
        offered = hook()
        return list(offered) if offered else None
    if isinstance(value, _PART_TYPES):
        return [value]
    if isinstance(value, (str, bytes, bytearray)) or not isinstance(value, (list, tuple)):
        return None
    items = list(value)
    if not any(isinstance(i, _PART_TYPES) for i in items):
        return None
    out: list[ContentPart] = []
    for item in items:
        if isinstance(item, _PART_TYPES):
            out.append(item)
        elif isinstance(item, str):
            out.append(TextPart(item))
        else:
            return None
    return out


def _b64_size(data: str) -> int:
    padding = data[-2:].count("=")
    return max(0, len(data) * 3 // 4 - padding)


def _format_size(n: int) -> str:
    if n >= 1048576:
        return f"{n / 1048576:.1f} MB"
    if n >= 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n} B"


def _describe(label: str, url: str | None, data: str | None, mime: str | None) -> str:
    if url is not None:
        return f"[{label}: {url}]"
    return f"[{label}: {mime}, {_format_size(_b64_size(data or ''))}]"


def project_parts(parts: Iterable[ContentPart]) -> str:
    """A text projection of parts, one line per part, for the transcript's ``output``."""
    lines: list[str] = []
    for part in parts:
        if isinstance(part, TextPart):
            if part.text:
                lines.append(part.text)
        elif isinstance(part, ImagePart):
            lines.append(_describe("image", part.url, part.data, part.mime_type))
        elif isinstance(part, FilePart):
            label = f"file {part.filename}" if part.filename else "file"
            lines.append(_describe(label, part.url, part.data, part.mime_type))
    return "\n".join(lines)


__all__ = [
    "IMAGE_MIME_BY_SUFFIX",
    "ContentPart",
    "FilePart",
    "ImagePart",
    "TextPart",
    "coerce_parts",
    "image_mime",
    "normalize_content",
    "project_parts",
    "text_of",
]
