"""A local HTTP server on 127.0.0.1 that counts every TCP connection it accepts.

The sandbox tests assert that *nothing* reached it (not even a connection without a request),
or exactly the requests that went through the sandbox's proxy.
"""

from __future__ import annotations

import socket
import threading


class CountingServer:
    """A local HTTP server that counts every TCP connection it accepts."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.requests: list[str] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                self.requests.append(data.split(b"\r\n", 1)[0].decode("latin-1"))
                body = b"hello from the host"
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                    % (len(body), body)
                )

    def close(self) -> None:
        self.sock.close()
