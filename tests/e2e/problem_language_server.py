"""A tiny language server that reports one problem: every ``undefined_name`` in an open
document is an error (source ``pyflakes``), published again after each change, so a fix makes
the problem go away. Full text sync, plain stdin/stdout JSON-RPC, no dependencies: the user's
own language server, next to lovia, in the Neovim tests."""

from __future__ import annotations

import json
import re
import sys
from typing import Any

WORD = re.compile(r"\bundefined_name\b")


def read() -> dict[str, Any] | None:
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    message: dict[str, Any] = json.loads(sys.stdin.buffer.read(length))
    return message


def send(message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    sys.stdout.buffer.flush()


def publish(uri: str, text: str) -> None:
    problems = [
        {
            "range": {
                "start": {"line": number, "character": found.start()},
                "end": {"line": number, "character": found.end()},
            },
            "severity": 1,
            "source": "pyflakes",
            "message": "undefined name 'undefined_name'",
        }
        for number, line in enumerate(text.split("\n"))
        for found in WORD.finditer(line)
    ]
    send(
        {
            "method": "textDocument/publishDiagnostics",
            "params": {"uri": uri, "diagnostics": problems},
        }
    )


def main() -> None:
    while (message := read()) is not None:
        method, params = message.get("method"), message.get("params") or {}
        if method == "initialize":
            send({"id": message["id"], "result": {"capabilities": {"textDocumentSync": 1}}})
        elif method == "shutdown":
            send({"id": message["id"], "result": None})
        elif method == "exit":
            return
        elif method == "textDocument/didOpen":
            document = params["textDocument"]
            publish(document["uri"], document["text"])
        elif method == "textDocument/didChange":
            publish(params["textDocument"]["uri"], params["contentChanges"][-1]["text"])
        elif "id" in message:
            send({"id": message["id"], "result": None})


if __name__ == "__main__":
    main()
