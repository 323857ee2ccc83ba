"""MCP: tools from Model Context Protocol servers, as a plugin.

A server is described by a frozen config (:class:`MCPServerStdio`,
:class:`MCPServerStreamableHTTP`); opening it yields a live :class:`MCPConnection` that owns
the session and turns the server's tools into ordinary :class:`~lovia.tools.Tool` objects.
The :class:`MCP` plugin opens its servers in ``setup`` — once per run for configs, so every
run owns its connections — and closes them when the run ends::

    agent = Agent(..., plugins=[MCP(MCPServerStdio(command="uvx", args=["mcp-server-git"]))])

    # or keep one connection alive across runs:
    async with MCPServerStdio(command="...").session() as conn:
        agent = Agent(..., plugins=[MCP(conn)])

The official ``mcp`` SDK (``pip install 'mcp>=2.3,<3'``) is imported only when a transport or
a session is built: importing this module never imports it.

Each live session runs in a small task of its own that enters and leaves the SDK's transport
and session contexts. Tool calls talk to it through the session's streams from whatever task
they run in, so per-tool timeouts, parallel tool calls, reconnects and a teardown from another
task never trip anyio's "cancel scope in a different task" rule.

Long because it is not split yet: content rendering, connection, transports, configs, tool
factories and the plugin still share one file.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import difflib
import hashlib
import inspect
import json
import logging
import os
import re
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lovia.exceptions import InvalidToolArguments, MCPError, ToolError, UserError
from lovia.parts import ContentPart, ImagePart, TextPart
from lovia.plugins.base import PluginInstance
from lovia.plugins.mcp_paths import PathArguments, check_paths, guarded_approval
from lovia.tools.base import (
    ApprovalPredicate,
    Tool,
    ToolResultRenderer,
    render_tool_result,
    run_tool,
    truncate_tool_output,
)
from lovia.tools.presentation import ToolLocation, short
from lovia.types import JsonSchema

if TYPE_CHECKING:
    from lovia.run_context import RunContext

logger = logging.getLogger("lovia.plugins.mcp")

_INSTALL_HINT = (
    "Install the MCP SDK into lovia's environment: pip install 'mcp>=2.3,<3' (or, in a lovia "
    "clone, pip install -e '.[mcp]')"
)
_TOOL_NAME_OK = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_CLOSE_TIMEOUT = 10.0
_STDERR_LINES = 30

# --------------------------------------------------------------------------- SDK access


def _import_error(exc: ImportError) -> UserError:
    return UserError(
        f"MCP support needs the optional 'mcp' package ({exc}).",
        hint=_INSTALL_HINT,
    )


def _sdk_session() -> tuple[Any, Any]:
    """``(ClientSession, Implementation)`` from the SDK, imported on first use."""
    try:
        from mcp.client.session import ClientSession
        from mcp.types import Implementation
    except ImportError as exc:
        raise _import_error(exc) from exc
    return ClientSession, Implementation


def _attr(obj: Any, *names: str) -> Any:
    """The first of ``names`` set on ``obj`` (a pydantic model, a plain object or a dict).

    The SDK spells fields in snake_case since 2.0 (``mime_type``) and camelCase before
    (``mimeType``); both are accepted so hand-built blocks and older sessions work too.
    """
    for name in names:
        if isinstance(obj, dict):
            if name in obj:
                return obj[name]
            continue
        try:
            value = getattr(obj, name)
        except AttributeError:
            continue
        return value
    return None


def _str_attr(obj: Any, *names: str) -> str | None:
    for name in names:
        value = _attr(obj, name)
        if isinstance(value, str):
            return value
    return None


# --------------------------------------------------------------------------- results


def _b64_bytes(data: Any) -> int:
    if not isinstance(data, str) or not data:
        return 0
    padding = data[-2:].count("=")
    return max(0, len(data) * 3 // 4 - padding)


def _human_size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    size = float(n)
    for unit in ("KB", "MB", "GB"):
        size /= 1024
        if size < 1024 or unit == "GB":
            return f"{size:.1f} {unit}"
    return f"{n} B"  # pragma: no cover


def _render_block(block: Any) -> str:
    kind = _attr(block, "type")
    if kind == "text":
        text = _attr(block, "text")
        return text if isinstance(text, str) else ""
    if kind in ("image", "audio"):
        mime = _str_attr(block, "mimeType", "mime_type") or "application/octet-stream"
        return f"[{kind}: {mime}, {_human_size(_b64_bytes(_attr(block, 'data')))}]"
    if kind == "resource_link":
        return f"[resource link: {_attr(block, 'uri') or ''}]"
    if kind == "resource":
        resource = _attr(block, "resource")
        text = _attr(resource, "text")
        if isinstance(text, str):
            return text
        uri = _attr(resource, "uri") or ""
        mime = _str_attr(resource, "mimeType", "mime_type") or "application/octet-stream"
        size = _human_size(_b64_bytes(_attr(resource, "blob")))
        return f"[resource: {uri}, {mime}, {size}]"
    dump = getattr(block, "model_dump", None)
    if callable(dump):
        try:
            data = dump()
            if isinstance(data, dict):
                data = {k: v for k, v in data.items() if k not in ("data", "blob")}
            return json.dumps(data, ensure_ascii=False, default=str)
        except Exception:
            pass
    return str(block)


def render_mcp_content(content: list[Any], *, is_error: bool = False) -> str:
    """MCP content blocks as the text the model reads: never raw base64."""
    text = "\n".join(_render_block(block) for block in content)
    if is_error:
        return f"[tool error] {text}" if text else "[tool error]"
    return text


def _image_part(mime: str | None, data: Any) -> ImagePart | None:
    if not mime or not mime.startswith("image/") or not isinstance(data, str) or not data:
        return None
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return ImagePart(data=data, mime_type=mime)


@dataclass
class MCPToolResult:
    """What an MCP tool's ``invoke`` returns: the server's content blocks and error flag.

    ``str(result)`` is :func:`render_mcp_content`. A ``result_renderer`` set on the server
    receives this object as is. ``structured_content`` is the server's structured result,
    rendered as JSON when the server sent no content blocks.
    """

    content: list[Any] = field(default_factory=list)
    is_error: bool = False
    structured_content: Any = None
    images_as_parts: bool = field(default=False, kw_only=True, repr=False, compare=False)
    """Set on results of tools that use the default renderer: images reach the model as
    image parts (a text placeholder stays in the transcript text)."""

    def __str__(self) -> str:
        if not self.content and self.structured_content is not None:
            try:
                text = json.dumps(self.structured_content, ensure_ascii=False, default=str)
            except (TypeError, ValueError):
                text = str(self.structured_content)
            return f"[tool error] {text}" if self.is_error else text
        return render_mcp_content(self.content, is_error=self.is_error)

    def parts(self) -> list[ContentPart]:
        """The content as lovia parts: images as :class:`ImagePart`, the rest as text."""
        out: list[ContentPart] = []
        for block in self.content:
            kind = _attr(block, "type")
            image = None
            if kind == "image":
                image = _image_part(_str_attr(block, "mimeType", "mime_type"), _attr(block, "data"))
            elif kind == "resource":
                resource = _attr(block, "resource")
                image = _image_part(
                    _str_attr(resource, "mimeType", "mime_type"), _attr(resource, "blob")
                )
            if image is not None:
                out.append(image)
            else:
                out.append(TextPart(_render_block(block)))
        if self.is_error:
            if out and isinstance(out[0], TextPart) and out[0].text:
                out[0] = TextPart(f"[tool error] {out[0].text}")
            else:
                out.insert(0, TextPart("[tool error]"))
        return out

    def __lovia_parts__(self) -> list[ContentPart] | None:
        # The tool loop sends part lists to the model as multimodal tool results.
        if not self.images_as_parts:
            return None
        parts = self.parts()
        if not any(isinstance(p, ImagePart) for p in parts):
            return None
        return parts


def _default_renderer(result: Any, ctx: RunContext[Any]) -> str:
    return result if isinstance(result, str) else str(result)


def normalize_schema(schema: Any) -> JsonSchema:
    """A tool input schema every provider accepts: an object schema with ``properties``."""
    if not isinstance(schema, dict) or not schema:
        return {"type": "object", "properties": {}}
    out = dict(schema)
    if "type" not in out:
        out["type"] = "object"
    if out.get("type") == "object" and not isinstance(out.get("properties"), dict):
        out["properties"] = {}
    return out


def _display_name(prefix: str | None, raw: str) -> str:
    name = f"{prefix}__{raw}" if prefix else raw
    if _TOOL_NAME_OK.match(name):
        return name
    # Model APIs accept [A-Za-z0-9_-]{1,64}; keep the name recognisable and unique.
    clean = re.sub(r"[^A-Za-z0-9_-]", "_", name) or "tool"
    if len(clean) > 64:
        clean = f"{clean[:57]}_{hashlib.sha1(name.encode()).hexdigest()[:6]}"
    return clean


# --------------------------------------------------------------------------- errors


def _is_transport_error(exc: BaseException) -> bool:
    """A dead or closed transport: worth one reconnect. Never cancellation or timeouts."""
    if isinstance(exc, (asyncio.CancelledError, TimeoutError)):
        return False
    if isinstance(exc, (ConnectionError, BrokenPipeError, EOFError)):
        return True
    try:
        import anyio
    except ImportError:  # pragma: no cover - anyio ships with the SDK
        return False
    if isinstance(exc, (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream)):
        return True
    # The SDK answers requests on a transport that went away with JSON-RPC -32000.
    code = getattr(exc, "code", None)
    return type(exc).__module__.startswith("mcp.") and code == -32000


def _is_sdk_error(exc: BaseException) -> bool:
    return type(exc).__module__.startswith(("mcp.", "httpx", "anyio")) or _is_transport_error(exc)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        if len(inner) == 1:
            return _describe(inner[0])
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# --------------------------------------------------------------------------- connection


@dataclass
class MCPConnection:
    """A live MCP session plus the lovia tools bound to it.

    Made by :meth:`MCPServer.open` / :meth:`MCPServer.session`. It also satisfies
    :class:`MCPServerLike` (``open()`` returns itself), so a connection kept alive by its
    owner can be handed to :class:`MCP` and is left open at run end.
    """

    transport: Callable[[], AbstractAsyncContextManager[Any]]
    prefix: str | None = None
    include_tools: set[str] | None = None
    exclude_tools: set[str] | None = None
    needs_approval: bool | ApprovalPredicate = False
    approved_tools: frozenset[str] = frozenset()
    """Raw tool names that run without asking even when ``needs_approval`` is set."""
    judge_paths: bool = True
    """Judge the paths a tool's arguments name by the run's workspace (``mcp_paths``)."""
    retries: int | None = None
    timeout: float | None = None
    max_output_chars: int | None = None
    result_renderer: ToolResultRenderer | None = None
    auto_reconnect: bool = True
    close_after_run: bool = False
    defer: bool = False
    include_instructions: bool = False
    connect_timeout: float | None = 30.0
    label: str | None = None
    on_lost: Callable[[BaseException], None] | None = None
    """Called when a call finds the transport dead and ``auto_reconnect`` is off (a host that
    restarts servers itself, e.g. a pool)."""
    on_tools_changed: Callable[[list[Tool]], None] | None = None
    """Called with the new tool list after the server sent ``notifications/tools/list_changed``
    and the list was fetched again."""
    _session: Any = field(default=None, init=False, repr=False)
    _exit_stack: AsyncExitStack | None = field(default=None, init=False, repr=False)
    _tools: list[Tool] | None = field(default=None, init=False, repr=False)
    _lock: asyncio.Lock | None = field(default=None, init=False, repr=False)

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> MCPConnection:
        return self

    async def __aenter__(self) -> MCPConnection:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def is_open(self) -> bool:
        return self._session is not None

    @property
    def server_instructions(self) -> str | None:
        """The instructions the server sent when the session started, if any."""
        value = _attr(self._session, "instructions") if self._session is not None else None
        return value if isinstance(value, str) and value.strip() else None

    @property
    def _name(self) -> str:
        return self.label or self.prefix or "MCP server"

    async def connect(self) -> None:
        """(Re)start the session and list the tools; the connection object and the tools bound
        to it stay the same across restarts."""
        async with self._reconnect_lock():  # calls meanwhile wait for the new session
            await self.close()
            await self._open_session()
            await self._load_tools()

    async def ping(self, within: float = 5.0) -> bool:
        """True when the server answers a ``ping`` within ``within`` seconds."""
        session = self._session
        if session is None:
            return False
        try:
            await asyncio.wait_for(session.send_ping(), within)
        except Exception:
            return False
        return True

    async def _on_message(self, message: Any) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method == "notifications/tools/list_changed":
            # Not here: the handler runs inside the session's receive loop.
            task = asyncio.get_running_loop().create_task(self._tools_changed())
            _BACKGROUND.add(task)
            task.add_done_callback(_BACKGROUND.discard)

    async def _tools_changed(self) -> None:
        try:
            await self._load_tools()
        except Exception:
            logger.info("mcp.tools_refresh_failed: %s", self._name, exc_info=True)
            return
        if self.on_tools_changed is not None and self._tools is not None:
            self.on_tools_changed(list(self._tools))

    async def close(self) -> None:
        """Close the session (idempotent). Tools of a closed connection fail when called."""
        stack, self._exit_stack = self._exit_stack, None
        self._session = None
        if stack is not None:
            await stack.aclose()

    async def _open_session(self) -> None:
        """Start the transport and the MCP session; the one place a session is created."""
        client_session, implementation = _sdk_session()
        from lovia._version import __version__

        factory = self.transport
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Any] = loop.create_future()
        stop = asyncio.Event()

        async def own() -> None:
            # Enters and leaves the SDK contexts in this one task (anyio requires it).
            try:
                async with AsyncExitStack() as stack:
                    streams = await stack.enter_async_context(factory())
                    session = await stack.enter_async_context(
                        client_session(
                            streams[0],
                            streams[1],
                            client_info=implementation(name="lovia", version=__version__),
                            message_handler=self._on_message,
                        )
                    )
                    await session.initialize()
                    ready.set_result(session)
                    await stop.wait()
            except asyncio.CancelledError:
                if not ready.done():
                    ready.cancel()
                raise
            except BaseException as exc:
                if not ready.done():
                    ready.set_exception(exc)
                else:
                    logger.debug("mcp.session_ended: %s", self._name, exc_info=True)

        task = asyncio.create_task(own(), name=f"lovia-mcp:{self._name}")
        try:
            session = await asyncio.wait_for(asyncio.shield(ready), self.connect_timeout)
        except BaseException as exc:
            stop.set()
            task.cancel()
            await _settle(task)
            if isinstance(exc, asyncio.CancelledError):
                if _being_cancelled():
                    raise
                exc = ConnectionError("the session task was cancelled")
            elif not isinstance(exc, Exception):
                raise
            raise await self._connect_error(exc) from exc
        stack = AsyncExitStack()
        stack.push_async_callback(_stop_owner, stop, task)
        self._exit_stack = stack
        self._session = session

    async def _connect_error(self, exc: BaseException) -> MCPError:
        if isinstance(exc, UserError):
            return MCPError(exc.message, hint=exc.hint)
        stderr = getattr(self.transport, "stderr_tail", None)
        tail = await stderr() if callable(stderr) else ""
        if isinstance(exc, TimeoutError) and self.connect_timeout is not None:
            message = (
                f"MCP server {self._name!r} did not complete the MCP handshake within "
                f"{self.connect_timeout:g}s."
            )
            hint = "Check that the command starts an MCP server (speaking MCP on stdio or HTTP)."
        else:
            message = f"Could not connect to MCP server {self._name!r}: {_describe(exc)}"
            hint = getattr(self.transport, "failure_hint", None) or (
                "Check the server's command or URL, and that it starts and speaks MCP."
            )
        if tail:
            hint += f"\nThe server's stderr ended with:\n{tail}"
        return MCPError(message, hint=hint)

    # ------------------------------------------------------------------ tools

    def tools(self) -> list[Tool]:
        """The server's tools as lovia tools (a copy of the cached list)."""
        if self._tools is None:
            raise MCPError(
                f"The tools of MCP server {self._name!r} are not loaded.",
                hint="Open the connection first (await server.open() or server.session()).",
            )
        return list(self._tools)

    async def refresh_tools(self) -> list[Tool]:
        """List the server's tools again (after a ``tools/list_changed``, say)."""
        await self._load_tools()
        return self.tools()

    def _keep(self, raw: str) -> bool:
        if self.include_tools is not None and raw not in self.include_tools:
            return False
        return not (self.exclude_tools is not None and raw in self.exclude_tools)

    async def _list_page(self, session: Any, cursor: str | None) -> Any:
        if cursor is None:
            return await session.list_tools()
        try:
            takes_params = "params" in inspect.signature(session.list_tools).parameters
        except (TypeError, ValueError):
            takes_params = False
        if takes_params:
            try:
                from mcp.types import PaginatedRequestParams
            except ImportError as exc:
                raise _import_error(exc) from exc
            return await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
        return await session.list_tools(cursor=cursor)

    async def _list_all(self) -> list[Any]:
        session = self._require_session()
        listed: list[Any] = []
        seen: set[str] = set()
        cursor: str | None = None
        while True:
            try:
                page = await self._list_page(session, cursor)
            except MCPError:
                raise
            except Exception as exc:
                if not _is_sdk_error(exc):
                    raise
                raise MCPError(
                    f"Listing the tools of MCP server {self._name!r} failed: {_describe(exc)}",
                    hint="The server started but could not list its tools; check its logs.",
                ) from exc
            listed.extend(_attr(page, "tools") or [])
            cursor = _str_attr(page, "nextCursor", "next_cursor")
            if not cursor or cursor in seen:
                return listed
            seen.add(cursor)

    async def _load_tools(self) -> None:
        renderer = self.result_renderer or _default_renderer
        images_as_parts = self.result_renderer is None
        tools: list[Tool] = []
        for entry in await self._list_all():
            raw = _attr(entry, "name")
            if not isinstance(raw, str) or not self._keep(raw):
                continue
            description = _attr(entry, "description")
            schema = normalize_schema(_attr(entry, "inputSchema", "input_schema"))
            annotations = _attr(entry, "annotations")  # the server's hints: title, read-only
            read_only = _attr(annotations, "readOnlyHint", "read_only_hint") is True
            paths = PathArguments(schema, read_only=read_only) if self.judge_paths else None
            base = False if raw in self.approved_tools else self.needs_approval
            name = _display_name(self.prefix, raw)
            tools.append(
                Tool(
                    name=name,
                    description=description if isinstance(description, str) else "",
                    parameters=schema,
                    invoke=self._make_invoke(raw, images_as_parts=images_as_parts, paths=paths),
                    needs_approval=guarded_approval(base, paths) if paths is not None else base,
                    retries=self.retries,
                    timeout=self.timeout,
                    max_output_chars=self.max_output_chars,
                    result_renderer=renderer,
                    kind="read" if read_only else None,
                    title=_str_attr(entry, "title") or _str_attr(annotations, "title"),
                    source=self._name,
                    locations=paths.locations if paths is not None else None,
                )
            )
        self._tools = tools

    def _make_invoke(
        self,
        raw: str,
        *,
        images_as_parts: bool,
        paths: PathArguments | None = None,
    ) -> Callable[[dict[str, Any], RunContext[Any]], Awaitable[MCPToolResult]]:
        async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> MCPToolResult:
            if paths is not None:
                check_paths(raw, args, ctx, paths)
            result = await self._call(raw, args)
            result.images_as_parts = images_as_parts
            return result

        return invoke

    # ------------------------------------------------------------------ calls

    def _require_session(self, tool_name: str | None = None) -> Any:
        if self._session is None:
            raise MCPError(
                "MCP connection is closed.",
                hint="Let the MCP plugin open the server per run, or keep a connection alive "
                "with 'async with server.session() as conn'.",
                tool_name=tool_name,
            )
        return self._session

    def _reconnect_lock(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    async def _reconnect(self, failed: Any) -> None:
        async with self._reconnect_lock():
            if self._session is not None and self._session is not failed:
                return  # another call reconnected already
            old, self._exit_stack = self._exit_stack, None
            self._session = None
            if old is not None:
                try:
                    await old.aclose()
                except Exception:
                    logger.debug("mcp.close_failed: %s", self._name, exc_info=True)
            await self._open_session()
            # Best effort: the fresh session learns the tools again (output schemas included).
            with contextlib.suppress(Exception):
                await self._list_all()

    async def _call_once(self, session: Any, name: str, args: dict[str, Any]) -> MCPToolResult:
        result = await session.call_tool(name, args)
        content = _attr(result, "content")
        is_error = _attr(result, "isError", "is_error")
        return MCPToolResult(
            content=list(content) if isinstance(content, (list, tuple)) else [],
            is_error=is_error if isinstance(is_error, bool) else False,
            structured_content=_attr(result, "structuredContent", "structured_content"),
        )

    async def _call(self, name: str, args: dict[str, Any]) -> MCPToolResult:
        """Call the raw tool ``name``; one reconnect and retry on a dead transport."""
        lock = self._lock
        if lock is not None and lock.locked():
            async with lock:
                pass  # a reconnect is under way: wait for the new session
        session = self._require_session(name)
        try:
            return await self._call_once(session, name, args)
        except MCPError:
            raise
        except Exception as exc:
            if self.on_lost is not None and not self.auto_reconnect and _is_transport_error(exc):
                self.on_lost(exc)
                raise MCPError(
                    f"MCP tool {name!r} failed: the server {self._name!r} stopped during the "
                    f"call ({_describe(exc)})",
                    hint="The server is being restarted; the next call can be tried again.",
                    tool_name=name,
                ) from exc
            if not (self.auto_reconnect and _is_transport_error(exc)):
                raise MCPError(
                    f"MCP tool {name!r} failed: {exc}",
                    hint=f"The MCP server {self._name!r} reported an error for this call.",
                    tool_name=name,
                ) from exc
            logger.info("mcp.reconnect: %s after %s", self._name, _describe(exc))
            try:
                await self._reconnect(session)
            except Exception as rexc:
                raise MCPError(
                    f"MCP tool {name!r} failed: {exc}; reconnect also failed: {rexc}",
                    hint=f"The connection to MCP server {self._name!r} was lost and could not "
                    "be restored.",
                    tool_name=name,
                ) from rexc
            try:
                return await self._call_once(self._require_session(name), name, args)
            except Exception as exc2:
                raise MCPError(
                    f"MCP tool {name!r} failed after reconnect: {exc2}",
                    hint=f"The MCP server {self._name!r} failed again on a fresh connection.",
                    tool_name=name,
                ) from exc2


_BACKGROUND: set[asyncio.Task[None]] = set()


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def _settle(task: asyncio.Task[Any]) -> None:
    """Wait for ``task`` to finish, ignoring its outcome (the caller's cancellation is not)."""
    try:
        await asyncio.wait_for(asyncio.shield(task), _CLOSE_TIMEOUT)
    except asyncio.CancelledError:
        if _being_cancelled():
            raise
    except BaseException:
        pass
    if not task.done():
        task.cancel()


async def _stop_owner(stop: asyncio.Event, task: asyncio.Task[Any]) -> None:
    stop.set()
    if task.done():
        return
    try:
        await asyncio.wait_for(asyncio.shield(task), _CLOSE_TIMEOUT)
    except TimeoutError:
        logger.warning("mcp.close_timeout: the session task did not stop; cancelling it")
        task.cancel()
    except asyncio.CancelledError:
        if _being_cancelled():
            raise
    except Exception:
        logger.debug("mcp.close_failed", exc_info=True)


# --------------------------------------------------------------------------- transports


class _StdioTransport:
    """Spawns the server per connection; keeps the tail of its stderr for error messages."""

    failure_hint = "Check that the command is installed, on PATH, and starts an MCP stdio server."

    def __init__(self, params: Any, stdio_client: Any, label: str, log: Path | None = None) -> None:
        self.params = params
        self._stdio_client = stdio_client
        self._label = label
        self._log = log
        self._stderr: deque[str] = deque(maxlen=_STDERR_LINES)
        self._reader: threading.Thread | None = None

    def __call__(self) -> AbstractAsyncContextManager[Any]:
        return self._connect()

    async def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr (waits briefly for them to arrive)."""
        reader = self._reader
        if reader is not None and reader.is_alive():
            await asyncio.to_thread(reader.join, 1.0)
        return "\n".join(self._stderr).strip()

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[Any]:
        self._stderr.clear()
        read_fd, write_fd = os.pipe()
        errlog = os.fdopen(write_fd, "w")
        reader = threading.Thread(
            target=_pump_stderr,
            args=(read_fd, self._stderr, self._label, self._log),
            name=f"lovia-mcp-stderr:{self._label}",
            daemon=True,
        )
        reader.start()
        self._reader = reader
        try:
            async with self._stdio_client(self.params, errlog=errlog) as streams:
                errlog.close()  # the child holds its own copy now
                yield streams
        finally:
            if not errlog.closed:
                errlog.close()


def _pump_stderr(fd: int, sink: deque[str], label: str, log: Path | None = None) -> None:
    copy = None
    if log is not None:
        try:
            log.parent.mkdir(parents=True, exist_ok=True)
            copy = log.open("a", encoding="utf-8")
        except OSError:
            logger.debug("mcp.stderr_log_failed: %s", log, exc_info=True)
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as stream:
        for line in stream:
            line = line.rstrip("\n")
            sink.append(line)
            logger.debug("mcp[%s] stderr: %s", label, line)
            if copy is not None:
                copy.write(line + "\n")
                copy.flush()
    if copy is not None:
        copy.close()


class _HTTPTransport:
    failure_hint = "Check the URL, that the server is running, and any auth headers."

    def __init__(self, url: str, headers: dict[str, str] | None) -> None:
        self.url = url
        self.headers = dict(headers or {})

    def __call__(self) -> AbstractAsyncContextManager[Any]:
        return self._connect()

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[Any]:
        try:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client
        except ImportError as exc:
            raise _import_error(exc) from exc
        # The SDK's HTTP client (httpx2): 30 s to connect/write, 5 min between stream reads.
        client = httpx2.AsyncClient(headers=self.headers, timeout=httpx2.Timeout(30.0, read=300.0))
        async with client, streamable_http_client(self.url, http_client=client) as streams:
            yield streams


# --------------------------------------------------------------------------- configs


class MCPServerLike(Protocol):
    """What :class:`MCP` needs from each server: a config or a live connection."""

    @property
    def close_after_run(self) -> bool: ...

    @property
    def defer(self) -> bool: ...

    async def open(self) -> MCPConnection: ...


@dataclass(frozen=True, kw_only=True)
class MCPServer:
    """Configuration shared by the transports. Immutable; :meth:`open` makes a connection."""

    name: str | None = None
    """Tool-name prefix: tools are exposed as ``{name}__{tool}``."""
    include_tools: list[str] | None = None
    exclude_tools: list[str] | None = None
    needs_approval: bool | ApprovalPredicate = False
    approved_tools: frozenset[str] = frozenset()
    """Raw tool names that run without asking even when ``needs_approval`` is set."""
    judge_paths: bool = True
    """Judge the paths a tool's arguments name by the run's workspace ACL: a denied path
    refuses the call, an ``ask`` one needs approval (see :mod:`lovia.plugins.mcp_paths`)."""
    retries: int | None = None
    timeout: float | None = None
    max_output_chars: int | None = None
    result_renderer: ToolResultRenderer | None = None
    auto_reconnect: bool = True
    close_after_run: bool = True
    defer: bool = False
    include_instructions: bool = False
    """Append the instructions the server sends at start-up to the system prompt."""
    connect_timeout: float | None = 30.0
    """Seconds for the transport to start and the MCP handshake to finish."""

    def _label(self) -> str:
        return self.name or type(self).__name__

    def _make_transport(self) -> Callable[[], AbstractAsyncContextManager[Any]]:
        raise NotImplementedError(f"{type(self).__name__} does not define a transport")

    def _connection(self, *, close_after_run: bool) -> MCPConnection:
        return MCPConnection(
            transport=self._make_transport(),
            prefix=self.name,
            include_tools=set(self.include_tools) if self.include_tools is not None else None,
            exclude_tools=set(self.exclude_tools) if self.exclude_tools is not None else None,
            needs_approval=self.needs_approval,
            approved_tools=frozenset(self.approved_tools),
            judge_paths=self.judge_paths,
            retries=self.retries,
            timeout=self.timeout,
            max_output_chars=self.max_output_chars,
            result_renderer=self.result_renderer,
            auto_reconnect=self.auto_reconnect,
            close_after_run=close_after_run,
            defer=self.defer,
            include_instructions=self.include_instructions,
            connect_timeout=self.connect_timeout,
            label=self._label(),
        )

    async def _open_connection(self, *, close_after_run: bool) -> MCPConnection:
        conn = self._connection(close_after_run=close_after_run)
        try:
            await conn._open_session()
            await conn._load_tools()
        except BaseException:
            with contextlib.suppress(Exception):
                await conn.close()
            raise
        return conn

    def connection(self) -> MCPConnection:
        """An unopened connection kept by the caller (``await conn.connect()`` starts it)."""
        return self._connection(close_after_run=False)

    async def open(self) -> MCPConnection:
        """A fresh connection (session started, tools listed) owned by the caller."""
        return await self._open_connection(close_after_run=self.close_after_run)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[MCPConnection]:
        """A connection kept alive for the block, reusable across runs."""
        conn = await self._open_connection(close_after_run=False)
        try:
            yield conn
        finally:
            await conn.close()


@dataclass(frozen=True, kw_only=True)
class MCPServerStdio(MCPServer):
    """A local server started as a subprocess, speaking MCP on stdin/stdout.

    ``env`` is added to a minimal inherited environment (``PATH``, ``HOME``, ``USER``, …);
    ``cwd`` defaults to the current directory.
    """

    command: str
    args: list[str] | None = None
    env: dict[str, str] | None = None
    cwd: str | Path | None = None
    stderr_log: str | Path | None = None
    """Also append the server's stderr to this file (a host's "open log")."""

    def _label(self) -> str:
        return self.name or Path(self.command).name or self.command

    def _make_transport(self) -> Callable[[], AbstractAsyncContextManager[Any]]:
        try:
            from mcp.client.stdio import StdioServerParameters, stdio_client
        except ImportError as exc:
            raise _import_error(exc) from exc
        params = StdioServerParameters(
            command=self.command,
            args=list(self.args or []),
            env=dict(self.env) if self.env is not None else None,
            cwd=self.cwd,
        )
        log = Path(self.stderr_log) if self.stderr_log is not None else None
        return _StdioTransport(params, stdio_client, self._label(), log)


@dataclass(frozen=True, kw_only=True)
class MCPServerStreamableHTTP(MCPServer):
    """A remote server on the streamable HTTP transport (``headers`` go on every request)."""

    url: str
    headers: dict[str, str] | None = None

    def _label(self) -> str:
        return self.name or self.url

    def _make_transport(self) -> Callable[[], AbstractAsyncContextManager[Any]]:
        try:
            import mcp.client.streamable_http  # noqa: F401
        except ImportError as exc:
            raise _import_error(exc) from exc
        return _HTTPTransport(self.url, self.headers)


# --------------------------------------------------------------------------- deferred tools

_DEFERRED_INTRO = (
    "These MCP tools exist but are not in your tool list, to save context. To use one, look "
    "it up with `search_mcp_tools` (keywords or its exact name) to get its description and "
    "parameters, then run it with `call_mcp_tool`. Search before concluding that a "
    "capability is missing."
)


def _deferred_instructions(groups: list[tuple[str | None, list[str]]]) -> str:
    lines = ["## Deferred MCP tools", _DEFERRED_INTRO]
    for prefix, names in groups:
        label = prefix or "unnamed server"
        lines.append(f"- {label} ({len(names)} tools): {', '.join(sorted(names))}")
    return "\n".join(lines)


def _make_search_tool(catalog: dict[str, Tool]) -> Tool:
    """``search_mcp_tools``: keyword search over the deferred tools' names and descriptions."""

    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> str:
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            raise InvalidToolArguments(
                "search_mcp_tools needs a non-empty 'query'.",
                hint="Pass keywords or an exact tool name.",
                tool_name="search_mcp_tools",
            )
        limit = args.get("max_results", 5)
        if isinstance(limit, str) and limit.strip().isdigit():
            limit = int(limit)
        if isinstance(limit, bool) or not isinstance(limit, int):
            limit = 5
        limit = min(20, max(1, limit))
        tokens = query.lower().split()
        scored: list[tuple[int, str]] = []
        for name, target in catalog.items():
            lname, ldesc = name.lower(), (target.description or "").lower()
            score = 0
            for token in tokens:
                if token == lname:
                    score += 3
                elif token in lname:
                    score += 2
                if token in ldesc:
                    score += 1
            if score > 0:
                scored.append((-score, name))
        scored.sort()
        if not scored:
            return (
                f"No deferred MCP tool matched {query!r} ({len(catalog)} available — the "
                "names are listed in your instructions; try other keywords or an exact name)."
            )
        shown = scored[:limit]
        text = json.dumps(
            [
                {
                    "name": name,
                    "description": catalog[name].description,
                    "parameters": catalog[name].parameters,
                }
                for _, name in shown
            ],
            ensure_ascii=False,
        )
        rest = len(scored) - len(shown)
        if rest > 0:
            noun = "match" if rest == 1 else "matches"
            text += f"\n({rest} more {noun} not shown; refine the query or raise max_results.)"
        return text

    return Tool(
        name="search_mcp_tools",
        description=(
            "Find deferred MCP tools and get their full definitions (name, description, "
            "parameters JSON schema). Matches keywords against tool names and descriptions; "
            "an exact name ranks first. Look a tool up here before calling it with "
            "call_mcp_tool."
        ),
        parameters={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Keywords, or a tool's exact name.",
                },
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "default": 5,
                    "description": "How many matches to return (1-20).",
                },
            },
            "required": ["query"],
        },
        invoke=invoke,
        kind="search",
        title=lambda args: f"Find MCP tools for {short(args.get('query', ''), 50)!r}",
    )


def _call_arguments(raw: Any) -> dict[str, Any]:
    if raw is None:
        return {}
    if isinstance(raw, str) and raw.strip():
        try:
            raw = json.loads(raw)  # a model that sent the arguments as a JSON string
        except json.JSONDecodeError:
            pass
    if isinstance(raw, dict):
        return dict(raw)
    raise InvalidToolArguments(
        f"call_mcp_tool 'arguments' must be a JSON object, got {type(raw).__name__}.",
        hint="Pass the tool's arguments as an object matching its parameters schema.",
        tool_name="call_mcp_tool",
    )


def _make_call_tool(catalog: dict[str, Tool]) -> Tool:
    """``call_mcp_tool``: run a deferred tool by name, with its own policies and renderer."""

    def lookup(name: str) -> Tool:
        target = catalog.get(name)
        if target is not None:
            return target
        near = difflib.get_close_matches(name, list(catalog), n=3, cutoff=0.4)
        raise ToolError(
            f"unknown deferred MCP tool: {name!r}",
            hint=f"Did you mean: {', '.join(near)}?"
            if near
            else "Use search_mcp_tools to discover tools.",
            tool_name="call_mcp_tool",
        )

    def needs_approval(args: dict[str, Any], ctx: RunContext[Any]) -> bool:
        target = catalog.get(str(args.get("tool", "")))
        if target is None:
            return False
        raw = args.get("arguments")
        return target.requires_approval(dict(raw) if isinstance(raw, dict) else {}, ctx)

    def locations(args: Mapping[str, Any]) -> list[ToolLocation]:
        """The deferred tool's judged paths: the approval card and an "always" answer name
        them, so one approval covers no other path."""
        target = catalog.get(str(args.get("tool", "")))
        raw = args.get("arguments")
        if target is None or target.locations is None or not isinstance(raw, dict):
            return []
        return list(target.locations(raw))

    async def invoke(args: dict[str, Any], ctx: RunContext[Any]) -> str:
        name = args.get("tool")
        if not isinstance(name, str) or not name:
            raise InvalidToolArguments(
                "call_mcp_tool needs 'tool', the exact name of a deferred MCP tool.",
                hint="Use search_mcp_tools to discover tools.",
                tool_name="call_mcp_tool",
            )
        target = lookup(name)
        arguments = _call_arguments(args.get("arguments"))
        raw = await run_tool(target, arguments, ctx)
        agent = getattr(ctx, "agent", None)
        text = await render_tool_result(
            target, raw, ctx, default=getattr(agent, "tool_result_renderer", None)
        )
        if target.max_output_chars is not None:
            text = truncate_tool_output(text, target.max_output_chars)
        return text

    return Tool(
        name="call_mcp_tool",
        description=(
            "Run a deferred MCP tool by its exact name. 'arguments' must match the parameters "
            "schema search_mcp_tools returned for it. Only deferred MCP tools are reachable "
            "here; call regular tools directly."
        ),
        parameters={
            "type": "object",
            "properties": {
                "tool": {
                    "type": "string",
                    "description": "The exact tool name, as search_mcp_tools returned it.",
                },
                "arguments": {
                    "type": "object",
                    "description": "Arguments matching the tool's parameters schema.",
                },
            },
            "required": ["tool"],
        },
        invoke=invoke,
        kind="other",
        title=lambda args: f"Call {args.get('tool', 'an MCP tool')}",
        needs_approval=needs_approval,
        locations=locations,
    )


# --------------------------------------------------------------------------- the plugin


class MCP:
    """Mount the tools of one or more MCP servers on an agent.

    Configs are opened in ``setup`` (once per run, and per agent a handoff reaches) and
    closed when the run ends; a live :class:`MCPConnection` is used as is and left open for
    its owner. Servers with ``defer=True`` contribute their tools through one
    ``search_mcp_tools`` / ``call_mcp_tool`` pair plus a list of names in the instructions.
    """

    def __init__(self, *servers: MCPServerLike, name: str = "mcp") -> None:
        self.servers: tuple[MCPServerLike, ...] = tuple(servers)
        self.name = name

    def __repr__(self) -> str:
        return f"MCP({len(self.servers)} server(s), name={self.name!r})"

    async def setup(self, ctx: RunContext[Any] | None = None) -> PluginInstance:
        owned: list[MCPConnection] = []

        async def aclose() -> None:
            for conn in reversed(owned):
                try:
                    await conn.close()
                except Exception:
                    logger.debug("mcp.close_failed: %s", conn._name, exc_info=True)

        exposed: list[Tool] = []
        deferred: dict[str, Tool] = {}
        groups: list[tuple[str | None, list[str]]] = []
        notes: list[str] = []
        try:
            for server in self.servers:
                conn = await server.open()
                if server.close_after_run:
                    owned.append(conn)
                tools = conn.tools()
                if getattr(server, "include_instructions", False):
                    text = conn.server_instructions
                    if text:
                        notes.append(f"## MCP server: {conn._name}\n{text.strip()}")
                if not server.defer:
                    exposed.extend(tools)
                    continue
                names: list[str] = []
                for t in tools:
                    if t.name in deferred:
                        raise UserError(
                            f"deferred MCP tool name clash: {t.name!r} comes from two servers.",
                            hint="Give the servers distinct names (MCPServer(name=...)) so "
                            "their tools are prefixed.",
                        )
                    deferred[t.name] = t
                    names.append(t.name)
                groups.append((conn.prefix, names))
            clash = sorted(set(deferred) & {t.name for t in exposed})
            if clash:
                raise UserError(
                    f"deferred MCP tool name clash with exposed tools: {', '.join(clash)}",
                    hint="Give the servers distinct names (MCPServer(name=...)) so their "
                    "tools are prefixed.",
                )
        except BaseException:
            await aclose()
            raise
        tools = list(exposed)
        instructions: list[str] = list(notes)
        if deferred:
            tools += [_make_search_tool(deferred), _make_call_tool(deferred)]
            instructions.append(_deferred_instructions(groups))
        return PluginInstance(
            tools=tools,
            instructions="\n\n".join(instructions) if instructions else None,
            aclose=aclose,
        )


__all__ = [
    "MCP",
    "MCPConnection",
    "MCPError",
    "MCPServer",
    "MCPServerLike",
    "MCPServerStdio",
    "MCPServerStreamableHTTP",
    "MCPToolResult",
    "normalize_schema",
    "render_mcp_content",
]
