"""The method, event and error tables of docs/server.md, rendered from the protocol models.

Each table sits between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``; the
schema command rewrites them and its ``--check`` fails when they differ from the models.
"""

from __future__ import annotations

import inspect
import json
import re
import types
from enum import Enum
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from typing_extensions import TypeAliasType

from lovia_server.protocol.errors import ERROR_DESCRIPTIONS, ErrorCode
from lovia_server.protocol.events import PAYLOADS, ApprovalAction, ToolKind
from lovia_server.protocol.methods import METHOD_TABLE

BLOCKS = ("methods", "events", "errors")
_MAX_EXPANDED_FIELDS = 6
_MAX_LITERALS = 4


class StaleDocs(ValueError):
    """The document lacks a generated block's markers."""


def render_into(text: str) -> str:
    """``text`` with every generated block replaced by the models' current tables."""
    for name in BLOCKS:
        start, end = f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"
        found = re.search(re.escape(start) + r".*?" + re.escape(end), text, re.S)
        if found is None:
            raise StaleDocs(f"missing the {start} ... {end} markers")
        block = f"{start}\n{RENDERERS[name]()}\n{end}"
        text = text[: found.start()] + block + text[found.end() :]
    return text


def methods_table() -> str:
    rows = ["| method | params | result |", "|---|---|---|"]
    for method in METHOD_TABLE:
        result = shape(method.result, sent=True)
        if method.note:
            result += f"; {method.note}"
        rows.append(f"| `{method.name}` | {_cell(shape(method.params))} | {_cell(result)} |")
    return "\n".join(rows)


def events_table() -> str:
    rows = ["| kind | payload |", "|---|---|"]
    for kind, model in PAYLOADS.items():
        payload = shape(model, sent=True)
        doc = _doc(model)
        rows.append(f"| `{kind}` | {_cell(payload + (f' — {doc}' if doc else ''))} |")
    kinds = ", ".join(f"`{k}`" for k in get_args(ToolKind.__value__))
    actions = ", ".join(f"`{a}`" for a in get_args(ApprovalAction.__value__))
    rows += ["", f"`toolKind` is one of {kinds}; `action` one of {actions}."]
    return "\n".join(rows)


def errors_table() -> str:
    rows = ["| code | name | when |", "|---|---|---|"]
    for code in ErrorCode:
        rows.append(f"| {code.value} | {code.title} | {_cell(ERROR_DESCRIPTIONS[code])} |")
    return "\n".join(rows)


RENDERERS = {"methods": methods_table, "events": events_table, "errors": errors_table}


def shape(model: type[BaseModel], *, sent: bool = False, depth: int = 0) -> str:
    """A model as the docs write it: ``{runId, afterSeq?, status: "running"}``."""
    parts = []
    for name, field in model.model_fields.items():
        wire = field.alias or name
        optional = (field.exclude_if is not None) if sent else not field.is_required()
        label = wire + ("?" if optional else "")
        detail = _type(field.annotation, sent=sent, depth=depth + 1)
        parts.append(f"{label}: {detail}" if detail else label)
    return "{" + ", ".join(parts) + "}"


def _type(annotation: Any, *, sent: bool, depth: int) -> str:
    if isinstance(annotation, TypeAliasType):
        return _type(annotation.__value__, sent=sent, depth=depth)
    origin = get_origin(annotation)
    args = [a for a in get_args(annotation) if a is not type(None)]
    if origin is Literal:
        if len(args) == 1:
            return json.dumps(args[0])
        return " | ".join(str(a) for a in args) if len(args) <= _MAX_LITERALS else ""
    if origin in (Union, types.UnionType):
        if len(args) == 1:
            return _type(args[0], sent=sent, depth=depth)
        shapes = [_type(a, sent=sent, depth=depth) for a in args]
        return " | ".join(shapes) if all(shapes) else ""
    if origin is list and args:
        inner = _type(args[0], sent=sent, depth=depth)
        return f"[{inner}]" if inner else ""
    if get_origin(annotation) is not None and hasattr(annotation, "__metadata__"):
        return _type(get_args(annotation)[0], sent=sent, depth=depth)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        small = len(annotation.model_fields) <= _MAX_EXPANDED_FIELDS
        return shape(annotation, sent=sent, depth=depth) if small and depth < 3 else ""
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return ""
    return ""


def _doc(model: type[BaseModel]) -> str:
    own = model.__dict__.get("__doc__")
    return " ".join(inspect.cleandoc(own).replace("``", "`").split()) if own else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


__all__ = ["BLOCKS", "StaleDocs", "errors_table", "events_table", "methods_table", "render_into"]
