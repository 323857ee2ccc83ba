"""The sandbox's network gate: the host-side proxy alone (real unix and TCP sockets), and the
proxy with its bridge through a real bubblewrap sandbox."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lovia.workspace import CommandRule, LocalWorkspaceSession, WorkspacePolicy
from lovia.workspace.allowed_hosts import parse_allowlist
from lovia.workspace.sandbox import BubblewrapExecutor
from lovia.workspace.sandbox_proxy import ProxyServer, bridge_python
from tests.support.counting_server import CountingServer


def _gone(path: str) -> bool:
    return not os.path.lexists(path)


@pytest.fixture
def web() -> Iterator[CountingServer]:
    server = CountingServer()
    yield server
    server.close()


async def _ask(proxy: ProxyServer, head: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_unix_connection(proxy.socket_path)
    writer.write(head.encode())
    await writer.drain()
    return reader, writer


async def _status(reader: asyncio.StreamReader) -> str:
    line = await asyncio.wait_for(reader.readline(), 10)
    return line.decode().rstrip()


class TestProxyServer:
    async def test_connect_to_an_allowed_host_tunnels(self, web: CountingServer) -> None:
        proxy = await ProxyServer(parse_allowlist([f"127.0.0.1:{web.port}"])).start()
        try:
            reader, writer = await _ask(proxy, f"CONNECT 127.0.0.1:{web.port} HTTP/1.1\r\n\r\n")
            assert await _status(reader) == "HTTP/1.1 200 Connection established"
            await reader.readline()
            writer.write(b"GET /tunnel HTTP/1.1\r\nHost: x\r\n\r\n")
            await writer.drain()
            body = await asyncio.wait_for(reader.read(), 10)
            assert body.endswith(b"hello from the host")
            writer.close()
        finally:
            await proxy.close()
        assert web.requests == ["GET /tunnel HTTP/1.1"]

    async def test_plain_http_is_forwarded_in_origin_form(self, web: CountingServer) -> None:
        proxy = await ProxyServer(parse_allowlist([f"127.0.0.1:{web.port}"])).start()
        try:
            url = f"http://127.0.0.1:{web.port}/plain?q=1"
            reader, writer = await _ask(
                proxy, f"GET {url} HTTP/1.1\r\nHost: x\r\nProxy-Connection: keep-alive\r\n\r\n"
            )
            assert (await asyncio.wait_for(reader.read(), 10)).endswith(b"hello from the host")
            writer.close()
        finally:
            await proxy.close()
        assert web.requests == ["GET /plain?q=1 HTTP/1.1"]

    @pytest.mark.parametrize(
        "target",
        [
            "CONNECT 127.0.0.1:{port}",  # not allowlisted
            "CONNECT localhost:{port}",
            "CONNECT 127.1:{port}",  # shorthand IP
            "CONNECT [::ffff:127.0.0.1]:{port}",
            "GET http://127.0.0.1:{port}/",
            "GET http://allowed.example@127.0.0.1:{port}/",
        ],
    )
    async def test_refused_hosts_are_never_connected(
        self, web: CountingServer, target: str
    ) -> None:
        refusals: list[str] = []
        proxy = await ProxyServer(
            parse_allowlist(["allowed.example"]), hint="add it to X", on_refused=refusals.append
        ).start()
        try:
            reader, writer = await _ask(proxy, target.format(port=web.port) + " HTTP/1.1\r\n\r\n")
            status = await _status(reader)
            writer.close()
        finally:
            await proxy.close()
        assert status.startswith(("HTTP/1.1 403 lovia sandbox:", "HTTP/1.1 400 lovia sandbox:"))
        if " 403 " in status:
            assert status.endswith("is not allowed; add it to X") and refusals
        assert web.connections == 0

    async def test_an_allowed_name_that_resolves_locally_is_refused(
        self, web: CountingServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """DNS rebinding: an allowlisted name pointing at 127.0.0.1 never reaches it."""
        loop = asyncio.get_running_loop()

        async def rebound(host: str, port: int, **kw: Any) -> list[Any]:
            assert host == "rebind.example"
            return [(2, 1, 6, "", ("127.0.0.1", port))]

        monkeypatch.setattr(loop, "getaddrinfo", rebound)
        proxy = await ProxyServer(parse_allowlist([f"rebind.example:{web.port}"])).start()
        try:
            reader, writer = await _ask(
                proxy, f"CONNECT rebind.example:{web.port} HTTP/1.1\r\n\r\n"
            )
            status = await _status(reader)
            writer.close()
        finally:
            await proxy.close()
        assert "resolves to a local address" in status
        assert web.connections == 0

    async def test_refused_names_are_not_resolved(self, monkeypatch: pytest.MonkeyPatch) -> None:
        loop = asyncio.get_running_loop()
        looked_up: list[str] = []

        async def record(host: str, *a: Any, **kw: Any) -> list[Any]:
            looked_up.append(host)
            raise OSError("no lookups in this test")

        monkeypatch.setattr(loop, "getaddrinfo", record)
        proxy = await ProxyServer(parse_allowlist(["pypi.org"])).start()
        try:
            reader, writer = await _ask(proxy, "CONNECT evil.example:443 HTTP/1.1\r\n\r\n")
            assert "evil.example is not allowed" in await _status(reader)
            writer.close()
        finally:
            await proxy.close()
        assert looked_up == []

    async def test_many_concurrent_tunnels(self, web: CountingServer) -> None:
        proxy = await ProxyServer(parse_allowlist([f"127.0.0.1:{web.port}"])).start()

        async def one(i: int) -> bytes:
            reader, writer = await _ask(
                proxy,
                f"GET http://127.0.0.1:{web.port}/{i} HTTP/1.1\r\nHost: x\r\n\r\n",
            )
            data = await asyncio.wait_for(reader.read(), 20)
            writer.close()
            return data

        try:
            bodies = await asyncio.gather(*(one(i) for i in range(60)))
        finally:
            await proxy.close()
        assert all(b.endswith(b"hello from the host") for b in bodies)
        assert sorted(web.requests) == sorted(f"GET /{i} HTTP/1.1" for i in range(60))

    async def test_close_cuts_open_tunnels_and_removes_the_socket(
        self, web: CountingServer
    ) -> None:
        proxy = await ProxyServer(parse_allowlist([f"127.0.0.1:{web.port}"])).start()
        reader, writer = await _ask(proxy, f"CONNECT 127.0.0.1:{web.port} HTTP/1.1\r\n\r\n")
        assert (await _status(reader)).endswith("200 Connection established")
        path = proxy.socket_path
        await asyncio.wait_for(proxy.close(), 5)
        assert await asyncio.wait_for(reader.read(), 5) in (b"\r\n", b"")
        assert _gone(path) and _gone(os.path.dirname(path))
        writer.close()


needs_bwrap = pytest.mark.skipif(
    not BubblewrapExecutor.available() or bridge_python() is None,
    reason="needs bwrap and a system python3",
)

NET_PROBE = (
    'python3 -c "import socket, sys\n'
    "try:\n"
    "    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=3); print('direct')\n"
    "except OSError:\n"
    "    print('no direct')\" {port}"
)


@needs_bwrap
class TestThroughTheSandbox:
    def session(
        self, root: Path, executor: BubblewrapExecutor, *rules: CommandRule
    ) -> LocalWorkspaceSession:
        policy = WorkspacePolicy.coding(command_rules=rules)
        return LocalWorkspaceSession(root, policy=policy, executor=executor)

    async def test_an_allowlisted_host_is_reachable_through_the_proxy(
        self, root: Path, web: CountingServer
    ) -> None:
        executor = BubblewrapExecutor(allowed_domains=(f"127.0.0.1:{web.port}",))
        s = self.session(root, executor, CommandRule("curl", "allow"))
        try:
            plain = await s.run(f"curl -sS http://127.0.0.1:{web.port}/plain")
            tunnel = await s.run(f"curl -sS -p http://127.0.0.1:{web.port}/tunnel")
            direct = await s.run(NET_PROBE.format(port=web.port))
        finally:
            await s.close()
        assert plain.stdout == "hello from the host" and tunnel.stdout == "hello from the host"
        assert direct.stdout.strip() == "no direct"  # allowlisted, but only via the proxy
        assert web.requests == ["GET /plain HTTP/1.1", "GET /tunnel HTTP/1.1"]
        assert web.connections == 2

    async def test_anything_else_is_refused_with_a_message(
        self, root: Path, web: CountingServer
    ) -> None:
        executor = BubblewrapExecutor(allowed_domains=("pypi.org",))
        s = self.session(root, executor, CommandRule("curl", "allow"))
        try:
            r = await s.run(f"curl -sS http://127.0.0.1:{web.port}/exfil?d=secret")
            direct = await s.run(NET_PROBE.format(port=web.port))
        finally:
            await s.close()
        message = f"lovia sandbox: network access to 127.0.0.1:{web.port} is not allowed"
        assert message in r.stdout  # the 403 body curl prints
        assert message in r.stderr  # and the note the executor adds
        assert direct.stdout.strip() == "no direct"
        assert web.connections == 0

    async def test_without_a_gate_there_is_no_proxy_and_no_network(
        self, root: Path, web: CountingServer
    ) -> None:
        s = self.session(root, BubblewrapExecutor(), CommandRule("curl", "allow"))
        try:
            r = await s.run(f"curl -sS http://127.0.0.1:{web.port}/")
            env = await s.run("echo ${HTTP_PROXY:-none}")
        finally:
            await s.close()
        assert r.exit_code != 0 and env.stdout.strip() == "none"
        assert web.connections == 0

    async def test_an_approved_network_command_gets_the_network_once(
        self, root: Path, web: CountingServer
    ) -> None:
        executor = BubblewrapExecutor(approved_network=True, network_gate=True)
        s = self.session(root, executor, CommandRule("python3", "allow"))
        url = f"http://127.0.0.1:{web.port}/approved"
        try:
            assert s.decide_command(f"curl -sS {url}") == "ask"  # goes through approval
            approved = await s.run(f"curl -sS --noproxy '*' {url}")
            unasked = await s.run(NET_PROBE.format(port=web.port))  # allowed, not a net command
        finally:
            await s.close()
        assert approved.stdout == "hello from the host"
        assert unasked.stdout.strip() == "no direct"
        assert web.requests == ["GET /approved HTTP/1.1"]
        assert "network access once" in executor.approval_note("curl -sS example.com")
        assert "without network access" in executor.approval_note("make test")

    async def test_proxies_close_with_the_command_and_the_session(
        self, root: Path, web: CountingServer
    ) -> None:
        executor = BubblewrapExecutor(allowed_domains=(f"127.0.0.1:{web.port}",))
        s = self.session(root, executor, CommandRule("sleep", "allow"))
        await s.run("true")
        runner = s._shell_runner()
        assert runner.proxies == set()  # a foreground command's proxy ends with it
        bg = await s.spawn("sleep 30")
        (proxy,) = runner.proxies
        path = proxy.socket_path
        assert not _gone(path)
        await s.kill_process(bg.process_id)
        for _ in range(100):
            if not runner.proxies:
                break
            await asyncio.sleep(0.02)
        assert runner.proxies == set() and _gone(path)
        bg = await s.spawn("sleep 30")
        (proxy,) = runner.proxies
        await s.close()
        assert proxy.closed and _gone(proxy.socket_path)
