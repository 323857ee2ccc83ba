import asyncio
import json
from dataclasses import dataclass
from datetime import date
from enum import Enum
from pathlib import Path

import pytest
from pydantic import BaseModel

from lovia.exceptions import InvalidToolArguments, RunCancelled, UserError
from lovia.run_context import RunContext
from lovia.tools import (
    Tool,
    apply_tool_policies,
    clip_text,
    default_result_renderer,
    render_tool_result,
    run_tool,
    tool,
    truncate_tool_output,
)


@pytest.fixture
def ctx():
    return RunContext(context="deps", entries=[], agent=None)


def test_decorator_bare_and_called():
    @tool
    def a(x: int) -> int:
        """Doc line."""
        return x

    @tool(name="b2", description="", parallel=False, needs_approval=True)
    async def b(x: int) -> int:
        """ignored"""
        return x

    assert isinstance(a, Tool) and a.name == "a" and a.description == "Doc line."
    assert b.name == "b2" and b.description == "" and b.parallel is False
    assert b.requires_approval({}, None) is True
    assert a.openai_schema()["function"]["name"] == "a"


async def test_context_injection_by_annotation(ctx):
    @tool
    async def f(c: RunContext[str], ctx: str) -> str:
        return c.deps + ":" + ctx

    assert list(f.parameters["properties"]) == ["ctx"]
    assert await f.invoke({"ctx": "plain"}, ctx) == "deps:plain"


def test_two_context_params_rejected():
    with pytest.raises(UserError, match="at most one RunContext"):

        @tool
        def f(a: RunContext, b: RunContext) -> None: ...


async def test_sync_tool_runs_in_thread(ctx):
    import threading

    main = threading.get_ident()

    @tool
    def where() -> bool:
        return threading.get_ident() != main

    assert await where.invoke({}, ctx) is True


async def test_invalid_arguments_message(ctx):
    @tool
    async def needs_int(count: int, inner: dict[str, int]) -> int:
        return count

    with pytest.raises(InvalidToolArguments) as info:
        await needs_int.invoke({"count": "x", "inner": {"k": "v"}}, ctx)
    msg = str(info.value)
    assert msg.startswith("Invalid arguments for tool 'needs_int': count: Input should be a valid")
    assert "integer" in msg and "inner.k:" in msg and "; " in msg
    assert "errors.pydantic.dev" not in msg


async def test_run_tool_retries_and_timeout(ctx):
    attempts = []

    @tool(retries=2)
    async def flaky() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise RuntimeError("no")
        return "ok"

    assert await run_tool(flaky, {}, ctx) == "ok" and len(attempts) == 3

    @tool(timeout=0.05)
    async def slow() -> None:
        await asyncio.sleep(5)

    with pytest.raises(TimeoutError):
        await run_tool(slow, {}, ctx)


async def test_run_tool_never_retries_cancel_or_invalid(ctx):
    calls = []

    @tool(retries=3)
    async def cancel() -> None:
        calls.append(1)
        raise RunCancelled("stop")

    with pytest.raises(RunCancelled):
        await run_tool(cancel, {}, ctx)
    assert calls == [1]

    @tool(retries=3)
    async def typed(n: int) -> int:
        calls.append(2)
        return n

    with pytest.raises(InvalidToolArguments):
        await run_tool(typed, {"n": "x"}, ctx)


async def test_run_tool_gives_each_attempt_fresh_args(ctx):
    seen = []

    async def invoke(args, c):
        seen.append(dict(args))
        args["mutated"] = True
        if len(seen) < 2:
            raise ValueError("again")
        return "done"

    t = Tool("t", "", {"type": "object"}, invoke, retries=1)
    await run_tool(t, {"a": 1}, ctx)
    assert seen == [{"a": 1}, {"a": 1}]


async def test_policies_first_is_outermost(ctx):
    order = []

    def make(name):
        async def policy(nxt, args, c):
            order.append(f"{name}>")
            out = await nxt(args, c)
            order.append(f"<{name}")
            return out

        return policy

    async def invoke(args, c):
        order.append("call")
        return 1

    assert await apply_tool_policies(invoke, (make("a"), make("b")), {}, ctx) == 1
    assert order == ["a>", "b>", "call", "<b", "<a"]


def test_default_renderer():
    class Color(Enum):
        RED = "red"

    class M(BaseModel):
        a: int

    @dataclass
    class D:
        p: Path

    assert default_result_renderer("s") == "s"
    assert default_result_renderer(3) == "3"
    assert json.loads(default_result_renderer({"m": M(a=1), 2: Color.RED})) == {
        "m": {"a": 1},
        "2": "red",
    }
    assert default_result_renderer(D(Path("/x"))) == '{"p": "/x"}'
    assert default_result_renderer(date(2024, 1, 2)) == '"2024-01-02"'
    assert default_result_renderer(b"\xff") == '"ff"'
    assert default_result_renderer({1, 2}) in ("[1, 2]", "[2, 1]")
    assert default_result_renderer("ü") == "ü"


async def test_render_tool_result(ctx):
    async def renderer(result, c):
        return f"<{result}>"

    t = Tool("t", "", {}, None, result_renderer=renderer)
    assert await render_tool_result(t, 1, ctx) == "<1>"
    plain = Tool("p", "", {}, None)
    assert await render_tool_result(plain, 1, ctx, default=lambda r, c: ["x"]) == '["x"]'
    assert await render_tool_result(plain, {"a": 1}, ctx) == '{"a": 1}'


def test_truncate_tool_output():
    text = "a" * 5000 + "b" * 5000
    out = truncate_tool_output(text, 1000)
    assert "\n\n[... tool output truncated: kept 1,000 of 10,000 chars ...]\n\n" in out
    assert out.startswith("a" * 800) and out.endswith("b" * 200)
    assert truncate_tool_output("short", 10) == "short"
    assert truncate_tool_output("abc", 1).startswith("a\n\n[")


def test_clip_text():
    assert clip_text("abc", 5) == ("abc", False)
    head, clipped = clip_text("abcdefghij", 4, hint="use paging")
    assert clipped and head == "abcd\n[... truncated: showing 4 of 10 chars. use paging]"
    tail, _ = clip_text("abcdefghij", 4, keep_tail=True)
    assert tail.startswith("ab\n[... truncated") and tail.endswith("]\nij")
    assert clip_text("abc", 0) == ("[... truncated: showing 0 of 3 chars.]", True)
