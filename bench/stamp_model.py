"""A fake OpenAI Chat Completions server whose deltas carry the moment they were sent.

Run as its own process (``python bench/stamp_model.py``): it prints its base URL and serves
until its standard input closes. Every streamed delta's text is ``time.monotonic_ns()`` taken
just before the chunk is written to the socket, followed by ``;``, so a client on the same
machine (CLOCK_MONOTONIC is shared by all processes) can compute each delta's latency.

The last user message says what to stream:

- ``paced RATE N``: N deltas at RATE per second (scheduled times, ``time.sleep`` between);
- ``burst N``: N deltas as fast as the socket takes them;
- anything else: 20 deltas at 1,000 per second.

``GET /v1/models`` advertises a window for every model (so the provider's probe succeeds);
``GET /stats`` answers ``{"connections": n, "requests": [{method, path, arrivedNs}, ...]}``:
accepted TCP connections and every request with the moment its headers were read.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_lock = threading.Lock()
_connections = 0
_requests: list[dict[str, Any]] = []

_PREFIX = b'data: {"id":"b","object":"chat.completion.chunk","created":0,"model":"bench",'
_DELTA = _PREFIX + b'"choices":[{"index":0,"delta":{"content":"%d;"},"finish_reason":null}]}\n\n'
_FINISH = (
    _PREFIX
    + b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    + _PREFIX
    + b'"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":%d,"total_tokens":%d}}\n\n'
    + b"data: [DONE]\n\n"
)


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _plan(body: dict[str, Any]) -> tuple[float, int]:
    """(rate per second, 0 = burst; number of deltas) from the last user message."""
    text = ""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            break
    words = text.split()
    if len(words) >= 3 and words[0] == "paced":
        return float(words[1]), int(words[2])
    if len(words) >= 2 and words[0] == "burst":
        return 0.0, int(words[1])
    return 1000.0, 20


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        global _connections
        super().setup()
        # Nagle's algorithm would hold small chunks back until the previous one is acknowledged
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with _lock:
            _connections += 1

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _record(self) -> None:
        with _lock:
            _requests.append(
                {"method": self.command, "path": self.path, "arrivedNs": time.monotonic_ns()}
            )

    def _json(self, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.endswith("/stats"):
            with _lock:
                self._json({"connections": _connections, "requests": list(_requests)})
            return
        self._record()
        self._json({"object": "list", "data": [{"id": "bench", "max_model_len": 200_000}]})

    def do_POST(self) -> None:
        self._record()
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        rate, count = _plan(body)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        sock = self.connection
        gap = 1.0 / rate if rate > 0 else 0.0
        start = time.monotonic()
        for i in range(count):
            if gap:
                wait = start + i * gap - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            sock.sendall(_chunk(_DELTA % time.monotonic_ns()))
        sock.sendall(_chunk(_FINISH % (count, count + 10)) + b"0\r\n\r\n")


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    sys.stdin.read()
    server.shutdown()


if __name__ == "__main__":
    main()
