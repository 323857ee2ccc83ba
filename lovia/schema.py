"""JSON Schema from Python type hints, and the validators that go with it."""

from __future__ import annotations

import copy
import inspect
import typing
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from dataclasses import field as dc_field
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


@dataclass
class _Signature:
    """What a function's parameters become: model-visible fields, their model and schemas."""

    fields: dict[str, tuple[Any, Any]]
    model: type[BaseModel] | None
    schemas: dict[bool, JsonSchema] = dc_field(default_factory=dict)  # by ``strict``


_SIGNATURES: OrderedDict[Hashable, _Signature] = OrderedDict()
_SIGNATURE_CACHE_SIZE = 512


def _signature_key(fn: Callable[..., Any]) -> Hashable | None:
    """Functions made by one ``def`` (a tool closure built per run, say) share their code,
    name, defaults and annotations, so they share their argument model. ``None``: not cached
    (no code object, a wrapper whose signature is another function's, unhashable defaults)."""
    code = getattr(fn, "__code__", None)
    if code is None or hasattr(fn, "__wrapped__") or hasattr(fn, "__signature__"):
        return None
    try:
        key = (
            code,
            getattr(fn, "__name__", None),
            getattr(fn, "__defaults__", None),
            tuple((getattr(fn, "__kwdefaults__", None) or {}).items()),
            tuple((getattr(fn, "__annotations__", None) or {}).items()),
            id(getattr(fn, "__globals__", None)),
        )
        hash(key)
    except TypeError:
        return None
    return key


def _signature(fn: Callable[..., Any]) -> _Signature:
    key = _signature_key(fn)
    if key is not None:
        cached = _SIGNATURES.get(key)
        if cached is not None:
            _SIGNATURES.move_to_end(key)
            return cached
    fields = _llm_fields(fn)
    signature = _Signature(fields, _args_model(fn, fields) if fields else None)
    if key is not None:
        _SIGNATURES[key] = signature
        while len(_SIGNATURES) > _SIGNATURE_CACHE_SIZE:
            _SIGNATURES.popitem(last=False)
    return signature


def function_args_schema(
    fn: Callable[..., Any], *, strict: bool = False
) -> tuple[JsonSchema, list[str]]:
    """The JSON Schema of ``fn``'s model-visible parameters, and their names in order."""
    signature = _signature(fn)
    if signature.model is None:
        return dict(_EMPTY_SCHEMA, properties={}), []
    names = list(signature.fields)
    schema = signature.schemas.get(strict)
    if schema is None:
        schema = _strip_titles(signature.model.model_json_schema())
        schema.setdefault("additionalProperties", False)
        if strict:
            schema["required"] = list(names)
        signature.schemas[strict] = schema
    return copy.deepcopy(schema), names


def build_args_validator(fn: Callable[..., Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A reusable validator: raw JSON dict in, coerced keyword arguments out."""
    signature = _signature(fn)
    model = signature.model
    if model is None:
        return lambda data: {}
    names = list(signature.fields)

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
