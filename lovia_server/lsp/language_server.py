"""The language server: capability advertisement, lifecycle, and one thin handler per method.

Every ``lovia/*`` method is served by its typed handler function in ``lovia_server.lsp.handlers``
(its params model validated, its result model serialised in ``handlers.serve``). Every error
reaches the client as a documented code, never as a traceback.

Nothing here loads pydantic or lovia: ``initialize`` is answered from the generated names
(``protocol.names``), and the models, the handlers and the runtime load after it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cattrs
from lsprotocol import types as lsp
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInternalError,
    JsonRpcInvalidParams,
    JsonRpcServerError,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    default_converter,
    lsp_method,
)

from lovia_server import protocol as p
from lovia_server.lsp.code_actions import ACTION_COMMANDS
from lovia_server.lsp.jsonrpc import INTERNAL_MESSAGE, GuardedLanguageServer, GuardedProtocol
from lovia_server.protocol import names
from lovia_server.version import server_version

if TYPE_CHECKING:
    from lovia_server.lsp.server_runtime import ServerRuntime
    from lovia_server.protocol.settings import InitOptions, LoviaSettings
    from lovia_server.transport.frame_writer import FrameWriter

logger = logging.getLogger("lovia_server")

LINE_LIMIT = 1024 * 1024
"""Bytes a header line may take; a longer one is dropped (the next header line re-syncs)."""


STARTUP_WAIT = 10.0
"""Seconds a code-action request made during the start-up waits for it (then: no actions)."""

Json = Any  # a decoded JSON value (the edge where the wire is untyped)
Handler = Callable[[Json], Awaitable[Json]]


def converter_factory() -> cattrs.Converter:
    """pygls' converter, but custom-method params stay plain dicts (validated by pydantic)."""
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        converter.register_structure_hook(cls, lambda obj, c: c(**obj))
    return converter


class LoviaProtocol(GuardedProtocol):
    """Adds ``experimental.lovia`` to the initialize result."""

    RAW_PARAMS = frozenset({lsp.TEXT_DOCUMENT_CODE_ACTION})

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(
        self, params: lsp.InitializeParams
    ) -> Generator[Any, Any, lsp.InitializeResult]:
        result: lsp.InitializeResult = yield from super().lsp_initialize(params)
        # The ServerCapabilities model's wire shape, from the generated names: no pydantic yet.
        result.capabilities.experimental = {"lovia": names.server_capabilities(server_version())}
        return result


class LoviaServer(GuardedLanguageServer):
    """Server state that outlives requests: options, settings, folders and the runtime."""

    def __init__(self) -> None:
        super().__init__(
            name="lovia",
            version=server_version(),
            protocol_cls=LoviaProtocol,
            converter_factory=converter_factory,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
        )
        assert isinstance(self.protocol, LoviaProtocol)
        self.jsonrpc: LoviaProtocol = self.protocol
        """The protocol, typed: its ``outgoing`` writer is set by ``__main__`` for stdio."""
        self.raw_init_options: Any = None
        self.init_options: InitOptions
        self.settings: LoviaSettings
        self.settings_problems: list[str] = []
        self.folders: list[Path] = []
        self.initialize_seen = False
        self.ready = asyncio.Event()
        self.runtime: ServerRuntime | None = None
        self.startup_error: BaseException | None = None
        # Open documents the user changed since they were opened or saved: where their text
        # differs from the disk it is unsaved work (a stale, untouched buffer is not).
        self.edited_uris: set[str] = set()
        self._stopping: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ helpers

    async def stop_runtime(self) -> None:
        """Shut the runtime down once: ``shutdown`` and the end of input (EOF, SIGTERM) wait for
        that one job."""
        if self.runtime is None:
            return
        if self._stopping is None:
            self._stopping = asyncio.get_running_loop().create_task(self.runtime.shutdown())
        await asyncio.shield(self._stopping)

    def client_capability(self, path: str) -> Any:
        node: Any = self.client_capabilities
        for part in path.split("."):
            node = getattr(node, part, None)
            if node is None:
                return None
        return node

    def client_supports(self, path: str) -> bool:
        return bool(self.client_capability(path))

    async def serve_stream(self, reader: asyncio.StreamReader, writer: FrameWriter) -> None:
        """Serve the client until the end of its input (``transport.stdio.serve_stdio``)."""
        from pygls.io_ import run_async

        from lovia_server.transport.stdin import HeaderReader

        self.jsonrpc.set_outgoing(writer)
        try:
            await run_async(
                stop_event=threading.Event(),  # nothing sets it: EOF, exit or SIGTERM end it
                reader=HeaderReader(reader),
                protocol=self.protocol,
                logger=_reader_log(),
                error_handler=self.report_server_error,
            )
        finally:
            # The editor went away (EOF, SIGTERM): interrupt live runs so they stay resumable.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.stop_runtime(), 15)

    def log_to_client(self, message: str, kind: lsp.MessageType = lsp.MessageType.Info) -> None:
        try:
            self.window_log_message(lsp.LogMessageParams(type=kind, message=message))
        except Exception:
            logger.debug("log_to_client failed", exc_info=True)


def _folders_from(params: lsp.InitializeParams) -> list[Path]:
    from lovia_server.host.uris import uri_to_path

    uris: list[str] = []
    if params.workspace_folders:
        uris = [f.uri for f in params.workspace_folders]
    elif params.root_uri:
        uris = [params.root_uri]
    elif params.root_path:
        return [Path(params.root_path).resolve()]
    folders = []
    for uri in uris:
        path = uri_to_path(uri)
        if path is not None:
            folders.append(path.resolve())
    return folders


def _to_jsonrpc(exc: BaseException) -> JsonRpcException:
    if isinstance(exc, JsonRpcException):
        return exc
    if isinstance(exc, p.ProtocolError):
        if exc.code == p.INVALID_PARAMS:
            return JsonRpcInvalidParams(message=exc.message, data=exc.data)
        if exc.code == p.SERVER_NOT_INITIALIZED:
            return JsonRpcServerNotInitialized(message=exc.message, data=exc.data)
        return JsonRpcServerError(exc.message, exc.code, exc.data)  # type: ignore[no-untyped-call]
    from lovia.exceptions import LoviaError

    if isinstance(exc, LoviaError):
        data: dict[str, Any] = {"type": type(exc).__name__}
        if exc.hint:
            data["hint"] = exc.hint
        return JsonRpcInternalError(message=exc.message or str(exc), data=data)
    logger.exception("request.failed: %s", type(exc).__name__, exc_info=exc)
    return JsonRpcInternalError(message=INTERNAL_MESSAGE, data={"type": type(exc).__name__})


class _AnsweredAlready(logging.Filter):
    """pygls logs a frame it could not handle with a full traceback, then hands the error to
    ``report_server_error``, which answers the client and logs it in one line: the traceback
    is kept for ``--log-level DEBUG``."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == "Unable to handle message" and record.levelno > logging.DEBUG:
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


def _reader_log() -> logging.Logger:
    log = logging.getLogger("lovia_server.io")
    if not any(isinstance(f, _AnsweredAlready) for f in log.filters):
        log.addFilter(_AnsweredAlready())
    return log


def create_server() -> LoviaServer:
    """Build the server and register every handler (the runtime starts on ``initialized``)."""
    server = LoviaServer()

    def guarded(fn: Handler) -> Handler:
        async def handler(raw: Json) -> Json:
            try:
                if not server.initialize_seen:
                    raise p.ProtocolError(
                        p.SERVER_NOT_INITIALIZED, "The server has not been initialized"
                    )
                await server.ready.wait()
                if server.startup_error is not None:
                    raise server.startup_error
                return await fn(raw)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                raise _to_jsonrpc(exc) from None

        return handler

    @server.feature(lsp.INITIALIZE)
    def on_initialize(params: lsp.InitializeParams) -> None:
        # Only cheap work here: lovia itself is imported once initialize has been answered.
        server.raw_init_options = params.initialization_options
        server.folders = _folders_from(params)
        server.initialize_seen = True

    @server.feature(lsp.INITIALIZED)
    async def on_initialized(params: lsp.InitializedParams) -> None:
        try:
            # Ask for the settings first: the client answers while the settings models and the
            # runtime load.
            configuration = client_settings(server, ask(server))
            from lovia_server.protocol.settings import parse_init_options

            server.init_options = parse_init_options(server.raw_init_options)
            from lovia_server.lsp.server_runtime import ServerRuntime

            await refresh_settings(server, pushed=await configuration)
            server.runtime = await ServerRuntime.start(server)
        except BaseException as exc:
            logger.exception("startup.failed")
            server.startup_error = exc
            server.log_to_client(f"lovia failed to start: {exc}", lsp.MessageType.Error)
        finally:
            server.ready.set()

    @server.feature(lsp.SHUTDOWN)
    async def on_shutdown(params: None) -> None:
        await server.stop_runtime()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def on_config(params: lsp.DidChangeConfigurationParams) -> None:
        pushed = params.settings.get("lovia") if isinstance(params.settings, dict) else None
        await refresh_settings(server, pushed=pushed)
        if server.runtime is not None:
            server.runtime.settings_changed()

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def on_folders(params: lsp.DidChangeWorkspaceFoldersParams) -> None:
        from lovia_server.host.uris import uri_to_path

        removed = {uri_to_path(f.uri) for f in params.event.removed}
        folders = [f for f in server.folders if f not in {r.resolve() for r in removed if r}]
        for folder in params.event.added:
            path = uri_to_path(folder.uri)
            if path is not None and path.resolve() not in folders:
                folders.append(path.resolve())
        server.folders = folders
        if server.runtime is not None:
            server.runtime.settings_changed()

    def no_problems(uri: str, version: int) -> None:
        """lovia finds no problems itself, and says so for each version to a plain client: a
        multiplexer in front of several servers (rass, for eglot) holds a file's diagnostics
        until every server has published for its version, or 1 s. lovia's own clients get
        nothing: the Neovim recipe waits for the next change of a buffer's diagnostics after an
        edit, and an empty set from lovia would come before the language server's."""
        if server.init_options.present:
            return
        server.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[], version=version)
        )

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def on_open(params: lsp.DidOpenTextDocumentParams) -> None:
        server.edited_uris.discard(params.text_document.uri)
        no_problems(params.text_document.uri, params.text_document.version)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def on_change(params: lsp.DidChangeTextDocumentParams) -> None:
        server.edited_uris.add(params.text_document.uri)
        no_problems(params.text_document.uri, params.text_document.version)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def on_save(params: lsp.DidSaveTextDocumentParams) -> None:
        server.edited_uris.discard(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def on_close(params: lsp.DidCloseTextDocumentParams) -> None:
        server.edited_uris.discard(params.text_document.uri)

    @server.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def on_progress_cancel(params: lsp.WorkDoneProgressCancelParams) -> None:
        token = str(params.token)
        if server.runtime is not None and token.startswith("lovia/"):
            server.runtime.cancel_from_progress(token[len("lovia/") :])

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]),
    )
    async def on_code_action(params: Json) -> list[dict[str, Any]] | None:
        # The params come as JSON (LoviaProtocol.RAW_PARAMS): a menu request may carry
        # thousands of diagnostics, and building objects of them would cost more than answering.
        # Answered from memory: only a request that comes during the start-up waits for it.
        if not server.ready.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.ready.wait(), STARTUP_WAIT)
        runtime = server.runtime
        if runtime is None or server.startup_error is not None:
            return None
        try:
            return runtime.actions.actions(params)
        except Exception:
            logger.warning("code_action.failed", exc_info=True)
            return None

    for method, command in zip(names.METHOD_NAMES, names.COMMAND_NAMES, strict=True):
        _register(server, method, command, guarded)
    for command in ACTION_COMMANDS:
        _register_action(server, command, guarded)
    return server


def _register_action(
    server: LoviaServer, command: str, guarded: Callable[[Handler], Handler]
) -> None:
    """A code action's command (``lovia_server.lsp.action_commands``)."""

    async def call(raw: Json) -> Json:
        runtime = server.runtime
        assert runtime is not None  # guarded() waited for a started runtime
        return await runtime.actions.execute(command, raw)

    handler = guarded(call)

    async def alias(*args: Json) -> Json:
        return await handler(args[0] if args else {})

    server.command(command)(alias)


def _register(
    server: LoviaServer, method: str, command: str, guarded: Callable[[Handler], Handler]
) -> None:
    """The method itself and its ``workspace/executeCommand`` alias (params as the one argument)."""

    async def call(raw: Json) -> Json:
        from lovia_server.lsp.handlers import serve

        runtime = server.runtime
        assert runtime is not None  # guarded() waited for a started runtime
        return await serve(runtime, method, raw)

    handler = guarded(call)
    server.feature(method)(handler)

    async def alias(*args: Json) -> Json:
        return await handler(args[0] if args else {})

    server.command(command)(alias)


def ask(server: LoviaServer) -> Awaitable[Any]:
    """Send ``workspace/configuration`` for the ``lovia`` section now; await the answer later."""
    # The protocol's send_request_async writes at once (the server's *_async wrappers are
    # coroutines: they would send only when awaited).
    future: Awaitable[Any] = server.protocol.send_request_async(
        lsp.WORKSPACE_CONFIGURATION,
        lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="lovia")]),
    )
    return future


async def client_settings(server: LoviaServer, request: Awaitable[Any] | None = None) -> Any:
    """The ``lovia`` section as the client answers ``workspace/configuration`` (None if not)."""
    try:
        response = await asyncio.wait_for(
            request if request is not None else ask(server),
            timeout=float(os.environ.get("LOVIA_CONFIG_TIMEOUT", "2")),
        )
    except Exception:
        logger.info("config.unavailable: the client did not answer workspace/configuration")
        return None
    return response[0] if response else None


async def refresh_settings(server: LoviaServer, *, pushed: Any = None) -> None:
    """Read the ``lovia`` section (pushed value, else ``workspace/configuration``)."""
    raw = pushed if pushed is not None else await client_settings(server)
    from lovia_server.protocol.settings import parse_settings, restrict_untrusted

    settings, problems = parse_settings(raw)
    if not server.init_options.trusted:
        settings = restrict_untrusted(settings)

    from lovia_server.host.sandbox_setup import sandbox_problems

    unmet = sandbox_problems(settings.sandbox)
    server.settings = settings
    server.settings_problems = problems + unmet
    for problem in unmet:
        server.log_to_client(f"lovia: {problem}", lsp.MessageType.Warning)
    for problem in problems:
        if problem.startswith("lovia.mcpServers."):
            message = (
                f"lovia: invalid MCP server setting {problem} "
                "(runs of the built-in agent go on without it until it is fixed)"
            )
        else:
            message = f"lovia: ignoring invalid setting {problem}"
        server.log_to_client(message, lsp.MessageType.Warning)


__all__ = ["LoviaServer", "create_server"]
