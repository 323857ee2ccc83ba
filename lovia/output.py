"""Structured output: native JSON Schema response formats or a system-prompt contract."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from lovia.exceptions import OutputValidationError

_REPAIR_HINT = (
    "The model's final reply did not match the output type. Agent(output_repair=...) controls "
    "how many repair turns are attempted."
)


class OutputRepairStrategy(Protocol):
    def build_prompt(self, exc: OutputValidationError, attempt: int) -> str | None: ...


@dataclass
class DefaultOutputRepair:
    """Ask the model once (by default) to resend only the JSON document."""

    max_attempts: int = 1

    def build_prompt(self, exc: OutputValidationError, attempt: int) -> str | None:
        if attempt > self.max_attempts:
            return None
        return (
            "Your previous reply could not be parsed as the required output.\n"
            f"Error: {exc}\n"
            "Reply again with only the JSON document that matches the schema: no prose, "
            "no markdown and no code fences."
        )


@dataclass
class StructuredOutput:
    output_type: Any
    use_native: bool
    schema: dict[str, Any]

    @property
    def type_name(self) -> str:
        return getattr(self.output_type, "__name__", None) or repr(self.output_type)


def resolve_structured_output(
    output_type: Any, supports_response_format: bool
) -> StructuredOutput | None:
    if output_type is str:
        return None
    from lovia.schema import model_json_schema  # pydantic: only for structured output

    return StructuredOutput(
        output_type, bool(supports_response_format), model_json_schema(output_type)
    )


def response_format_for(spec: StructuredOutput) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": spec.schema, "strict": True},
    }


def format_output_instructions(spec: StructuredOutput) -> str:
    schema = json.dumps(spec.schema, ensure_ascii=False)
    return (
        "## Output format\n"
        "When you give your final answer, reply with only a JSON document that matches this "
        f"JSON Schema:\n{schema}\n"
        "You may use tools first. The final reply must be only the JSON document: no prose, "
        "no markdown and no code fences."
    )


def _snippet(text: str) -> str:
    return text[:200] + "…" if len(text) > 200 else text


def _balanced_block(text: str) -> str | None:
    """The first balanced ``{...}`` or ``[...]`` block, aware of strings and escapes."""
    start = next((i for i, ch in enumerate(text) if ch in "{["), None)
    if start is None:
        return None
    stack: list[str] = []
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return text[start : i + 1]
    return None


def _unfence(text: str) -> str | None:
    stripped = text.strip()
    if not stripped.startswith("```"):
        return None
    lines = stripped.split("\n")
    if len(lines) < 2 or not lines[-1].strip().endswith("```"):
        return None
    body = "\n".join(lines[1:])
    return body[: body.rstrip().rfind("```")]


def loads_lenient(text: str) -> Any:
    """Parse JSON from model text: as is, inside one code fence, or the first balanced block."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError) as exc:
        first_error: Exception = exc
    for candidate in (_unfence(text), _balanced_block(text)):
        if candidate is None:
            continue
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    raise OutputValidationError(
        f"Model output is not valid JSON: {first_error}", hint=_REPAIR_HINT, raw=_snippet(text)
    )


def parse_structured_output(spec: StructuredOutput, payload: Any) -> Any:
    from lovia.schema import coerce_output

    try:
        return coerce_output(spec.output_type, payload)
    except Exception as exc:
        raw = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
        raise OutputValidationError(
            f"Failed to parse output as {spec.type_name}: {exc}",
            hint=_REPAIR_HINT,
            raw=_snippet(raw),
            output_type_name=spec.type_name,
        ) from exc


__all__ = [
    "DefaultOutputRepair",
    "OutputRepairStrategy",
    "StructuredOutput",
    "format_output_instructions",
    "loads_lenient",
    "parse_structured_output",
    "resolve_structured_output",
    "response_format_for",
]
