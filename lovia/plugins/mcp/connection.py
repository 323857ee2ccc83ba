"""``MCPConnection``: one live MCP session, the task that owns it, and the tools bound to it."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lovia.exceptions import MCPError, UserError
from lovia.plugins.mcp._sdk import (
    _describe,
    _import_error,
    _is_sdk_error,
    _is_transport_error,
    _sdk_session,
)
from lovia.plugins.mcp.content import (
    MCPToolResult,
    _attr,
    _default_renderer,
    _display_name,
    _str_attr,
    normalize_schema,
)
from lovia.plugins.mcp_paths import PathArguments, check_paths, guarded_approval
from lovia.tools.base import ApprovalPredicate, Tool, ToolResultRenderer

if TYPE_CHECKING:
    from lovia.run_context import RunContext

logger = logging.getLogger("lovia.plugins.mcp")

_CLOSE_TIMEOUT = 10.0

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
