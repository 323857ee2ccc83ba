"""The sandbox the server's runs use: ``lovia.sandbox`` → a shell executor and its status.

Shared by the editor (LSP) host and ``lovia acp`` through
:func:`lovia_server.host.acl.folder_config`, so both confine commands alike. Where bubblewrap
works, commands run in it by default:

* a command that may run may write inside the workspace (not its denied or protected
  paths), never outside, whatever the review-first ``write: ask`` says about the file tools:
  edits are reviewed through the file tools, a command's effects through restore points;
* network: ``deny`` — only ``allowedDomains`` through the proxy; ``ask`` (the default) — a
  network command the user approved (``pip install``, ``git fetch``) also gets the network,
  for that run; ``allow`` — every command has the host's network.

``enabled: on`` where bubblewrap cannot run is a settings problem, and commands then refuse to
run rather than run unconfined.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from lovia.workspace import WorkspaceError, WorkspacePolicy
from lovia.workspace.sandbox import BubblewrapExecutor
from lovia.workspace.types import CommandResult
from lovia_server.protocol.settings import SandboxSettings

BWRAP_ENV = "LOVIA_SANDBOX_BWRAP"
"""The bubblewrap program to use (default ``bwrap``); tests point it at a missing one."""
NETWORK_HINT = "add it to lovia.sandbox.allowedDomains"
NOT_SANDBOXED = "Shell commands are not sandboxed on this machine"


@dataclass(frozen=True)
class SandboxRequired:
    """The executor for ``enabled: on`` where the sandbox cannot run: every command refuses."""

    reason: str
    sandboxed: ClassVar[bool] = False

    def _error(self) -> WorkspaceError:
        return WorkspaceError(
            f"Shell commands must run in the sandbox (lovia.sandbox.enabled is 'on'), but "
            f"{self.reason}.",
            hint="Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) or set "
            "lovia.sandbox.enabled to 'auto'.",
        )

    async def run(
        self,
        command: str,
        *,
        cwd: Path,
        env: Mapping[str, str],
        timeout: float | None,  # noqa: ASYNC109 - ShellExecutor API
        policy: WorkspacePolicy,
        root: Path,
    ) -> CommandResult:
        raise self._error()

    def wrap_argv(self, command: str, **_: Any) -> list[str]:
        raise self._error()


@dataclass(frozen=True)
class SandboxChoice:
    """What ``lovia.sandbox`` comes to on this machine."""

    executor: Any
    """A ``BubblewrapExecutor``, a ``SandboxRequired``, or None (unconfined)."""
    kind: str | None
    reason: str | None
    """Why commands are not sandboxed (or refuse to run); None when they are sandboxed."""
    problem: str | None
    """A settings problem to report (``enabled: on`` where it cannot be honoured)."""


def bwrap_program() -> str:
    return os.environ.get(BWRAP_ENV, "").strip() or "bwrap"


def choose_sandbox(settings: SandboxSettings) -> SandboxChoice:
    """The executor for ``settings`` here (availability is probed once per program)."""
    if settings.enabled == "off":
        return SandboxChoice(None, None, "lovia.sandbox.enabled is 'off'", None)
    bwrap = bwrap_program()
    unavailable = BubblewrapExecutor.unavailable_reason(bwrap)
    if unavailable is not None:
        if settings.enabled == "on":
            problem = (
                f"lovia.sandbox.enabled: 'on', but {unavailable}; shell commands refuse to run"
            )
            return SandboxChoice(SandboxRequired(unavailable), None, problem, problem)
        return SandboxChoice(None, None, f"{NOT_SANDBOXED}: {unavailable}", None)
    executor = BubblewrapExecutor(
        bwrap=bwrap,
        root_writable=True,
        network=settings.network == "allow",
        approved_network=settings.network == "ask",
        allowed_domains=tuple(settings.allowedDomains),
        network_gate=True,
        network_hint=NETWORK_HINT,
    )
    return SandboxChoice(executor, executor.kind, None, None)


def sandbox_status(settings: SandboxSettings) -> Any:
    """``lovia/status``'s ``sandbox`` (a ``protocol.SandboxStatus``)."""
    from lovia_server import protocol as p

    choice = choose_sandbox(settings)
    return p.SandboxStatus(
        kind="bubblewrap" if choice.kind == "bubblewrap" else None,
        enabled=choice.kind is not None,
        setting=settings.enabled,
        network=settings.network,
        allowed_domains=list(settings.allowedDomains),
        reason=choice.reason,
    )


def sandbox_problems(settings: SandboxSettings) -> list[str]:
    """Settings problems of ``lovia.sandbox`` on this machine (for the settings warnings).
    Only ``on`` can have one, so only then is bubblewrap probed here (settings are read at
    start-up)."""
    if settings.enabled != "on":
        return []
    problem = choose_sandbox(settings).problem
    return [problem] if problem else []


__all__ = [
    "BWRAP_ENV",
    "NETWORK_HINT",
    "NOT_SANDBOXED",
    "SandboxChoice",
    "SandboxRequired",
    "bwrap_program",
    "choose_sandbox",
    "sandbox_problems",
    "sandbox_status",
]
