"""Send a prebuilt JSON body through an SDK client and read the SSE answer.

The request goes through the SDK's low-level ``client.post(..., content=<bytes>,
cast_to=httpx2.Response, stream=True)``: the SDK still owns authentication, headers, the
connection pool and error classes, but the body is bytes lovia built itself, so the SDK's
typed-parameter transformation (which walks every message of every request) never runs.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any, cast

from lovia.exceptions import ProviderError
from lovia.providers._errors import (
    Endpoint,
    one_line,
    sdk_error,
    stream_error,
    transport_error,
)
from lovia.providers._sse import SSEParser

logger = logging.getLogger("lovia.providers")

DRAIN_TIMEOUT = 2.0
"""How long to wait for the end of a response after its final event before dropping it."""


async def open_stream(
    client: Any,
    path: str,
    body: bytes,
    *,
    headers: Mapping[str, object],
    request_timeout: object,
    endpoint: Endpoint,
) -> SSEStream:
    """POST ``body`` and return the open event stream; SDK errors become lovia errors."""
    import httpx2

    try:
        response = await client.post(
            path,
            cast_to=httpx2.Response,
            content=body,
            options={"headers": headers, "timeout": request_timeout},
            stream=True,
        )
    except Exception as exc:
        mapped = sdk_error(endpoint, exc)
        if mapped is exc:
            raise
        raise mapped from exc
    response = cast("httpx2.Response", response)
    if response.headers.get("content-type", "").startswith("application/json"):
        await _raise_for_json_answer(response, endpoint)
    return SSEStream(response, endpoint)


async def _raise_for_json_answer(response: Any, endpoint: Endpoint) -> None:
    """A 200 answer that is JSON, not an event stream: an error object, or no streaming."""
    import httpx2

    try:
        text = (await response.aread()).decode("utf-8", "replace")
    except httpx2.HTTPError as exc:
        raise transport_error(endpoint, exc, streaming=True) from exc
    finally:
        await response.aclose()
    try:
        payload = json.loads(text)
    except ValueError:
        payload = None
    if isinstance(payload, dict) and payload.get("error"):
        raise stream_error(endpoint, payload["error"])
    raise ProviderError(
        f"{endpoint.label}: the server answered with JSON instead of an event stream: "
        f"{one_line(text, 200)}",
        hint="The server does not seem to support streaming (stream=true); check "
        f"{endpoint.base_url_env} points at a server that does.",
        vendor=endpoint.vendor,
        model=endpoint.model,
        retryable=False,
        body=text,
    )


class SSEStream:
    """The JSON events of one streamed response.

    Iterate :meth:`events`; call :meth:`finish` once the vendor's final event arrived. The
    rest of the body is then read (bounded by :data:`DRAIN_TIMEOUT`) so the connection goes
    back to the pool instead of being torn down. :meth:`aclose` always releases the
    response; consumers that stop early (``aclose()`` of the provider stream, task
    cancellation) end up there and the connection is closed.
    """

    def __init__(self, response: Any, endpoint: Endpoint) -> None:
        self.response = response
        self.endpoint = endpoint
        self.saw_done_marker = False
        self._finished = False
        # SSE is rarely compressed; without a content-encoding the raw stream skips the
        # decoder and re-chunking layers that every chunk would otherwise pass through.
        encoded = response.headers.get("content-encoding", "identity").lower() != "identity"
        self._chunks: AsyncIterator[bytes] = (
            response.aiter_bytes() if encoded else response.aiter_raw()
        )
        self._events: AsyncGenerator[dict[str, Any], None] | None = None

    def finish(self) -> None:
        self._finished = True

    def events(self) -> AsyncIterator[dict[str, Any]]:
        if self._events is None:
            self._events = self._iter_events()
        return self._events

    async def _iter_events(self) -> AsyncGenerator[dict[str, Any], None]:
        import httpx2

        parser = SSEParser()
        try:
            eof = True
            async for chunk in self._chunks:
                for event in parser.feed(chunk):
                    yield event
                    if self._finished:
                        break
                if parser.done or self._finished:
                    eof = False
                    break
            if eof:
                for event in parser.close():
                    yield event
            else:
                await self._drain()
        except (httpx2.HTTPError, OSError) as exc:
            raise transport_error(self.endpoint, exc, streaming=True) from exc
        finally:
            self.saw_done_marker = parser.done
            if parser.skipped:
                logger.warning(
                    "provider.bad_sse: %s skipped %d malformed event(s)",
                    self.endpoint.label,
                    parser.skipped,
                )

    async def _drain(self) -> None:
        try:
            async with asyncio.timeout(DRAIN_TIMEOUT):
                async for _ in self._chunks:
                    pass
        except TimeoutError:
            logger.debug("provider.drain: %s response did not end; closing", self.endpoint.label)
        except Exception:
            # The answer is complete; a failure after it only costs the pooled connection.
            logger.debug("provider.drain: failed", exc_info=True)

    async def aclose(self) -> None:
        try:
            if self._events is not None:
                await self._events.aclose()
            aclose = getattr(self._chunks, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            await self.response.aclose()


__all__ = ["DRAIN_TIMEOUT", "SSEStream", "open_stream"]
