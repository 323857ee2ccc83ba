"""A small routed web server on 127.0.0.1 (optionally HTTPS) for the fetching tools' tests.

Routes map a path (query string ignored) to a handler ``(WebRequest) -> WebResponse``, or to
a ready ``WebResponse``. A response can repeat headers (``Set-Cookie`` twice), stream its
body in chunks with a pause between them, or wait before the status line, so tests can
exercise redirects, size caps and timeouts without any outside network.

    with WebServer() as web:
        web.route("/a", WebResponse(body=b"hi", headers=[("Content-Type", "text/plain")]))
        url = web.url("/a")
        ...
        web.requests  # every request seen: method, path, headers (list), body
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_WAIT = 30.0
"""Upper bound of any scripted wait; ``stop()`` ends every wait at once."""


@dataclass
class WebRequest:
    method: str
    path: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def header_values(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k.lower() == name.lower()]

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class WebResponse:
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    chunks: Iterable[bytes] | None = None
    """Streamed (chunked encoding) instead of ``body`` when set."""
    chunk_delay: float = 0.0
    delay: float = 0.0
    """Seconds to wait before sending the status line."""


Handler = Callable[[WebRequest], WebResponse]


def html(
    body: str, *, status: int = 200, content_type: str = "text/html; charset=utf-8"
) -> WebResponse:
    return WebResponse(status, [("Content-Type", content_type)], body.encode("utf-8"))


def text(
    body: str | bytes, content_type: str = "text/plain; charset=utf-8", status: int = 200
) -> WebResponse:
    data = body.encode("utf-8") if isinstance(body, str) else body
    return WebResponse(status, [("Content-Type", content_type)], data)


def json_response(payload: Any, *, status: int = 200) -> WebResponse:
    return WebResponse(status, [("Content-Type", "application/json")], json.dumps(payload).encode())


def redirect(location: str, *, status: int = 302) -> WebResponse:
    return WebResponse(status, [("Location", location), ("Content-Length", "0")])


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    owner: WebServer

    def get_request(self) -> tuple[Any, Any]:
        conn, addr = super().get_request()
        tls = self.owner.tls
        if tls is not None:  # handshake lazily, on the handler's thread
            conn = tls.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        return conn, addr


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def handle_one_request(self) -> None:
        with contextlib.suppress(OSError, ssl.SSLError):
            super().handle_one_request()

    def _serve(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        request = WebRequest(self.command, self.path, list(self.headers.items()), body)
        response = owner._respond(request)
        if response.delay:
            owner._stopping.wait(min(response.delay, MAX_WAIT))
        self.send_response(response.status)
        names = {k.lower() for k, _ in response.headers}
        for key, value in response.headers:
            self.send_header(key, value)
        if response.chunks is None:
            if "content-length" not in names:
                self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
            self.wfile.flush()
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        for i, chunk in enumerate(response.chunks):
            if owner._stopping.is_set():
                break
            if i and response.chunk_delay:
                owner._stopping.wait(min(response.chunk_delay, MAX_WAIT))
            if chunk:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve

    def __getattr__(self, name: str) -> Any:  # any other method (PROPFIND, ...)
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)


class WebServer:
    """Routed threaded HTTP(S) server on ``127.0.0.1``; ``tls`` is a server SSL context."""

    def __init__(self, *, tls: ssl.SSLContext | None = None) -> None:
        self.tls = tls
        self.routes: dict[str, Handler | WebResponse] = {}
        self.requests: list[WebRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> WebServer:
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
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
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> WebServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def origin(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.origin + path

    def route(self, path: str, handler: Handler | WebResponse) -> str:
        """Serve ``handler`` at ``path``; returns the full URL."""
        self.routes[path] = handler
        return self.url(path)

    def hits(self, path: str) -> list[WebRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.split("?", 1)[0] == path]

    def _respond(self, request: WebRequest) -> WebResponse:
        with self._lock:
            self.requests.append(request)
        handler = self.routes.get(request.path.split("?", 1)[0])
        if handler is None:
            return text(f"no route for {request.path}", status=404)
        if isinstance(handler, WebResponse):
            return handler
        return handler(request)


def closed_port() -> int:
    """A local port with nothing listening (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


__all__ = [
    "WebRequest",
    "WebResponse",
    "WebServer",
    "closed_port",
    "html",
    "json_response",
    "redirect",
    "text",
]
