"""A small MCP server on stdio, built on the SDK's low-level ``Server`` (a standalone script).

Run: ``python tests/support/mcp_stdio_server.py [--page-size N] [--fail-start]
[--instructions TEXT]``.

Tools: ``echo`` (text), ``add`` (structured + text), ``image`` (an image and a caption),
``mixed`` (every content kind), ``fail`` (an ``isError`` result), ``explode`` (a JSON-RPC
error), ``env`` (the value of an environment variable), ``cwd`` (the working directory),
``calls`` (how many ``tools/call`` requests this process served), ``pid``, ``crash`` (the
process exits mid-call), ``grow`` (adds a tool ``extra_N`` and sends
``notifications/tools/list_changed``), ``read_text`` (a file's text, by ``path``), and ``noop_00`` … ``noop_09`` (to page through).
``tools/list`` pages by ``--page-size``; ``--starts-file`` appends the process id to a file at
start-up (to count process starts).
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
from pathlib import Path
from typing import Any

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
    )
).decode()

_OBJECT = {"type": "object", "properties": {}}


def _tools(types: Any) -> list[Any]:
    tools = [
        types.Tool(
            name="echo",
            description="Echo the given text back.",
            input_schema={
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        ),
        types.Tool(
            name="add",
            description="Add two integers; returns a structured sum.",
            input_schema={
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
            output_schema={
                "type": "object",
                "properties": {"sum": {"type": "integer"}},
                "required": ["sum"],
            },
        ),
        types.Tool(name="image", description="Return a tiny PNG image.", input_schema=_OBJECT),
        types.Tool(
            name="mixed", description="Every content kind.", input_schema={"type": "object"}
        ),
        types.Tool(name="fail", description="Report a tool-level error.", input_schema=_OBJECT),
        types.Tool(name="explode", description="Raise inside the server.", input_schema=_OBJECT),
        types.Tool(
            name="env",
            description="Read an environment variable.",
            input_schema={"type": "object", "properties": {"name": {"type": "string"}}},
        ),
        types.Tool(name="cwd", description="The working directory.", input_schema=_OBJECT),
        types.Tool(name="calls", description="Calls served so far.", input_schema=_OBJECT),
        types.Tool(name="pid", description="The server's process id.", input_schema=_OBJECT),
        types.Tool(name="crash", description="Exit the server process.", input_schema=_OBJECT),
        types.Tool(name="grow", description="Add a tool.", input_schema=_OBJECT),
        types.Tool(
            name="read_text",
            description="Read a file, as a filesystem server would.",
            input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
        ),
    ]
    tools += [
        types.Tool(name=f"noop_{i:02d}", description=f"Does nothing ({i}).", input_schema=_OBJECT)
        for i in range(10)
    ]
    return tools


def build(page_size: int, instructions: str | None) -> Any:
    import mcp.types as types
    from mcp.server.lowlevel import Server

    def _text(text: str) -> Any:
        return types.TextContent(type="text", text=text)

    tools = _tools(types)
    served = 0

    async def list_tools(ctx: Any, params: Any) -> Any:
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + page_size
        return types.ListToolsResult(
            tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None
        )

    async def call_tool(ctx: Any, params: Any) -> Any:
        nonlocal served
        served += 1
        args = params.arguments or {}
        name = params.name
        if name == "echo":
            return types.CallToolResult(content=[_text(str(args.get("text", "")))])
        if name == "add":
            total = int(args["a"]) + int(args["b"])
            return types.CallToolResult(
                content=[_text(f"sum={total}")], structured_content={"sum": total}
            )
        if name == "image":
            return types.CallToolResult(
                content=[
                    _text("a red dot"),
                    types.ImageContent(type="image", data=PNG, mime_type="image/png"),
                ]
            )
        if name == "mixed":
            return types.CallToolResult(
                content=[
                    _text("text block"),
                    types.AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
                    types.ResourceLink(type="resource_link", name="doc", uri="file:///doc.txt"),
                    types.EmbeddedResource(
                        type="resource",
                        resource=types.TextResourceContents(uri="file:///a.txt", text="inline"),
                    ),
                    types.EmbeddedResource(
                        type="resource",
                        resource=types.BlobResourceContents(
                            uri="file:///b.bin", blob="AAAAAA==", mime_type="application/zip"
                        ),
                    ),
                ]
            )
        if name == "fail":
            return types.CallToolResult(content=[_text("the widget is jammed")], is_error=True)
        if name == "explode":
            raise RuntimeError("kaboom")
        if name == "env":
            return types.CallToolResult(content=[_text(os.environ.get(str(args["name"]), ""))])
        if name == "cwd":
            return types.CallToolResult(content=[_text(os.getcwd())])
        if name == "calls":
            return types.CallToolResult(content=[_text(str(served))])
        if name == "pid":
            return types.CallToolResult(content=[_text(str(os.getpid()))])
        if name == "crash":
            sys.stderr.write("crashing on purpose\n")
            sys.stderr.flush()
            os._exit(1)
        if name == "grow":
            extra = f"extra_{sum(t.name.startswith('extra_') for t in tools) + 1}"
            tools.append(types.Tool(name=extra, description="Grown.", input_schema=_OBJECT))
            await ctx.session.send_tool_list_changed()
            return types.CallToolResult(content=[_text(f"added {extra}")])
        if name == "read_text":
            text = Path(str(args["path"])).read_text(encoding="utf-8")  # noqa: ASYNC240
            return types.CallToolResult(content=[_text(text)])
        if name.startswith(("noop_", "extra_")):
            return types.CallToolResult(content=[_text(f"{name} done")])
        raise ValueError(f"Unknown tool: {name}")

    return Server(
        "lovia-test-stdio",
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--page-size", type=int, default=100)
    parser.add_argument("--fail-start", action="store_true")
    parser.add_argument("--instructions", default=None)
    parser.add_argument("--starts-file", default=None)
    opts = parser.parse_args()
    if opts.starts_file:
        with open(opts.starts_file, "a") as fh:
            fh.write(f"{os.getpid()}\n")
    if opts.fail_start:  # before the (slow) SDK import
        sys.stderr.write("fatal: missing API token (set TEST_TOKEN)\n")
        sys.exit(3)
    import anyio
    from mcp.server.stdio import stdio_server

    server = build(opts.page_size, opts.instructions)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
