"""Fixtures of the built-in tool tests: a routed local web server, plain and over TLS."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lovia.run_context import RunContext
from tests.support.web_server import WebServer

_EXT = """\
subjectAltName=IP:127.0.0.1,DNS:localhost
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid,issuer
"""


@dataclass
class TestCA:
    ca_pem: Path
    server_pem: Path
    server_key: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.server_pem, self.server_key)
        return context


@pytest.fixture(scope="session")
def test_ca(tmp_path_factory: pytest.TempPathFactory) -> TestCA:
    """A throwaway CA and a server certificate for 127.0.0.1 (made with the openssl CLI)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is needed to make test certificates")
    d = tmp_path_factory.mktemp("tls")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], cwd=d, check=True, capture_output=True, timeout=60)

    run("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "30",
        "-subj", "/CN=lovia test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")  # fmt: skip
    (d / "ext.cnf").write_text(_EXT)
    run("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "server.pem", "-days", "30", "-extfile", "ext.cnf")  # fmt: skip
    return TestCA(d / "ca.pem", d / "server.pem", d / "server.key")


@pytest.fixture
def web() -> Iterator[WebServer]:
    with WebServer() as server:
        yield server


@pytest.fixture
def tls_web(test_ca: TestCA) -> Iterator[WebServer]:
    with WebServer(tls=test_ca.server_context()) as server:
        yield server


@pytest.fixture(autouse=True)
def _no_tls_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests start from the default TLS settings and no search keys."""
    for name in (
        "LOVIA_HTTP_INSECURE",
        "LOVIA_HTTP_CA_BUNDLE",
        "TAVILY_API_KEY",
        "TAVILY_BASE_URL",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def ctx() -> RunContext[Any]:
    return RunContext(context=None, entries=[], agent=None)
