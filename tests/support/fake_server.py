"""A scriptable local HTTP server: the shared base of the fake OpenAI and Anthropic servers.

The server binds ``127.0.0.1`` on a free port and runs on a background thread, so it serves
synchronous tests, asyncio tests and other processes alike (point a subprocess at
``server.base_url``). It speaks HTTP/1.1 with keep-alive and streams replies with chunked
transfer encoding, like the real vendors.

Scripting
---------
Every POST to the vendor's streaming endpoint takes the next :class:`Reply` from the queue
filled with :meth:`FakeServer.script`. When the queue is empty the ``responder`` callable
(if set) builds the reply from the :class:`RecordedRequest`; otherwise the server answers
``500`` with a body saying the script ran out, so a test fails loudly.

A :class:`Reply` is a status, headers and either a JSON/bytes ``body`` (errors) or a list of
pre-framed SSE ``events``. Failure modes are modifiers returning a copy:

- ``reply.cut(after=n)``: send ``n`` events, then drop the TCP connection mid-body;
- ``reply.truncate(after=n)``: send ``n`` events, then end the body cleanly (no final event);
- ``reply.hang(after=n)``: send ``n`` events (``0``: just the headers), then stall;
- ``reply.stall()``: accept the request but never send a status line;
- ``reply.slow(event_delay=s, delay=s)``: pace the events / the status line.

``html_reply(status, title)`` is an HTML error page (a proxy's 502/503) and
``closed_port_url()`` a base URL where nothing listens (connection refused).

Inspection
----------
``server.requests`` lists every request received (``method``, ``path``, lower-cased
``headers``, raw ``body`` and parsed ``json``); ``server.connections`` counts accepted TCP
connections (one per keep-alive connection, not per request) and
``server.open_connections`` those still open. ``server.reset()`` clears the queue and the
records.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HANG_SECONDS = 30.0
"""Upper bound of a stall; ``stop()`` ends every stall at once."""


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any = None

    @property
    def messages(self) -> list[Any]:
        """``json["messages"]`` (empty if absent): what the client sent as the conversation."""
        value = self.json.get("messages") if isinstance(self.json, dict) else None
        return value if isinstance(value, list) else []


@dataclass
class Reply:
    """One scripted HTTP answer."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    events: list[bytes] = field(default_factory=list)
    body: bytes | None = None
    delay: float = 0.0
    event_delay: float = 0.0
    cut_after: int | None = None
    truncate_after: int | None = None
    hang_after: int | None = None
    stall_before_headers: bool = False

    def _copy(self, **changes: Any) -> Reply:
        return dataclasses.replace(
            self, headers=dict(self.headers), events=list(self.events), **changes
        )

    def cut(self, after: int) -> Reply:
        """Drop the connection after ``after`` events (the body never terminates)."""
        return self._copy(cut_after=after)

    def truncate(self, after: int) -> Reply:
        """End the body cleanly after ``after`` events (no finish / done marker)."""
        return self._copy(truncate_after=after)

    def hang(self, after: int = 0) -> Reply:
        """Send the headers and ``after`` events, then stall until the client gives up."""
        return self._copy(hang_after=after)

    def stall(self) -> Reply:
        """Read the request, then never answer."""
        return self._copy(stall_before_headers=True)

    def slow(self, *, event_delay: float = 0.0, delay: float = 0.0) -> Reply:
        return self._copy(event_delay=event_delay, delay=delay)

    def with_headers(self, **headers: str) -> Reply:
        """Extra response headers; ``retry_after="2"`` becomes ``retry-after: 2``."""
        reply = self._copy()
        reply.headers.update({k.replace("_", "-"): v for k, v in headers.items()})
        return reply


def json_reply(status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status=status,
        headers={"content-type": "application/json", **(headers or {})},
        body=json.dumps(payload).encode(),
    )


def html_reply(status: int, title: str, *, lines: int = 60) -> Reply:
    """An HTML error page, as a proxy or web server sends it: ``<title>``, then ``lines`` of body."""
    page = [
        "<!DOCTYPE html>",
        "<html>",
        f"<head><title>{title}</title></head>",
        "<body>",
        f"<h1>{title}</h1>",
        *(f"<p>diagnostic line {i} of the error page</p>" for i in range(lines)),
        "</body>",
        "</html>",
    ]
    return Reply(
        status=status,
        headers={"content-type": "text/html; charset=utf-8"},
        body=("\n".join(page) + "\n").encode(),
    )


def closed_port_url(path: str = "") -> str:
    """``http://127.0.0.1:<port><path>`` for a port nothing listens on (connection refused).

    The port was just bound and released, so no other test holds it.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"


Responder = Callable[[RecordedRequest], Reply]


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    owner: FakeServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        # Small SSE chunks must not wait for delayed ACKs (Nagle): stream like real servers.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.owner._connected(self.connection)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.owner._disconnected(self.connection)

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            json=parsed,
        )
        reply = owner._reply_for(request)
        try:
            self._send(reply)
        except OSError:
            self.close_connection = True

    def _send(self, reply: Reply) -> None:
        owner = self.server.owner
        if reply.stall_before_headers:
            owner._stopping.wait(HANG_SECONDS)
            self.close_connection = True
            return
        if reply.delay:
            owner._stopping.wait(reply.delay)
        self.send_response(reply.status)
        for key, value in reply.headers.items():
            self.send_header(key, value)
        if reply.body is not None:
            self.send_header("content-length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
            self.wfile.flush()
            return
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        for i, event in enumerate(reply.events):
            if reply.cut_after is not None and i >= reply.cut_after:
                self._drop()
                return
            if reply.truncate_after is not None and i >= reply.truncate_after:
                break
            if reply.hang_after is not None and i >= reply.hang_after:
                owner._stopping.wait(HANG_SECONDS)
                self._drop()
                return
            if reply.event_delay and i:
                owner._stopping.wait(reply.event_delay)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        else:
            if reply.cut_after is not None:
                self._drop()
                return
            if reply.hang_after is not None:
                owner._stopping.wait(HANG_SECONDS)
                self._drop()
                return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)


class FakeServer:
    """Base class: subclasses name the streaming path and frame vendor replies."""

    stream_path = "/v1/chat/completions"
    models_path = "/v1/models"
    path_prefix = "/v1"

    def __init__(self, *, responder: Responder | None = None) -> None:
        self.responder = responder
        self.models: list[dict[str, Any]] = []
        self.requests: list[RecordedRequest] = []
        self.connections = 0
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._sockets: set[socket.socket] = set()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> FakeServer:
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._stopping.clear()
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ addresses

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (no path)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The base URL a client is configured with."""
        return self.url + self.path_prefix

    # ------------------------------------------------------------------ scripting

    def script(self, *replies: Reply) -> None:
        """Queue replies for the next streaming requests, in order."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """Scripted replies not consumed yet."""
        with self._lock:
            return len(self._queue)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.connections = 0

    @property
    def open_connections(self) -> int:
        """TCP connections currently open (a client that hung up is gone once noticed)."""
        with self._lock:
            return len(self._sockets)

    def wait_for_open_connections(self, count: int, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while self.open_connections != count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.open_connections} open connections, expected {count}")
            time.sleep(0.01)

    @property
    def last_request(self) -> RecordedRequest:
        with self._lock:
            assert self.requests, "no request received"
            return self.requests[-1]

    def stream_requests(self) -> list[RecordedRequest]:
        """The requests made to the streaming endpoint."""
        with self._lock:
            return [r for r in self.requests if r.path.split("?", 1)[0] == self.stream_path]

    async def stream_requested(self, count: int = 1) -> float:
        """Wait (without blocking the loop) for ``count`` streaming calls; when the last came."""
        while len(self.stream_requests()) < count:  # noqa: ASYNC110 (set from the server thread)
            await asyncio.sleep(0.005)
        return time.monotonic()

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.requests) >= count:
                    return list(self.requests)
            time.sleep(0.01)
        raise AssertionError(f"expected {count} requests, got {len(self.requests)}")

    # ------------------------------------------------------------------ vendor hooks

    def models_payload(self) -> Any:
        return {"object": "list", "data": self.models}

    def error_reply(self, status: int, message: str) -> Reply:
        return json_reply(status, {"error": {"message": message, "type": "fake_server_error"}})

    # ------------------------------------------------------------------ internals

    def _connected(self, sock: socket.socket) -> None:
        with self._lock:
            self.connections += 1
            self._sockets.add(sock)

    def _disconnected(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.discard(sock)

    def _reply_for(self, request: RecordedRequest) -> Reply:
        path = request.path.split("?", 1)[0]
        with self._lock:
            self.requests.append(request)
            if request.method == "GET" and path == self.models_path:
                return json_reply(200, self.models_payload())
            if request.method != "POST" or path != self.stream_path:
                return self.error_reply(404, f"fake server: no route for {request.method} {path}")
            if self._queue:
                return self._queue.popleft()
            responder = self.responder
        if responder is not None:
            return responder(request)
        return self.error_reply(500, "fake server: the test script ran out of replies")


def sse_frames(payloads: Iterable[Any], *, event_names: bool = False) -> list[bytes]:
    """``data: <json>\\n\\n`` frames (with ``event: <type>`` lines when ``event_names``)."""
    frames = []
    for payload in payloads:
        data = json.dumps(payload).encode()
        if event_names:
            frames.append(b"event: %s\ndata: %s\n\n" % (payload["type"].encode(), data))
        else:
            frames.append(b"data: %s\n\n" % data)
    return frames


__all__ = [
    "FakeServer",
    "RecordedRequest",
    "Reply",
    "Responder",
    "closed_port_url",
    "html_reply",
    "json_reply",
    "sse_frames",
]
