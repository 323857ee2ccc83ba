"""`lovia acp` as a real subprocess, driven by the Python SDK's client side.

``AcpProcess`` spawns ``python -m lovia_server.acp``, tees its stdout (every byte is kept, so a
test can check that nothing but JSON-RPC frames was written) into the SDK's
``connect_to_agent`` connection, and ``RecordingClient`` records what the agent sends:
``session/update`` notifications, permission requests, file reads and writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp import RequestError, connect_to_agent
from acp import schema as a

AGENT_CMD = [sys.executable, "-m", "lovia_server.acp"]


class RecordingClient:
    """An ACP client: unsaved buffers by path, permission answers from a queue or a rule."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self.permissions: list[tuple[a.ToolCallUpdate, list[a.PermissionOption]]] = []
        self.answers: list[str | None] = []  # option ids, in order; None = cancelled
        self.hold_permissions = False  # leave requests unanswered (a crash test kills us)
        self.buffers: dict[str, str] = {}
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.hold_writes = False
        self.release_writes = asyncio.Event()
        self.changed = asyncio.Event()

    # ------------------------------------------------------------------ Client protocol

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self.changed.set()

    async def request_permission(
        self,
        options: list[a.PermissionOption],
        session_id: str,
        tool_call: a.ToolCallUpdate,
        **kwargs: Any,
    ) -> a.RequestPermissionResponse:
        self.permissions.append((tool_call, options))
        self.changed.set()
        if self.hold_permissions:
            await asyncio.Event().wait()
        while not self.answers:
            await self._wait_change()
        answer = self.answers.pop(0)
        if answer is None:
            return a.RequestPermissionResponse(outcome=a.DeniedOutcome(outcome="cancelled"))
        assert answer in {o.option_id for o in options}, (answer, options)
        return a.RequestPermissionResponse(
            outcome=a.AllowedOutcome(outcome="selected", option_id=answer)
        )

    async def read_text_file(
        self,
        path: str,
        session_id: str,
        limit: int | None = None,
        line: int | None = None,
        **kwargs: Any,
    ) -> a.ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            return a.ReadTextFileResponse(content=self.buffers[path])
        try:
            return a.ReadTextFileResponse(content=await asyncio.to_thread(Path(path).read_text))
        except OSError:
            raise RequestError.resource_not_found(path) from None

    async def write_text_file(
        self, content: str, path: str, session_id: str, **kwargs: Any
    ) -> a.WriteTextFileResponse:
        self.writes.append((path, content))
        if self.hold_writes:  # an editor stuck on a prompt of its own
            await self.release_writes.wait()
            return a.WriteTextFileResponse()
        self.buffers.pop(path, None)
        await asyncio.to_thread(Path(path).write_text, content)  # an editor that saves
        return a.WriteTextFileResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None

    # ------------------------------------------------------------------ helpers

    async def _wait_change(self, within: float = 60) -> None:
        self.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.changed.wait(), within)

    def answer(self, *option_ids: str | None) -> None:
        self.answers.extend(option_ids)
        self.changed.set()

    def of(self, session_id: str, kind: str | None = None) -> list[Any]:
        return [
            u
            for sid, u in self.updates
            if sid == session_id and (kind is None or u.session_update == kind)
        ]

    async def wait_for(self, predicate: Callable[[], Any], within: float = 90) -> Any:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            value = predicate()
            if value:
                return value
            if loop.time() > deadline:
                kinds = [u.session_update for _, u in self.updates]
                raise TimeoutError(f"not seen; updates so far: {kinds}")
            await self._wait_change(min(1.0, max(0.01, deadline - loop.time())))


def dump(update: Any) -> dict[str, Any]:
    return update.model_dump(mode="json", by_alias=True, exclude_none=True)


def message_text(updates: list[Any], kind: str = "agent_message_chunk") -> str:
    return "".join(u.content.text for u in updates if u.session_update == kind)


class AcpProcess:
    """One ``lovia acp`` process and the SDK client connected to it."""

    def __init__(self, state_dir: Path, *, env: dict[str, str] | None = None) -> None:
        self.state_dir = state_dir
        self.env = env or {}
        self.client = RecordingClient()
        self.proc: asyncio.subprocess.Process | None = None
        self.conn: Any = None
        self.stdout = bytearray()
        self.stderr_path = state_dir.parent / f"acp-stderr-{id(self)}.log"
        self._pump: asyncio.Task[None] | None = None

    async def start(self, *args: str, fs: bool = True) -> a.InitializeResponse:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.env}
        stderr = self.stderr_path.open("ab")
        self.proc = await asyncio.create_subprocess_exec(
            *AGENT_CMD,
            "--state-dir",
            str(self.state_dir),
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=env,
        )
        stderr.close()
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
        assert self.proc.stdout is not None and self.proc.stdin is not None

        async def pump() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            while data := await self.proc.stdout.read(1 << 16):
                self.stdout.extend(data)
                reader.feed_data(data)
            reader.feed_eof()

        self._pump = asyncio.get_running_loop().create_task(pump())
        self.conn = connect_to_agent(
            self.client, self.proc.stdin, reader, use_unstable_protocol=True
        )
        caps = a.ClientCapabilities(
            fs=a.FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=False
        )
        return await asyncio.wait_for(
            self.conn.initialize(protocol_version=1, client_capabilities=caps), 60
        )

    async def new_session(self, cwd: Path, **kwargs: Any) -> a.NewSessionResponse:
        return await self.conn.new_session(cwd=str(cwd), mcp_servers=[], **kwargs)

    async def prompt(self, session_id: str, text: str) -> a.PromptResponse:
        return await asyncio.wait_for(
            self.conn.prompt(
                session_id=session_id, prompt=[a.TextContentBlock(type="text", text=text)]
            ),
            120,
        )

    def frames(self) -> list[dict[str, Any]]:
        """Every line the process wrote to stdout, parsed (fails on anything but JSON-RPC)."""
        lines = bytes(self.stdout).split(b"\n")
        assert lines[-1] == b"", "stdout ends mid-frame"
        out = []
        for line in lines[:-1]:
            frame = json.loads(line)
            assert frame.get("jsonrpc") == "2.0", frame
            out.append(frame)
        return out

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""

    async def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        await self.proc.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.conn.close(), 5)

    async def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.returncode is None and self.proc.stdin is not None:
            with contextlib.suppress(Exception):
                self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), 20)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.conn.close(), 5)
        if self._pump is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._pump, 5)
