"""A file-reading and -writing MCP server on stdio that hides its paths where a naive
argument check would not look (a standalone script).

Run: ``python tests/support/mcp_file_server.py --log CALLS.jsonl [--link URI]``.

Every ``tools/call`` is appended to the log as one JSON line before it is served, so a test
can tell whether lovia contacted the server at all. Tools:

- ``read``: the text of ``target`` or of ``options.path`` (nested);
- ``bundle``: the texts of ``files[].name`` (an array of objects);
- ``lookup``: the text behind ``query`` when it is a ``file://`` URL (a path under a name no
  schema calls a path);
- ``save``: writes ``text`` to ``options.out`` (``options`` is a ``$ref`` to ``$defs``, ``out``
  has ``format: path``);
- ``peek``: like ``read`` but declared read-only (``readOnlyHint``);
- ``link``: a result with a ``resource_link`` and an embedded resource naming ``--link``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse


def _read(path: str) -> str:
    if path.startswith("file:"):
        path = unquote(urlparse(path).path)
    return Path(path).expanduser().read_text(encoding="utf-8")


def _tools(types: Any) -> list[Any]:
    string = {"type": "string"}
    reader = {
        "type": "object",
        "properties": {
            "target": string,
            "options": {"type": "object", "properties": {"path": string, "encoding": string}},
        },
    }
    return [
        types.Tool(name="read", description="Read a file.", input_schema=reader),
        types.Tool(
            name="peek",
            description="Read a file (read-only).",
            input_schema=reader,
            annotations=types.ToolAnnotations(readOnlyHint=True),
        ),
        types.Tool(
            name="bundle",
            description="Read several files.",
            input_schema={
                "type": "object",
                "properties": {
                    "files": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"name": string}},
                    }
                },
            },
        ),
        types.Tool(
            name="lookup",
            description="Look something up.",
            input_schema={"type": "object", "properties": {"query": string}},
        ),
        types.Tool(
            name="save",
            description="Write a file.",
            input_schema={
                "type": "object",
                "$defs": {
                    "Where": {
                        "type": "object",
                        "properties": {"out": {"type": "string", "format": "path"}},
                    }
                },
                "properties": {"options": {"$ref": "#/$defs/Where"}, "text": string},
            },
        ),
        types.Tool(
            name="link",
            description="Link a resource.",
            input_schema={"type": "object", "properties": {}},
        ),
    ]


def build(log: Path, link: str | None) -> Any:
    import mcp.types as types
    from mcp.server.lowlevel import Server

    def _text(text: str) -> Any:
        return types.TextContent(type="text", text=text)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=_tools(types))

    async def call_tool(ctx: Any, params: Any) -> Any:
        args = params.arguments or {}
        with log.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"name": params.name, "arguments": args}) + "\n")
        name = params.name
        if name in ("read", "peek"):
            path = args.get("target") or (args.get("options") or {}).get("path")
            return types.CallToolResult(content=[_text(_read(str(path)))])
        if name == "bundle":
            texts = [_read(str(f["name"])) for f in args.get("files") or []]
            return types.CallToolResult(content=[_text("\n".join(texts))])
        if name == "lookup":
            query = str(args.get("query", ""))
            found = _read(query) if query.startswith("file:") else f"nothing for {query}"
            return types.CallToolResult(content=[_text(found)])
        if name == "save":
            out = Path(str(args["options"]["out"])).expanduser()  # noqa: ASYNC240
            out.write_text(str(args.get("text", "")), encoding="utf-8")
            return types.CallToolResult(content=[_text(f"saved {out}")])
        if name == "link" and link:
            return types.CallToolResult(
                content=[
                    types.ResourceLink(type="resource_link", name="secret", uri=link),
                    types.EmbeddedResource(
                        type="resource",
                        resource=types.BlobResourceContents(
                            uri=link, blob="AAAA", mime_type="application/octet-stream"
                        ),
                    ),
                ]
            )
        raise ValueError(f"Unknown tool: {name}")

    return Server("lovia-test-files", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--link", default=None)
    opts = parser.parse_args()
    import anyio
    from mcp.server.stdio import stdio_server

    server = build(Path(opts.log), opts.link)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
