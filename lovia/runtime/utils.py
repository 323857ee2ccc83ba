"""Small helpers for log lines and provider capability checks."""

from __future__ import annotations

from typing import Any


def truncate_repr(value: Any, max_len: int = 200) -> str:
    if isinstance(value, str):
        raw = value
    else:
        try:
            raw = repr(value)
        except Exception:
            raw = "<unrepr>"
    clipped = raw[:max_len]
    text = clipped.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
    text = text.replace("\t", " ")
    if len(raw) > max_len:
        text += f"... <+{len(raw) - max_len} chars>"
    return text


def agent_model_label(agent: Any) -> str:
    model = getattr(agent, "model", None)
    if isinstance(model, str):
        return model
    label = getattr(model, "model", None) or getattr(model, "name", None)
    return str(label) if label else repr(model)


def input_preview(input: Any) -> str:
    if isinstance(input, str):
        return input
    for message in input or []:
        if getattr(message, "role", None) != "system":
            content = getattr(message, "content", None)
            return content if isinstance(content, str) else repr(content)
    return ""


def supports_json_schema(provider: Any) -> bool:
    return bool(getattr(provider, "supports_json_schema", False))


__all__ = ["agent_model_label", "input_preview", "supports_json_schema", "truncate_repr"]
