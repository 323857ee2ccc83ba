"""The ACP connection over stdio: framing that never gives up on bad input, the SDK's router with
``session/delete`` added, and the client port the host calls.

Every line is one JSON-RPC message, judged by the envelope rules the language server uses
too (``lovia_server.transport.jsonrpc_envelope``): a line that is not JSON is answered with
-32700, a message that is not a request, notification or response (or a request whose id is
not a string or an integer) with -32600; bad params get -32602 whose ``data.field`` names the
field. Malformed notifications and responses are dropped. Only protocol frames reach stdout.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from acp import RequestError
from acp import schema as a
from acp.agent.router import build_agent_router
from acp.connection import Connection
from acp.meta import CLIENT_METHODS
from acp.utils import normalize_result, notify_model, request_model
from pydantic import ValidationError

from lovia_server import protocol as p
from lovia_server.acp.agent import LoviaAcpAgent
from lovia_server.acp.mapping import Update
from lovia_server.acp.request_errors import from_protocol_error
from lovia_server.transport.jsonrpc_envelope import (
    Kind,
    Rejection,
    classify,
    error_response,
    internal_error,
    invalid_request,
    params_error,
    parse_error,
    short,
)

logger = logging.getLogger("lovia_server.acp.connection")

MAX_FRAME_BYTES = 64 * 1024 * 1024

Handler = Callable[[str, Any, bool], Awaitable[Any]]


class GuardedTransport:
    """Newline-delimited JSON over a byte reader and a frame writer, answering bad frames."""

    def __init__(self, reader: asyncio.StreamReader, write: Callable[[bytes], None]) -> None:
        self._reader = reader
        self._write = write
        self.frames_in = 0

    async def send(self, message: dict[str, Any]) -> None:
        try:
            data = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            logger.exception("acp.unserialisable_message")
            if "id" in message and ("result" in message or "error" in message):
                data = json.dumps(error_response(message["id"], internal_error(exc)))
            else:
                return
        self._write(data.encode("utf-8") + b"\n")

    async def receive(self) -> dict[str, Any] | None:
        while True:
            line = await self._read_line()
            if line is None:
                return None
            line = line.strip()
            if not line:
                continue
            self.frames_in += 1
            try:
                message = json.loads(line)
            except (ValueError, UnicodeDecodeError) as exc:
                logger.warning("acp.frame_unparsable: %s", short(exc))
                await self.send(error_response(None, parse_error()))
                continue
            if await self._routable(message):
                return message  # type: ignore[no-any-return]

    async def _routable(self, message: Any) -> bool:
        """Judge one decoded frame by the shared envelope rules; answer what must be answered
        (malformed notifications and responses are dropped: nobody waits for them)."""
        verdict = classify(message)
        if isinstance(verdict, Rejection):
            if verdict.answer:
                await self.send(error_response(verdict.answer_id, verdict.error))
            else:
                logger.debug("acp.frame_dropped: %s: %s", verdict.reason, short(message))
            return False
        if verdict.kind is not Kind.RESPONSE and (error := params_error(verdict)) is not None:
            if verdict.kind is Kind.REQUEST:
                await self.send(error_response(verdict.id, error))
            else:
                logger.debug("acp.notification_dropped: %s", short(message))
            return False
        return True

    async def _read_line(self) -> bytes | None:
        try:
            return await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return exc.partial or None
        except asyncio.LimitOverrunError:
            # too long for one frame: drop it up to its newline, answer, go on
            while True:
                try:
                    await self._reader.readuntil(b"\n")
                    break
                except asyncio.LimitOverrunError as exc:
                    await self._reader.readexactly(exc.consumed)
                except asyncio.IncompleteReadError:
                    return None
            await self.send(error_response(None, invalid_request("the frame exceeds 64 MiB")))
            return b""

    async def close(self) -> None:
        return None


def _field(loc: tuple[Any, ...]) -> str:
    # pydantic names union members in the location (``TextContentBlock``): keep the path only
    parts = [str(x) for x in loc if isinstance(x, int) or (str(x)[:1].islower())]
    return ".".join(parts)


def invalid_params_error(exc: ValidationError, model: str | None = None) -> RequestError:
    """A validation error as -32602, with ``data.field`` the first bad field (camelCase)."""
    errors = [
        {"field": _field(tuple(e["loc"])), "message": e["msg"], "type": e["type"]}
        for e in exc.errors(include_url=False, include_input=False, include_context=False)
    ][:20]
    first = errors[0]["field"] if errors else ""
    message = f"Invalid params: {first}: {errors[0]['message']}" if errors else "Invalid params"
    return RequestError(-32602, message, {"field": first, "errors": errors})


def guarded_handler(router: Handler) -> Handler:
    """Every failure becomes a JSON-RPC error with a documented code; nothing escapes."""

    async def handle(method: str, params: Any, is_notification: bool) -> Any:
        if is_notification:
            try:
                return await router(method, params, is_notification)
            except Exception as exc:  # nothing to answer: a bad notification is dropped
                logger.debug("acp.notification_dropped: %s: %s", method, exc)
                return None
        try:
            return await router(method, params, is_notification)
        except RequestError:
            raise
        except ValidationError as exc:
            raise invalid_params_error(exc) from None
        except p.ProtocolError as exc:
            raise from_protocol_error(exc) from None
        except Exception as exc:
            logger.exception("acp.request_failed: %s", method)
            error = internal_error(exc)
            raise RequestError(error["code"], error["message"], error.get("data")) from None

    return handle


def build_router(agent: LoviaAcpAgent) -> Handler:
    router = build_agent_router(agent, use_unstable_protocol=True)  # type: ignore[arg-type]
    router.route_request(
        "session/delete",
        a.DeleteSessionRequest,
        agent,
        "delete_session",
        adapt_result=normalize_result,
    )
    return guarded_handler(router)


class ConnectionPort:
    """The client methods the host calls, over the SDK's connection and models."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    async def session_update(self, session_id: str, update: Update) -> None:
        await notify_model(
            self.conn,
            CLIENT_METHODS["session_update"],
            a.SessionNotification(session_id=session_id, update=update),
        )

    async def request_permission(
        self, session_id: str, tool_call: a.ToolCallUpdate, options: list[a.PermissionOption]
    ) -> a.RequestPermissionResponse:
        return await request_model(
            self.conn,
            CLIENT_METHODS["session_request_permission"],
            a.RequestPermissionRequest(session_id=session_id, tool_call=tool_call, options=options),
            a.RequestPermissionResponse,
        )

    async def read_text_file(self, session_id: str, path: str) -> str:
        response = await request_model(
            self.conn,
            CLIENT_METHODS["fs_read_text_file"],
            a.ReadTextFileRequest(session_id=session_id, path=path),
            a.ReadTextFileResponse,
        )
        return response.content

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        await self.conn.send_request(
            CLIENT_METHODS["fs_write_text_file"],
            a.WriteTextFileRequest(session_id=session_id, path=path, content=content).model_dump(
                mode="json", by_alias=True, exclude_none=True
            ),
        )


async def serve(
    agent: LoviaAcpAgent, reader: asyncio.StreamReader, write: Callable[[bytes], None]
) -> None:
    """Serve one client until it closes the stream; live runs then stop resumable."""
    transport = GuardedTransport(reader, write)
    conn = Connection(build_router(agent), transport, listening=False)
    agent.bind(ConnectionPort(conn))
    agent.start()
    try:
        await conn.main_loop()
    finally:
        await agent.shutdown()
        await conn.close()


__all__ = [
    "MAX_FRAME_BYTES",
    "ConnectionPort",
    "GuardedTransport",
    "build_router",
    "guarded_handler",
    "invalid_params_error",
    "serve",
]
