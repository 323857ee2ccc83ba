"""The protocol's JSON Schema, generated from the models, and the check that keeps it current.

``python -m lovia_server.protocol.schema`` writes ``schema.json`` and ``names.py`` next to this
module (and the generated tables of ``docs/server.md`` in a source checkout); ``--check`` exits 1
when one is stale. The editor extension's TypeScript types are generated from ``schema.json``;
``names.py`` holds the names the server needs before it loads pydantic.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, RootModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from lovia_server.protocol import PROTOCOL_VERSION, docs
from lovia_server.protocol.editor_requests import CLIENT_METHOD_TABLE
from lovia_server.protocol.errors import ErrorCode
from lovia_server.protocol.events import DELTA_KINDS, EVENT_KINDS, LoviaEvent
from lovia_server.protocol.methods import (
    EDIT_MODES,
    METHOD_TABLE,
    ServerCapabilities,
)
from lovia_server.protocol.settings import InitOptions, LoviaSettings

SCHEMA_PATH = Path(__file__).with_name("schema.json")
NAMES_PATH = Path(__file__).with_name("names.py")
DOCS_PATH = Path(__file__).parents[2] / "docs" / "server.md"
SCHEMA_ID = "https://lovia.dev/schemas/editor-protocol.json"


class EventNotification(RootModel[LoviaEvent]):
    """One ``lovia/event`` notification: the named ``LoviaEvent`` union (also the items of
    ``ReplayResult.events``), as a model ``models_json_schema`` takes."""

    model_config = ConfigDict(defer_build=True)


class ErrorCodeModel(RootModel[ErrorCode]):
    model_config = ConfigDict(defer_build=True)


JsonObject = dict[str, Any]  # a JSON Schema node


def build_schema() -> JsonObject:
    """The whole protocol as one JSON Schema: methods (params, result), the event, error codes."""
    models: list[tuple[type[BaseModel], JsonSchemaMode]]
    models = [
        (EventNotification, "serialization"),
        (ErrorCodeModel, "serialization"),
        (ServerCapabilities, "serialization"),
        (InitOptions, "validation"),
        (LoviaSettings, "validation"),
    ]
    for method in METHOD_TABLE:
        models += [(method.params, "validation"), (method.result, "serialization")]
    for request in CLIENT_METHOD_TABLE:  # sent by the server, answered by the client
        models += [(request.params, "serialization"), (request.result, "validation")]
    refs, top = models_json_schema(models, ref_template="#/$defs/{model}")
    defs: JsonObject = top["$defs"]
    defs["ErrorCode"] = {
        "title": "ErrorCode",
        "description": "JSON-RPC error codes: "
        + ", ".join(f"{c.value} {c.title}" for c in ErrorCode),
        "type": "integer",
        "enum": [c.value for c in ErrorCode],
    }
    defs.pop("ErrorCodeModel", None)
    defs.pop("EventNotification", None)
    defs["LoviaEvent"] = {
        "title": "LoviaEvent",
        "description": "One `lovia/event` notification: the envelope and one kind's payload.",
        **defs["LoviaEvent"],
    }

    def entry(note: str, params: JsonObject, result: JsonObject) -> JsonObject:
        return {
            "type": "object",
            "description": note,
            "properties": {"params": params, "result": result},
            "required": ["params", "result"],
            "additionalProperties": False,
        }

    # what the server receives is validated and what it sends serialized, both ways round
    methods: JsonObject = {
        m.name: entry(m.note, refs[(m.params, "validation")], refs[(m.result, "serialization")])
        for m in METHOD_TABLE
    }
    client_methods: JsonObject = {
        r.name: entry(r.note, refs[(r.params, "serialization")], refs[(r.result, "validation")])
        for r in CLIENT_METHOD_TABLE
    }
    schema: JsonObject = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "LoviaProtocol",
        "description": "The lovia editor protocol (generated from lovia_server.protocol; do not "
        "edit by hand): every lovia/* request's params and result, the lovia/event "
        "notification, the error codes, the initialization options and the settings.",
        "type": "object",
        "properties": {
            "protocolVersion": {"const": 1},
            "methods": {
                "type": "object",
                "properties": methods,
                "required": list(methods),
                "additionalProperties": False,
            },
            "clientMethods": {
                "description": "requests the server sends a client that declared "
                "`initializationOptions.lovia.editorIntel`",
                "type": "object",
                "properties": client_methods,
                "required": list(client_methods),
                "additionalProperties": False,
            },
            "event": {"$ref": "#/$defs/LoviaEvent"},
            "errorCode": {"$ref": "#/$defs/ErrorCode"},
            "serverCapabilities": {
                "description": "`initialize` result: `capabilities.experimental.lovia`",
                "$ref": "#/$defs/ServerCapabilities",
            },
            "initializationOptions": {
                "description": "`initialize.initializationOptions.lovia`",
                "$ref": "#/$defs/InitOptions",
            },
            "settings": {
                "description": "the `lovia` configuration section",
                "$ref": "#/$defs/LoviaSettings",
            },
        },
        "required": [
            "protocolVersion",
            "methods",
            "clientMethods",
            "event",
            "errorCode",
            "serverCapabilities",
            "initializationOptions",
            "settings",
        ],
        "additionalProperties": False,
        "$defs": dict(sorted(defs.items())),
    }
    for node in _objects(schema):
        _tidy(node)
    return schema


def _objects(node: Any) -> Iterator[JsonObject]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from _objects(value)


def _tidy(node: JsonObject) -> None:
    """Property titles go (generators would name a type after each); an optional field that is
    left out when ``None`` is typed without the ``null``."""
    if isinstance(node.get("description"), str):
        node["description"] = node["description"].replace("``", "`")
    properties = node.get("properties")
    if not isinstance(properties, dict) or node.get("type") != "object":
        return
    required = set(node.get("required", ()))
    for name, prop in properties.items():
        if not isinstance(prop, dict):
            continue
        prop.pop("title", None)
        if name in required or "default" not in prop or prop["default"] is not None:
            continue
        del prop["default"]
        branches = prop.get("anyOf")
        if isinstance(branches, list):
            rest = [b for b in branches if b != {"type": "null"}]
            if len(rest) == 1:
                del prop["anyOf"]
                prop.update(rest[0])
            else:
                prop["anyOf"] = rest


def render_schema() -> str:
    return json.dumps(build_schema(), indent=2, ensure_ascii=False) + "\n"


def render_names() -> str:
    """``names.py``: plain tuples of the models' names, importable without pydantic."""

    def rows(values: Sequence[str]) -> str:
        return "".join(f"    {json.dumps(v)},\n" for v in values)

    return (
        '"""Names from the protocol models, for code that runs before pydantic is loaded (the\n'
        "server's ``initialize`` answer). Generated by ``python -m lovia_server.protocol.schema``"
        ';\ndo not edit."""\n\n'
        f"METHOD_NAMES = (\n{rows([m.name for m in METHOD_TABLE])})\n"
        f"COMMAND_NAMES = (\n{rows([m.command for m in METHOD_TABLE])})\n"
        f"EVENT_KINDS = (\n{rows(EVENT_KINDS)})\n"
        f"DELTA_KINDS = frozenset(\n    (\n{rows(sorted(DELTA_KINDS)).replace('    ', '        ')}"
        "    )\n)\n"
        f"EDIT_MODES = (\n{rows(EDIT_MODES)})\n"
        f"{_render_capabilities()}"
    )


# Where each ServerCapabilities field's value comes from in names.py (a new field must be
# given its source here, or generating fails).
_CAPABILITY_SOURCES = {
    "protocol_version": str(PROTOCOL_VERSION),
    "methods": "list(METHOD_NAMES)",
    "event_kinds": "list(EVENT_KINDS)",
    "edit_modes": "list(EDIT_MODES)",
    "version": "version",
}


def _render_capabilities() -> str:
    missing = set(ServerCapabilities.model_fields) - set(_CAPABILITY_SOURCES)
    if missing:
        raise SystemExit(f"names.py: no source for ServerCapabilities fields {sorted(missing)}")
    lines = "".join(
        f"        {json.dumps(info.alias or name)}: {_CAPABILITY_SOURCES[name]},\n"
        for name, info in ServerCapabilities.model_fields.items()
    )
    return (
        "\n\ndef server_capabilities(version: str) -> dict[str, object]:\n"
        '    """``ServerCapabilities(...).to_wire()`` of this server, built without pydantic."""\n'
        f"    return {{\n{lines}    }}\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lovia_server.protocol.schema",
        description="Write (or --check) schema.json, names.py and the generated tables in "
        "docs/server.md.",
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is stale")
    args = parser.parse_args(argv)
    outputs = {SCHEMA_PATH: render_schema(), NAMES_PATH: render_names()}
    if DOCS_PATH.exists():
        outputs[DOCS_PATH] = docs.render_into(DOCS_PATH.read_text(encoding="utf-8"))
    stale = [
        path
        for path, text in outputs.items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]
    if args.check:
        for path in stale:
            print(f"{path} is stale: run `python -m lovia_server.protocol.schema`", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(outputs[path], encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
