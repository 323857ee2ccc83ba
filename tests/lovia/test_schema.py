from dataclasses import dataclass
from typing import Annotated

import pytest
from pydantic import BaseModel, Field, ValidationError

from lovia.run_context import RunContext
from lovia.schema import (
    _strip_titles,
    build_args_validator,
    coerce_output,
    function_args_schema,
    model_json_schema,
    validate_args,
)


class Point(BaseModel):
    x: int
    title: str


@dataclass
class Box:
    w: int


def test_no_params_schema():
    def f(): ...

    assert function_args_schema(f) == (
        {"type": "object", "properties": {}, "additionalProperties": False},
        [],
    )
    assert build_args_validator(f)({"junk": 1}) == {}


def test_hidden_params_and_annotations():
    def f(
        ctx: RunContext[int],
        a: int,
        b: Annotated[str, "the b"] = "x",
        c: Annotated[int, "cee"] | None = None,
        d: Annotated[int, Field(ge=1)] = 1,
        untyped=None,
        _private: int = 0,
        *args,
        **kwargs,
    ): ...

    schema, names = function_args_schema(f)
    assert names == ["a", "b", "c", "d", "untyped"]
    props = schema["properties"]
    assert props["b"]["description"] == "the b"
    assert props["c"]["description"] == "cee"
    assert props["d"]["minimum"] == 1
    assert props["untyped"]["type"] == "string"
    assert schema["required"] == ["a"]
    assert schema["additionalProperties"] is False
    assert "title" not in schema and "title" not in props["a"]


def test_strict_requires_all():
    def f(a: int, b: int = 2): ...

    schema, _ = function_args_schema(f, strict=True)
    assert schema["required"] == ["a", "b"]


def test_strip_titles_keeps_title_property():
    schema = model_json_schema(Point)
    assert "title" in schema["properties"] and "title" not in schema
    assert _strip_titles({"title": {"type": "string"}}) == {"title": {"type": "string"}}


def test_validator_coerces_and_builds_instances():
    def f(n: int, p: Point, box: Box, tags: list[str] | None = None): ...

    out = validate_args(f, {"n": "3", "p": {"x": 1, "title": "t"}, "box": {"w": 2}})
    assert out["n"] == 3 and isinstance(out["p"], Point) and isinstance(out["box"], Box)
    assert out["tags"] is None
    with pytest.raises(ValidationError):
        validate_args(f, {"n": "x", "p": {}, "box": {}})


def test_coerce_output():
    assert coerce_output(str, 5) == "5"
    assert coerce_output(Point, '{"x": 1, "title": "a"}') == Point(x=1, title="a")
    assert coerce_output(Point, {"x": 1, "title": "a"}).x == 1
    assert coerce_output(list[int], "[1, 2]") == [1, 2]
    assert coerce_output(list[int], [1, "2"]) == [1, 2]


def test_unresolvable_hint_is_any_and_not_injected():
    def f(ctx: "NotDefinedAnywhere", n: int): ...  # noqa: F821

    schema, names = function_args_schema(f)
    assert names == ["ctx", "n"]
    assert schema["properties"]["n"]["type"] == "integer"


def test_functions_from_one_def_share_their_argument_model():
    import lovia.schema as schema_module

    def make(limit):
        def search(query: str, top: int = 5) -> str:
            """Search."""
            return query[:limit]

        return search

    first, second = make(1), make(2)
    assert schema_module._signature(first) is schema_module._signature(second)
    a, names = function_args_schema(first)
    a["properties"]["query"]["description"] = "changed by a caller"
    b, _ = function_args_schema(second)
    assert "description" not in b["properties"]["query"]  # every caller gets its own copy
    assert names == ["query", "top"]


def test_same_code_different_signatures_are_not_confused():
    import functools

    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs)

        return wrapper

    @deco
    def alpha(x: int) -> int:
        return x

    @deco
    def beta(y: str, z: bool = False) -> str:
        return y

    assert function_args_schema(alpha)[1] == ["x"]
    assert function_args_schema(beta)[1] == ["y", "z"]

    def factory(default):
        def f(n: int = default) -> int:
            return n

        return f

    assert function_args_schema(factory(1))[0]["properties"]["n"]["default"] == 1
    assert function_args_schema(factory(7))[0]["properties"]["n"]["default"] == 7
