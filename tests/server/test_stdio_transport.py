"""Both front doors over ``transport.serve_stdio`` with stdin that is not a pipe.

Editors start the server with pipes; a file (a recorded session replayed) or a terminal (a
developer typing) must work too, read by the event loop without a thread: the process answers,
and ends at the end of its input.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import pytest

INITIALIZE = {"processId": None, "rootUri": None, "capabilities": {}}


def lsp_frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def acp_frame(message: dict[str, object]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def door(kind: str, state: Path) -> list[str]:
    if kind == "lsp":
        return [sys.executable, "-m", "lovia_server"]
    return [sys.executable, "-m", "lovia_server.acp", "--state-dir", str(state)]


def first_request(kind: str) -> bytes:
    if kind == "lsp":
        return lsp_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE})
    params = {"protocolVersion": 1, "clientCapabilities": {}}
    return acp_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})


def answered(kind: str, out: bytes) -> bool:
    if kind == "lsp":
        return b'"id": 1' in out or b'"id":1' in out
    return any(json.loads(line).get("id") == 1 for line in out.splitlines() if line.strip())


@pytest.mark.parametrize("kind", ["lsp", "acp"])
def test_a_file_as_stdin_is_read_to_its_end(kind: str, tmp_path: Path) -> None:
    messages = tmp_path / "in.bin"
    messages.write_bytes(first_request(kind))
    with messages.open("rb") as stdin:
        done = subprocess.run(
            door(kind, tmp_path / "state"),
            stdin=stdin,
            capture_output=True,
            timeout=60,
            cwd=tmp_path,
        )
    assert answered(kind, done.stdout), done.stderr.decode()[-2000:]


@pytest.mark.parametrize("kind", ["lsp", "acp"])
def test_a_terminal_as_stdin_is_read_and_left_blocking(kind: str, tmp_path: Path) -> None:
    master, slave = pty.openpty()
    os.system(f"stty -echo raw < {os.ttyname(slave)}")  # bytes as they are, none echoed back
    proc = subprocess.Popen(
        door(kind, tmp_path / "state"),
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    try:
        os.write(master, first_request(kind))
        out = b""
        deadline = time.monotonic() + 60
        while not answered(kind, out) and time.monotonic() < deadline:
            out += os.read(proc.stdout.fileno(), 65536)  # type: ignore[union-attr]
        assert answered(kind, out)
        # the terminal is the user's shell's too: the server must not leave it non-blocking
        assert not fcntl.fcntl(slave, fcntl.F_GETFL) & os.O_NONBLOCK
    finally:
        os.close(master)  # the terminal hangs up: the end of the input
        try:
            proc.wait(timeout=30)
        finally:
            proc.kill()
            os.close(slave)
            proc.stdout.close()  # type: ignore[union-attr]
            proc.stderr.close()  # type: ignore[union-attr]
    assert proc.returncode is not None
