"""The sandbox's network gate: an HTTP proxy on a unix socket, and the bridge that reaches it.

A sandboxed command without network runs in its own network namespace (loopback only).
To reach allowlisted hosts it gets ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` pointing at
``127.0.0.1:BRIDGE_PORT`` inside the sandbox, where a tiny bridge (:data:`BRIDGE`, run by
the system ``python3``) forwards each connection to a unix socket bind-mounted from the
host. On the host :class:`ProxyServer` (asyncio) speaks ``CONNECT`` and absolute-form
HTTP requests, allows only what :mod:`lovia.workspace.allowed_hosts` allows, refuses the
rest with a 403 that says how to allow it, and never resolves or connects for a refused
host. One server per command: it knows whom to tell about a refusal, and it is closed
when the command ends (or its workspace session closes).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import shutil
import socket
import tempfile
from collections.abc import Callable
from typing import NoReturn
from urllib.parse import urlsplit

from lovia.workspace.allowed_hosts import (
    AllowedHost,
    is_local_address,
    match,
    normalize_host,
    split_host_port,
)

logger = logging.getLogger("lovia.workspace.sandbox")

BRIDGE_PORT = 43128
"""The port the bridge listens on inside the sandbox's own network namespace."""
SANDBOX_SOCKET = "/tmp/.lovia-proxy.sock"
"""Where the host's proxy socket appears inside the sandbox (its private ``/tmp``)."""
MAX_HEAD = 64 * 1024
MAX_CONNECTIONS = 256
HEAD_TIMEOUT = 30.0
CONNECT_TIMEOUT = 15.0

RefusalListener = Callable[[str], None]
"""Called with the refusal message each time a request is refused."""

# Runs inside the sandbox: python3 -I -S -c BRIDGE SOCKET PORT /bin/sh -c COMMAND.
# It listens first (so the command never races it), then the command replaces this
# process and a forked child forwards connections until the sandbox goes away.
BRIDGE = r"""
import os, socket, sys, threading
path, port, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(128)
if os.fork():
    srv.close()
    os.execv(argv[0], argv)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
def pipe(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def serve(c):
    u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        u.connect(path)
    except OSError:
        c.close()
        return
    t = threading.Thread(target=pipe, args=(u, c), daemon=True)
    t.start()
    pipe(c, u)
    t.join()
    c.close()
    u.close()
while True:
    try:
        c, _ = srv.accept()
    except OSError:
        continue
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

_BRIDGE_PYTHONS = ("/usr/bin/python3", "/bin/python3", "/usr/local/bin/python3")


def bridge_python() -> str | None:
    """The system ``python3`` the bridge runs with (visible in every sandbox scope)."""
    for candidate in _BRIDGE_PYTHONS:
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def proxy_env(port: int = BRIDGE_PORT) -> dict[str, str]:
    """The variables that point the usual HTTP clients (curl, pip, npm, git...) at the
    bridge; ``no_proxy`` is emptied so nothing tries to go around it."""
    url = f"http://127.0.0.1:{port}"
    env = {}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = url
        env[name.lower()] = url
    env["NO_PROXY"] = env["no_proxy"] = ""
    return env


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ProxyServer:
    """An HTTP/``CONNECT`` proxy on a unix socket that only reaches the allowlist."""

    def __init__(
        self,
        allowlist: tuple[AllowedHost, ...],
        *,
        hint: str = "add it to allowed_domains",
        on_refused: RefusalListener | None = None,
    ) -> None:
        self.allowlist = allowlist
        self.hint = hint
        self.on_refused = on_refused
        self.refusals: list[str] = []
        self._dir: str | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._closed = False

    @property
    def socket_path(self) -> str:
        if self._dir is None:
            raise RuntimeError("the proxy is not started")
        return os.path.join(self._dir, "proxy.sock")

    @property
    def closed(self) -> bool:
        return self._closed

    async def start(self) -> ProxyServer:
        base = tempfile.gettempdir()
        if len(base) > 60:  # a unix socket path must stay under 108 bytes
            base = "/tmp"
        self._dir = tempfile.mkdtemp(prefix="lovia-net-", dir=base)
        self._server = await asyncio.start_unix_server(
            self._accept, path=self.socket_path, limit=MAX_HEAD
        )
        return self

    async def close(self) -> None:
        """Stop listening, cut every open connection, remove the socket; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    # ------------------------------------------------------------------ connections

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if self._closed or task is None or len(self._tasks) >= MAX_CONNECTIONS:
            writer.transport.abort()
            return
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            self._writers.discard(writer)
            self._tasks.discard(task)
            writer.transport.abort()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        except (TimeoutError, asyncio.LimitOverrunError):
            await _reply(writer, 400, "lovia sandbox: the proxy request was too slow or too big")
            return
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            await _reply(writer, 400, "lovia sandbox: not an HTTP proxy request")
            return
        method, target, version = parts
        try:
            if method.upper() == "CONNECT":
                host, port = self._connect_target(target)
                upstream = await self._open(host, port)
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await writer.drain()
                first = b""
            else:
                host, port, path = self._http_target(target)
                upstream = await self._open(host, port)
                first = _forwarded_head(method, path, version, lines[1:])
        except _Refused as refused:
            await _reply(writer, refused.status, refused.message)
            return
        up_reader, up_writer = upstream
        self._writers.add(up_writer)
        try:
            if first:
                up_writer.write(first)
            await _splice(reader, writer, up_reader, up_writer)
        finally:
            self._writers.discard(up_writer)
            up_writer.transport.abort()

    def _connect_target(self, target: str) -> tuple[str, int]:
        try:
            raw_host, port = split_host_port(target)
            host = normalize_host(raw_host)
        except ValueError as exc:
            raise _Refused(400, f"lovia sandbox: bad CONNECT target ({exc})") from None
        if port is None:
            raise _Refused(400, "lovia sandbox: CONNECT needs host:port")
        return host, port

    def _http_target(self, target: str) -> tuple[str, int, str]:
        try:
            url = urlsplit(target)
            if url.scheme.lower() != "http" or not url.netloc:
                raise ValueError("only absolute http:// URLs (use CONNECT for https)")
            if "@" in url.netloc or "\\" in target:
                raise ValueError("user info in the URL")
            raw_host, port = split_host_port(url.netloc)
            host = normalize_host(raw_host)
        except ValueError as exc:
            raise _Refused(400, f"lovia sandbox: bad proxy request ({exc})") from None
        path = url.path or "/"
        if url.query:
            path += "?" + url.query
        return host, port or 80, path

    async def _open(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        entry = match(self.allowlist, host, port)
        if entry is None:
            where = host if port in (80, 443) else f"{host}:{port}"
            self._refuse(f"lovia sandbox: network access to {where} is not allowed; {self.hint}")
        if entry.literal:
            addresses = ["127.0.0.1", "::1"] if host == "localhost" else [host]
        else:
            addresses = await self._resolve(host, port)
        last: OSError | None = None
        for address in addresses:
            try:
                return await asyncio.wait_for(
                    asyncio.open_connection(address, port, limit=MAX_HEAD), CONNECT_TIMEOUT
                )
            except (OSError, TimeoutError) as exc:
                last = exc if isinstance(exc, OSError) else OSError(str(exc) or "timed out")
        raise _Refused(502, f"lovia sandbox: cannot connect to {host}:{port} ({last})")

    async def _resolve(self, host: str, port: int) -> list[str]:
        loop = asyncio.get_running_loop()
        try:
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise _Refused(502, f"lovia sandbox: cannot resolve {host} ({exc})") from None
        public: list[str] = []
        for _family, _type, _proto, _name, sockaddr in infos:
            address = str(sockaddr[0]).split("%", 1)[0]
            try:
                ip = ipaddress.ip_address(address)
            except ValueError:
                continue
            if not is_local_address(ip) and address not in public:
                public.append(address)
        if not public:
            self._refuse(
                f"lovia sandbox: {host} resolves to a local address, which an allowed domain "
                "never reaches; allow the address itself to reach it"
            )
        return public

    def _refuse(self, message: str) -> NoReturn:
        self.refusals.append(message)
        if self.on_refused is not None:
            with contextlib.suppress(Exception):
                self.on_refused(message)
        raise _Refused(403, message)


def _forwarded_head(method: str, path: str, version: str, headers: list[str]) -> bytes:
    kept = [
        h
        for h in headers
        if h
        and h.split(":", 1)[0].strip().lower()
        not in ("proxy-connection", "proxy-authorization", "connection", "keep-alive")
    ]
    lines = [f"{method} {path} {version}", *kept, "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1")


async def _reply(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}.get(status, "Error")
    body = (message + "\n").encode("utf-8", "replace")
    # The reason phrase carries the message too: clients print it for a refused CONNECT.
    phrase = message.replace("\r", " ").replace("\n", " ").encode("ascii", "replace")
    head = (
        f"HTTP/1.1 {status} ".encode() + (phrase or reason.encode()) + b"\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\n"
        + f"Content-Length: {len(body)}\r\n".encode()
        + b"Connection: close\r\n\r\n"
    )
    with contextlib.suppress(OSError):
        writer.write(head + body)
        await writer.drain()


async def _splice(
    a_reader: asyncio.StreamReader,
    a_writer: asyncio.StreamWriter,
    b_reader: asyncio.StreamReader,
    b_writer: asyncio.StreamWriter,
) -> None:
    async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        except OSError:
            pass
        with contextlib.suppress(OSError, RuntimeError):
            if dst.can_write_eof():
                dst.write_eof()

    await asyncio.gather(copy(a_reader, b_writer), copy(b_reader, a_writer))


__all__ = [
    "BRIDGE",
    "BRIDGE_PORT",
    "SANDBOX_SOCKET",
    "ProxyServer",
    "RefusalListener",
    "bridge_python",
    "proxy_env",
]
