"""JSON type aliases shared across the framework."""

from __future__ import annotations

from typing import Any, TypeAlias

JsonPrimitive: TypeAlias = str | int | float | bool | None
JsonValue: TypeAlias = Any
JsonObject: TypeAlias = dict[str, Any]
JsonArray: TypeAlias = list[Any]
JsonSchema: TypeAlias = dict[str, Any]

__all__ = ["JsonArray", "JsonObject", "JsonPrimitive", "JsonSchema", "JsonValue"]
