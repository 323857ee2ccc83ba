"""The tool type, the ``@tool`` decorator, and how tools are run and rendered."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import decimal
import enum
import functools
import inspect
import json
import sys
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, overload

from lovia.exceptions import BudgetExceeded, InvalidToolArguments, RunCancelled, UserError
from lovia.tools.presentation import TOOL_KINDS, LocationsFn, PreviewFn, TitleFn, ToolKind
from lovia.types import JsonSchema

if TYPE_CHECKING:
    from pydantic import ValidationError

    from lovia.run_context import RunContext

ApprovalPredicate: TypeAlias = "Callable[[dict[str, Any], RunContext[Any]], bool]"
ToolInvoker: TypeAlias = "Callable[[dict[str, Any], RunContext[Any]], Awaitable[Any]]"
ToolResultRenderer: TypeAlias = "Callable[[Any, RunContext[Any]], str | Awaitable[str]]"


class ToolPolicy(Protocol):
    """Middleware around a tool's invoke: ``await policy(next, args, ctx)``."""

    def __call__(
        self, invoke: ToolInvoker, args: dict[str, Any], ctx: RunContext[Any]
    ) -> Awaitable[Any]: ...


@dataclass
class Tool:
    name: str
    description: str
    parameters: JsonSchema
    invoke: ToolInvoker
    needs_approval: bool | ApprovalPredicate = False
    retries: int | None = None
    timeout: float | None = None
    max_output_chars: int | None = None
    result_renderer: ToolResultRenderer | None = None
    policies: tuple[ToolPolicy, ...] = ()
    parallel: bool = True
    returns_images: bool = False
    _handoff: bool = field(default=False, repr=False)
    # Presentation (see lovia.tools.presentation): how hosts show a call. None = default.
    kind: ToolKind | None = None
    title: str | TitleFn | None = field(default=None, repr=False)
    locations: LocationsFn | None = field(default=None, repr=False)
    preview: PreviewFn | None = field(default=None, repr=False)
    source: str | None = field(default=None, repr=False)
    """Who serves the tool when it is not the agent's own, e.g. the MCP server's name."""

    def __post_init__(self) -> None:
        if self.kind is not None and self.kind not in TOOL_KINDS:
            raise UserError(
                f"Unknown kind {self.kind!r} for tool {self.name!r}.",
                hint="Use one of: " + ", ".join(TOOL_KINDS) + ".",
            )

    @property
    def is_handoff(self) -> bool:
        """True for a handoff tool (calling it transfers the conversation)."""
        return self._handoff

    def requires_approval(self, args: dict[str, Any], ctx: RunContext[Any]) -> bool:
        if callable(self.needs_approval):
            return bool(self.needs_approval(args, ctx))
        return bool(self.needs_approval)

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


def invalid_arguments(
    name: str, exc: ValidationError, *, strip_value_error: bool = False
) -> InvalidToolArguments:
    """The model-facing error for arguments that failed validation: ``loc: msg; loc: msg``.

    ``strip_value_error`` drops pydantic's ``"Value error, "`` prefix from custom validators.
    """
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        msg = str(err.get("msg", ""))
        if strip_value_error:
            msg = msg.removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}")
    return InvalidToolArguments(f"Invalid arguments for tool '{name}': " + "; ".join(parts))


def _context_param(fn: Callable[..., Any]) -> str | None:
    from lovia.schema import _resolved_hints, is_run_context_annotation

    hints = _resolved_hints(fn)
    found: list[str] = []
    for pname, param in inspect.signature(fn).parameters.items():
        ann = hints.get(pname, param.annotation)
        if ann is not inspect.Parameter.empty and is_run_context_annotation(ann):
            found.append(pname)
    if len(found) > 1:
        raise UserError(
            "Tool functions can have at most one RunContext parameter.",
            hint=f"{getattr(fn, '__name__', 'tool')} declares {', '.join(found)}; keep one.",
        )
    return found[0] if found else None


def _make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    needs_approval: bool | ApprovalPredicate,
    retries: int | None,
    timeout: float | None,
    max_output_chars: int | None,
    result_renderer: ToolResultRenderer | None,
    policies: tuple[ToolPolicy, ...],
    parallel: bool,
    returns_images: bool,
    strict: bool,
    kind: ToolKind | None = None,
    title: str | TitleFn | None = None,
    locations: LocationsFn | None = None,
    preview: PreviewFn | None = None,
) -> Tool:
    # The schema helpers (and pydantic) load with the first @tool, not with lovia.
    from pydantic import ValidationError

    from lovia.schema import build_args_validator, function_args_schema

    tool_name = name or fn.__name__
    if description is None:
        description = (inspect.getdoc(fn) or "").strip()
    parameters, _ = function_args_schema(fn, strict=strict)
    validator = build_args_validator(fn)
    ctx_param = _context_param(fn)
    is_async = inspect.iscoroutinefunction(fn)

    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> Any:
        try:
            kwargs = validator(args)
        except ValidationError as exc:
            raise invalid_arguments(tool_name, exc) from None
        if ctx_param is not None:
            kwargs[ctx_param] = ctx
        if is_async:
            return await fn(**kwargs)
        return await asyncio.to_thread(functools.partial(fn, **kwargs))

    return Tool(
        name=tool_name,
        description=description,
        parameters=parameters,
        invoke=invoke,
        needs_approval=needs_approval,
        retries=retries,
        timeout=timeout,
        max_output_chars=max_output_chars,
        result_renderer=result_renderer,
        policies=tuple(policies),
        parallel=parallel,
        returns_images=returns_images,
        kind=kind,
        title=title,
        locations=locations,
        preview=preview,
    )


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: bool | ApprovalPredicate = False,
    retries: int | None = None,
    timeout: float | None = None,
    max_output_chars: int | None = None,
    result_renderer: ToolResultRenderer | None = None,
    policies: tuple[ToolPolicy, ...] = (),
    parallel: bool = True,
    returns_images: bool = False,
    strict: bool = False,
    kind: ToolKind | None = None,
    title: str | TitleFn | None = None,
    locations: LocationsFn | None = None,
    preview: PreviewFn | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: bool | ApprovalPredicate = False,
    retries: int | None = None,
    timeout: float | None = None,
    max_output_chars: int | None = None,
    result_renderer: ToolResultRenderer | None = None,
    policies: tuple[ToolPolicy, ...] = (),
    parallel: bool = True,
    returns_images: bool = False,
    strict: bool = False,
    kind: ToolKind | None = None,
    title: str | TitleFn | None = None,
    locations: LocationsFn | None = None,
    preview: PreviewFn | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a function into a :class:`Tool`; its signature becomes the JSON Schema.

    ``kind``, ``title``, ``locations`` and ``preview`` say how hosts present a call (see
    :mod:`lovia.tools.presentation`); all default to None (kind ``"other"``, titled by name).
    """

    def decorate(f: Callable[..., Any]) -> Tool:
        return _make_tool(
            f,
            name=name,
            description=description,
            needs_approval=needs_approval,
            retries=retries,
            timeout=timeout,
            max_output_chars=max_output_chars,
            result_renderer=result_renderer,
            policies=policies,
            parallel=parallel,
            returns_images=returns_images,
            strict=strict,
            kind=kind,
            title=title,
            locations=locations,
            preview=preview,
        )

    if fn is not None:
        return decorate(fn)
    return decorate


# --------------------------------------------------------------------------- running


async def apply_tool_policies(
    invoke: ToolInvoker,
    policies: tuple[ToolPolicy, ...] | list[ToolPolicy],
    args: dict[str, Any],
    ctx: RunContext[Any],
) -> Any:
    """Run ``invoke`` wrapped by ``policies``; the first policy is the outermost."""
    call = invoke
    for policy in reversed(list(policies)):
        call = _bind_policy(policy, call)
    return await call(args, ctx)


def _bind_policy(policy: ToolPolicy, nxt: ToolInvoker) -> ToolInvoker:
    async def wrapped(args: dict[str, Any], ctx: RunContext[Any]) -> Any:
        return await policy(nxt, args, ctx)

    return wrapped


async def run_tool(
    tool: Tool,
    args: dict[str, Any],
    ctx: RunContext[Any],
    *,
    default_retries: int = 0,
    default_timeout: float | None = None,
) -> Any:
    """Invoke ``tool`` with its retries and per-attempt timeout."""
    retries = tool.retries if tool.retries is not None else default_retries
    timeout = tool.timeout if tool.timeout is not None else default_timeout
    attempts = 1 + max(0, retries)
    for attempt in range(1, attempts + 1):
        call_args = dict(args)
        try:
            coro: Awaitable[Any] = (
                apply_tool_policies(tool.invoke, tool.policies, call_args, ctx)
                if tool.policies
                else tool.invoke(call_args, ctx)
            )
            if timeout is not None:
                return await asyncio.wait_for(coro, timeout)
            return await coro
        except (RunCancelled, BudgetExceeded, InvalidToolArguments):
            raise
        except Exception:
            if attempt >= attempts:
                raise
            await asyncio.sleep(min(5.0, 0.1 * 2 ** (attempt - 1)))
    raise AssertionError("unreachable")  # pragma: no cover


# --------------------------------------------------------------------------- rendering


def _is_pydantic_model(value: Any) -> bool:
    """``isinstance(value, BaseModel)`` without importing pydantic: a model instance can
    exist only once pydantic has been imported."""
    pydantic = sys.modules.get("pydantic")
    return pydantic is not None and isinstance(value, pydantic.BaseModel)


def _to_primitive(value: Any, depth: int = 0) -> Any:
    if depth > 50:
        return str(value)
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if _is_pydantic_model(value):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _to_primitive(dataclasses.asdict(value), depth + 1)
    if isinstance(value, enum.Enum):
        return _to_primitive(value.value, depth + 1)
    if isinstance(value, (_dt.date, _dt.datetime, _dt.time)):
        return value.isoformat()
    if isinstance(value, (decimal.Decimal, PurePath, uuid.UUID)):
        return str(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode()
        except UnicodeDecodeError:
            return bytes(value).hex()
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = k if isinstance(k, (str, int, float, bool)) or k is None else str(k)
            out[key] = _to_primitive(v, depth + 1)
        return out
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_to_primitive(v, depth + 1) for v in value]
    return value


def default_result_renderer(result: Any) -> str:
    """Strings pass through; everything else becomes JSON text (or ``str`` as a last resort)."""
    if isinstance(result, str):
        return result
    converted = _to_primitive(result)
    try:
        return json.dumps(converted, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(converted)


async def render_tool_result(
    tool: Tool,
    result: Any,
    ctx: RunContext[Any],
    *,
    default: ToolResultRenderer | None = None,
) -> str:
    renderer = tool.result_renderer or default
    if renderer is None:
        return default_result_renderer(result)
    text = renderer(result, ctx)
    if inspect.isawaitable(text):
        text = await text
    if not isinstance(text, str):
        return default_result_renderer(text)
    return text


def truncate_tool_output(text: str, limit: int) -> str:
    """Keep the head (80%) and tail (20%) of an oversized output with a marker between."""
    if len(text) <= limit:
        return text
    limit = max(1, limit)
    head = max(1, int(limit * 0.8))
    tail = limit - head
    marker = f"\n\n[... tool output truncated: kept {head + tail:,} of {len(text):,} chars ...]\n\n"
    return text[:head] + marker + (text[-tail:] if tail > 0 else "")


def clip_text(
    text: str, limit: int, *, hint: str = "", keep_tail: bool = False
) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    notice = (
        f"\n[... truncated: showing {limit} of {len(text)} chars.{' ' + hint if hint else ''}]\n"
    )
    if limit <= 0:
        return notice.strip(), True
    if keep_tail:
        half = limit // 2
        return text[:half] + notice + text[-(limit - half) :], True
    return text[:limit] + notice.rstrip("\n"), True


__all__ = [
    "ApprovalPredicate",
    "Tool",
    "ToolInvoker",
    "ToolPolicy",
    "ToolResultRenderer",
    "apply_tool_policies",
    "clip_text",
    "default_result_renderer",
    "render_tool_result",
    "run_tool",
    "tool",
    "truncate_tool_output",
]
