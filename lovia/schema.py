"""JSON Schema from Python type hints, and the validators that go with it."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from types import NoneType, UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from pydantic.fields import FieldInfo

from lovia.types import JsonSchema

_EMPTY_SCHEMA: JsonSchema = {"type": "object", "properties": {}, "additionalProperties": False}


def _strip_titles(schema: Any) -> Any:
    """Drop auto-generated ``title`` strings; a property named ``title`` (a dict) survives."""
    if isinstance(schema, dict):
        for key in [k for k, v in schema.items() if k == "title" and isinstance(v, str)]:
            del schema[key]
        for value in schema.values():
            _strip_titles(value)
    elif isinstance(schema, list):
        for item in schema:
            _strip_titles(item)
    return schema


def model_json_schema(tp: Any) -> JsonSchema:
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        schema = tp.model_json_schema()
    else:
        schema = TypeAdapter(tp).json_schema()
    result: JsonSchema = _strip_titles(schema)
    return result


def _strip_annotated(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def is_run_context_annotation(tp: Any) -> bool:
    """True for ``RunContext`` / ``RunContext[X]``, also wrapped in ``Annotated``."""
    from lovia.run_context import RunContext

    tp = _strip_annotated(tp)
    return tp is RunContext or get_origin(tp) is RunContext


def _normalize_annotation(tp: Any) -> Any:
    """Turn string metadata into descriptions and lift metadata out of ``Optional``."""
    origin = get_origin(tp)
    if origin in (Union, UnionType):
        args = get_args(tp)
        non_none = [a for a in args if a is not NoneType]
        if len(non_none) == 1 and len(args) == 2 and get_origin(non_none[0]) is Annotated:
            inner, *meta = get_args(non_none[0])
            return _normalize_annotation(Annotated[(Union[inner, None], *meta)])  # noqa: UP007
        return tp
    if origin is Annotated:
        inner, *meta = get_args(tp)
        converted = [Field(description=m) if isinstance(m, str) else m for m in meta]
        return Annotated[(inner, *converted)]
    return tp


def _resolved_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """Resolved annotations; a hint that cannot be resolved becomes ``Any``."""
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception:
        pass
    hints: dict[str, Any] = {}
    namespace = getattr(fn, "__globals__", {})
    for name, ann in (getattr(fn, "__annotations__", {}) or {}).items():
        if isinstance(ann, str):
            try:
                ann = eval(ann, namespace)
            except Exception:
                ann = Any
        hints[name] = ann
    return hints


def _llm_fields(fn: Callable[..., Any]) -> dict[str, tuple[Any, Any]]:
    hints = _resolved_hints(fn)
    fields: dict[str, tuple[Any, Any]] = {}
    for name, param in inspect.signature(fn).parameters.items():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if name.startswith("_") or name in ("self", "cls"):
            continue
        ann = hints.get(name, param.annotation)
        if ann is inspect.Parameter.empty:
            ann = str
        if is_run_context_annotation(ann):
            continue
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[name] = (_normalize_annotation(ann), default)
    return fields


def _args_model(fn: Callable[..., Any], fields: dict[str, tuple[Any, Any]]) -> type[BaseModel]:
    name = getattr(fn, "__name__", "tool") + "_args"
    config = ConfigDict(arbitrary_types_allowed=True, extra="ignore")
    model: type[BaseModel] = create_model(name, __config__=config, **fields)  # type: ignore[call-overload]
    return model


def function_args_schema(
    fn: Callable[..., Any], *, strict: bool = False
) -> tuple[JsonSchema, list[str]]:
    """The JSON Schema of ``fn``'s model-visible parameters, and their names in order."""
    fields = _llm_fields(fn)
    if not fields:
        return dict(_EMPTY_SCHEMA, properties={}), []
    schema = _strip_titles(_args_model(fn, fields).model_json_schema())
    schema.setdefault("additionalProperties", False)
    names = list(fields)
    if strict:
        schema["required"] = list(names)
    return schema, names


def build_args_validator(fn: Callable[..., Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A reusable validator: raw JSON dict in, coerced keyword arguments out."""
    fields = _llm_fields(fn)
    if not fields:
        return lambda data: {}
    model = _args_model(fn, fields)
    names = list(fields)

    def validate(data: dict[str, Any]) -> dict[str, Any]:
        inst = model.model_validate(data)
        return {n: getattr(inst, n) for n in names}

    return validate


def validate_args(fn: Callable[..., Any], data: dict[str, Any]) -> dict[str, Any]:
    return build_args_validator(fn)(data)


def coerce_output(tp: Any, data: Any) -> Any:
    """Coerce parsed model output (or a JSON string) into ``tp``."""
    if tp is str:
        return data if isinstance(data, str) else str(data)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if isinstance(data, str):
            return tp.model_validate_json(data)
        return tp.model_validate(data)
    adapter: TypeAdapter[Any] = TypeAdapter(tp)
    if isinstance(data, str):
        return adapter.validate_json(data)
    return adapter.validate_python(data)


__all__ = [
    "FieldInfo",
    "build_args_validator",
    "coerce_output",
    "function_args_schema",
    "is_run_context_annotation",
    "model_json_schema",
    "validate_args",
]
