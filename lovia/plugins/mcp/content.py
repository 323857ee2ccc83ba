"""What an MCP server returns, as lovia reads it: content blocks rendered to text and parts,
tool results, input schemas and tool names."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lovia.parts import ContentPart, ImagePart, TextPart
from lovia.types import JsonSchema

if TYPE_CHECKING:
    from lovia.run_context import RunContext


_TOOL_NAME_OK = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _attr(obj: Any, *names: str) -> Any:
    """The first of ``names`` set on ``obj`` (a pydantic model, a plain object or a dict).

    The SDK spells fields in snake_case since 2.0 (``mime_type``) and camelCase before
    (``mimeType``); both are accepted so hand-built blocks and older sessions work too.
    """
    for name in names:
        if isinstance(obj, dict):
            if name in obj:
                return obj[name]
            continue
        try:
            value = getattr(obj, name)
        except AttributeError:
            continue
        return value
    return None


def _str_attr(obj: Any, *names: str) -> str | None:
    for name in names:
        value = _attr(obj, name)
        if isinstance(value, str):
            return value
    return None


def _b64_bytes(data: Any) -> int:
    if not isinstance(data, str) or not data:
        return 0
    padding = data[-2:].count("=")
    return max(0, len(data) * 3 // 4 - padding)


def _human_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    size = float(n)
    for unit in ("KB", "MB", "GB"):
        size /= 1024
        if size < 1024 or unit == "GB":
            return f"{size:.1f} {unit}"
    return f"{n} B"  # pragma: no cover


def _render_block(block: Any) -> str:
    kind = _attr(block, "type")
    if kind == "text":
        text = _attr(block, "text")
        return text if isinstance(text, str) else ""
    if kind in ("image", "audio"):
        mime = _str_attr(block, "mimeType", "mime_type") or "application/octet-stream"
        return f"[{kind}: {mime}, {_human_size(_b64_bytes(_attr(block, 'data')))}]"
    if kind == "resource_link":
        return f"[resource link: {_attr(block, 'uri') or ''}]"
    if kind == "resource":
        resource = _attr(block, "resource")
        text = _attr(resource, "text")
        if isinstance(text, str):
            return text
        uri = _attr(resource, "uri") or ""
        mime = _str_attr(resource, "mimeType", "mime_type") or "application/octet-stream"
        size = _human_size(_b64_bytes(_attr(resource, "blob")))
        return f"[resource: {uri}, {mime}, {size}]"
    dump = getattr(block, "model_dump", None)
    if callable(dump):
        try:
            data = dump()
            if isinstance(data, dict):
                data = {k: v for k, v in data.items() if k not in ("data", "blob")}
            return json.dumps(data, ensure_ascii=False, default=str)
        except Exception:
            pass
    return str(block)


def render_mcp_content(content: list[Any], *, is_error: bool = False) -> str:
    """MCP content blocks as the text the model reads: never raw base64."""
    text = "\n".join(_render_block(block) for block in content)
    if is_error:
        return f"[tool error] {text}" if text else "[tool error]"
    return text


def _image_part(mime: str | None, data: Any) -> ImagePart | None:
    if not mime or not mime.startswith("image/") or not isinstance(data, str) or not data:
        return None
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return ImagePart(data=data, mime_type=mime)


@dataclass
class MCPToolResult:
    """What an MCP tool's ``invoke`` returns: the server's content blocks and error flag.

    ``str(result)`` is :func:`render_mcp_content`. A ``result_renderer`` set on the server
    receives this object as is. ``structured_content`` is the server's structured result,
    rendered as JSON when the server sent no content blocks.
    """

    content: list[Any] = field(default_factory=list)
    is_error: bool = False
    structured_content: Any = None
    images_as_parts: bool = field(default=False, kw_only=True, repr=False, compare=False)
    """Set on results of tools that use the default renderer: images reach the model as
    image parts (a text placeholder stays in the transcript text)."""

    def __str__(self) -> str:
        if not self.content and self.structured_content is not None:
            try:
                text = json.dumps(self.structured_content, ensure_ascii=False, default=str)
            except (TypeError, ValueError):
                text = str(self.structured_content)
            return f"[tool error] {text}" if self.is_error else text
        return render_mcp_content(self.content, is_error=self.is_error)

    def parts(self) -> list[ContentPart]:
        """The content as lovia parts: images as :class:`ImagePart`, the rest as text."""
        out: list[ContentPart] = []
        for block in self.content:
            kind = _attr(block, "type")
            image = None
            if kind == "image":
                image = _image_part(_str_attr(block, "mimeType", "mime_type"), _attr(block, "data"))
            elif kind == "resource":
                resource = _attr(block, "resource")
                image = _image_part(
                    _str_attr(resource, "mimeType", "mime_type"), _attr(resource, "blob")
                )
            if image is not None:
                out.append(image)
            else:
                out.append(TextPart(_render_block(block)))
        if self.is_error:
            if out and isinstance(out[0], TextPart) and out[0].text:
                out[0] = TextPart(f"[tool error] {out[0].text}")
            else:
                out.insert(0, TextPart("[tool error]"))
        return out

    def __lovia_parts__(self) -> list[ContentPart] | None:
        # The tool loop sends part lists to the model as multimodal tool results.
        if not self.images_as_parts:
            return None
        parts = self.parts()
        if not any(isinstance(p, ImagePart) for p in parts):
            return None
        return parts


def _default_renderer(result: Any, ctx: RunContext[Any]) -> str:
    return result if isinstance(result, str) else str(result)


def normalize_schema(schema: Any) -> JsonSchema:
    """A tool input schema every provider accepts: an object schema with ``properties``."""
    if not isinstance(schema, dict) or not schema:
        return {"type": "object", "properties": {}}
    out = dict(schema)
    if "type" not in out:
        out["type"] = "object"
    if out.get("type") == "object" and not isinstance(out.get("properties"), dict):
        out["properties"] = {}
    return out


def _display_name(prefix: str | None, raw: str) -> str:
    name = f"{prefix}__{raw}" if prefix else raw
    if _TOOL_NAME_OK.match(name):
        return name
    # Model APIs accept [A-Za-z0-9_-]{1,64}; keep the name recognisable and unique.
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", name) or "tool"
    if len(clean) > 64:
        clean = f"{clean[:57]}_{hashlib.sha1(name.encode()).hexdigest()[:6]}"
    return clean
