"""One live workspace session per conversation, for every front door's workspace.

A conversation's runs share one session (its shell, its read cache), so the session outlives
each run; it is opened again when the conversation's configuration changed (a settings or mode
change), and closed with the conversation or the host.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from lovia.workspace import LocalWorkspace

OutputListener = Callable[[str, str | None, str, str], None]
"""(session id, tool call id, stream, text): a chunk of a shell command's output."""

logger = logging.getLogger("lovia_server.workspace")


class WorkspaceSessions:
    def __init__(self, on_output: OutputListener | None = None) -> None:
        self.on_output = on_output
        self._held: dict[str, tuple[LocalWorkspace, Any]] = {}
        self._lock = asyncio.Lock()

    def held(self, session_id: str) -> tuple[LocalWorkspace, Any] | None:
        """The conversation's configuration and live session, if one is open."""
        return self._held.get(session_id)

    async def session(self, session_id: str, config: LocalWorkspace) -> Any:
        """The conversation's live session under ``config`` (reopened when it changed)."""
        async with self._lock:
            held = self._held.get(session_id)
            if held is not None and held[0] == config:
                return held[1]
            if held is not None:
                await close_quietly(held[1])
            session = await config.open()
            listener = self.on_output
            if listener is not None:
                session.output_listener = lambda call_id, stream, text: listener(
                    session_id, call_id, stream, text
                )
            self._held[session_id] = (config, session)
            return session

    def repolicy(self, session_id: str, config: LocalWorkspace) -> None:
        """Give an open session ``config``'s policy at once (a run in it sees the change)."""
        held = self._held.get(session_id)
        if held is not None:
            held[1].policy = config.policy
            self._held[session_id] = (config, held[1])

    async def close(self, session_id: str) -> None:
        async with self._lock:
            held = self._held.pop(session_id, None)
        if held is not None:
            await close_quietly(held[1])

    async def aclose(self) -> None:
        async with self._lock:
            held = list(self._held.values())
            self._held.clear()
        for _, session in held:
            await close_quietly(session)


async def close_quietly(session: Any) -> None:
    """Close a workspace session; a failure to close is only logged."""
    try:
        await session.close()
    except Exception:
        logger.debug("workspace.close_failed", exc_info=True)


__all__ = ["OutputListener", "WorkspaceSessions", "close_quietly"]
