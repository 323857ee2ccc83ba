"""Test harness: the real ``lovia_server`` process driven by a pytest-lsp client.

Each test gets a fresh workspace folder, a state directory and a server process. Events are
captured as they arrive (``lovia/event``); helpers wait for kinds and answer server requests.
"""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any, Union

from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, client_capabilities
from pytest_lsp.client import LanguageClient, register_lsp_features

from lovia_server.lsp.editor_intel import plain_payload
from lovia_server.lsp.language_server import converter_factory

SERVER_CMD = [sys.executable, "-m", "lovia_server"]


class Harness:
    def __init__(self, root: Path, state_dir: Path) -> None:
        self.root = root
        self.state_dir = state_dir
        self.client: LanguageClient | None = None
        self.events: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self.apply_edits: list[Any] = []
        self.apply_edit_result = True
        self.apply_edit_delay = 0.0
        self.apply_edit_release = asyncio.Event()
        # A client that applies edits to its own documents (tests/server/vscode_client.py).
        self.apply_edit_handler: Callable[[Any], lsp.ApplyWorkspaceEditResult] | None = None
        self.message_requests: list[Any] = []
        self.message_choice: Callable[[Any], str | None] = lambda params: None
        self.message_unanswered: Callable[[Any], bool] = lambda params: False
        self.message_request_unsupported = False
        """Answer ``window/showMessageRequest`` with "method not found", as Helix does."""
        self._hung = asyncio.Event()
        self.initialize_result: Any = None

    # ------------------------------------------------------------------ lifecycle

    async def start(
        self,
        *,
        settings: dict[str, Any] | None = None,
        init_options: dict[str, Any] | None = None,
        capabilities: str = "visual-studio-code",
        env: dict[str, str] | None = None,
        folders: list[Path] | None = None,
        log_file: Path | None = None,
        adjust: Callable[[lsp.ClientCapabilities], None] | None = None,
    ) -> LanguageClient:
        """``log_file``: the server logs there (``--log-file``) instead of to stderr;
        ``adjust`` changes the client's declared capabilities before ``initialize``."""
        config = ClientServerConfig(
            server_command=SERVER_CMD + (["--log-file", str(log_file)] if log_file else []),
            client_factory=_make_client,
            server_env={**os.environ, "LOVIA_CONFIG_TIMEOUT": "2", **(env or {})},
        )
        client = await config.start()
        self.client = client
        client.set_configuration(settings or {}, section="lovia")

        @client.feature("lovia/event")
        def on_event(params: Any) -> None:
            self.events.append(plain_payload(params))
            self._changed.set()

        @client.feature(lsp.WORKSPACE_APPLY_EDIT)
        async def on_apply_edit(
            params: lsp.ApplyWorkspaceEditParams,
        ) -> lsp.ApplyWorkspaceEditResult:
            self.apply_edits.append(params)
            if self.apply_edit_handler is not None:
                return self.apply_edit_handler(params)
            if self.apply_edit_delay:  # an editor stuck on a prompt until the test releases it
                try:
                    await asyncio.wait_for(self.apply_edit_release.wait(), self.apply_edit_delay)
                except TimeoutError:
                    pass
            return lsp.ApplyWorkspaceEditResult(applied=self.apply_edit_result)

        @client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
        async def on_message_request(params: lsp.ShowMessageRequestParams) -> Any:
            self.message_requests.append(params)
            if self.message_request_unsupported:
                from pygls.exceptions import JsonRpcMethodNotFound

                raise JsonRpcMethodNotFound.of(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
            if self.message_unanswered(params):  # eglot after C-g: no reply at all
                await self._hung.wait()  # (until the test ends)
                return None
            title = self.message_choice(params)
            return None if title is None else lsp.MessageActionItem(title=title)

        folders = folders or [self.root]
        # This client applies no edits itself: the server writes unless a test asks otherwise.
        opts = {
            "protocolVersion": 1,
            "client": "pytest",
            "stateDir": str(self.state_dir),
            "editMode": "server",
        }
        opts.update(init_options or {})
        declared = client_capabilities(capabilities)
        if adjust is not None:
            adjust(declared)
        params = lsp.InitializeParams(
            capabilities=declared,
            root_uri=self.root.as_uri(),
            workspace_folders=[lsp.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
            initialization_options={"lovia": opts} if init_options is not False else None,
        )
        self.initialize_result = await client.initialize_session(params)
        return client

    async def stop(self) -> None:
        self._hung.set()
        if self.client is not None:
            try:
                await asyncio.wait_for(self.client.shutdown_session(), 15)
            except Exception:
                pass
            await self.client.stop()

    async def kill(self) -> None:
        """``kill -9`` of the server process, as a crash would; ``start`` brings up a new one."""
        assert self.client is not None
        proc = self.client._server
        proc.kill()
        await proc.wait()
        try:
            await asyncio.wait_for(self.client.stop(), 5)
        except Exception:
            pass
        self.client = None

    # ------------------------------------------------------------------ requests

    async def request(self, method: str, params: Any) -> Any:
        assert self.client is not None
        result = await self.client.protocol.send_request_async(method, params)
        return plain_payload(result)

    async def run(self, prompt: str = "go", **params: Any) -> dict[str, Any]:
        return await self.request("lovia/run", {"prompt": prompt, **params})

    # ------------------------------------------------------------------ events

    def of_run(self, run_id: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["runId"] == run_id]

    def kinds(self, run_id: str) -> list[str]:
        return [e["kind"] for e in self.of_run(run_id)]

    async def wait_for(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        *,
        within: float = 60,  # a busy 2-core machine: server start-up and imports are slow
    ) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        seen = 0
        while True:
            for event in self.events[seen:]:
                if predicate(event):
                    return event
            seen = len(self.events)
            remaining = deadline - loop.time()
            if remaining <= 0:
                kinds = [(e["runId"][-6:], e["seq"], e["kind"]) for e in self.events]
                raise TimeoutError(f"event not seen; got {kinds}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                pass

    async def wait_kind(self, run_id: str, kind: str, **fields: Any) -> dict[str, Any]:
        return await self.wait_for(
            lambda e: (
                e["runId"] == run_id
                and e["kind"] == kind
                and all(e.get(k) == v for k, v in fields.items())
            )
        )

    async def finished(self, run_id: str) -> dict[str, Any]:
        return await self.wait_kind(run_id, "run.finished")

    async def approve_all(self, run_id: str, decision: str = "allow_once") -> dict[str, Any]:
        """Answer every approval of a run until it finishes; returns ``run.finished``."""
        handled: set[str] = set()
        while True:
            event = await self.wait_for(
                lambda e: (
                    e["runId"] == run_id
                    and (
                        e["kind"] == "run.finished"
                        or (e["kind"] == "approval.requested" and e["approvalId"] not in handled)
                    )
                )
            )
            if event["kind"] == "run.finished":
                return event
            handled.add(event["approvalId"])
            await self.request(
                "lovia/approve",
                {"runId": run_id, "approvalId": event["approvalId"], "decision": decision},
            )

    # ------------------------------------------------------------------ files

    def write_agent(self, body: str, name: str = "agent.py") -> str:
        path = self.root / name
        path.write_text(textwrap.dedent(body))
        return f"{name}:agent"


def _client_converter() -> Any:
    """The server's converter, plus a code-action hook that tells a ``CodeAction`` carrying a
    command from a bare ``Command`` (lsprotocol's takes any object with ``command`` for one)."""
    converter = converter_factory()

    def code_action(obj: Any, _: type) -> lsp.Command | lsp.CodeAction:
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, lsp.Command)
        return converter.structure(obj, lsp.CodeAction)

    converter.register_structure_hook(lsp.Command | lsp.CodeAction, code_action)
    converter.register_structure_hook(Union[lsp.Command, lsp.CodeAction], code_action)  # noqa: UP007
    return converter


def _make_client() -> LanguageClient:
    """pytest-lsp's client, but custom payloads stay plain dicts (keys like ``_raw`` survive)."""
    client = LanguageClient(converter_factory=_client_converter)
    register_lsp_features(client)
    return client


AGENT_HEADER = """
import asyncio
from pathlib import Path

from lovia import Agent, tool
from lovia.testing import ScriptedProvider, batch, call, text

ROOT = Path(__file__).parent


async def wait_for_file(name: str, timeout: float = 30) -> None:
    for _ in range(int(timeout * 50)):
        if (ROOT / name).exists():
            return
        await asyncio.sleep(0.02)
    raise TimeoutError(name)
"""
