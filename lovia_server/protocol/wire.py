"""The base of every protocol model: snake_case in Python, camelCase on the wire.

Optional wire fields are declared with ``omitted()``: absent from the JSON when ``None``, so the
wire keeps its two shapes apart (``{"decision": ...}`` only when decided; ``"model": null`` when a
required field has no value).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


def _is_none(value: object) -> bool:
    return value is None


def omitted() -> Any:
    """An optional field that is left out of the JSON while it is ``None``."""
    return Field(default=None, exclude_if=_is_none)


class WireModel(BaseModel):
    """A payload or result the server sends: strict about its own fields."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
        frozen=True,
        defer_build=True,
        # Sent objects always carry their defaulted fields, so the schema marks them required
        # (optional means ``omitted()``).
        json_schema_serialization_defaults_required=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON object sent to the client (the one place models become dicts)."""
        return self.model_dump(mode="json", by_alias=True)


class WireParams(BaseModel):
    """Request params a client sends: unknown fields are ignored (newer clients)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="ignore",
        frozen=True,
        defer_build=True,
    )


__all__ = ["WireModel", "WireParams", "omitted"]
