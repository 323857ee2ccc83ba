"""Worktree runs over ACP: the ``isolation`` session option and the ``_lovia/worktree/*``
extension methods, on the host's :class:`~lovia_server.host.worktree_runs.WorktreeRuns` (the
one implementation ``lovia/worktree/*`` of the language server uses too).

With ``isolation`` set to ``worktree`` a prompt runs in a git worktree of the session's own: the
first one creates it (from the session folder's ``HEAD`` plus its uncommitted changes), the
next ones continue in it while it is open; once it is applied, discarded or kept the next
prompt makes a new one. Back on ``workspace``, prompts run in the session's folder again and
the worktree waits for review. The review itself is the extension methods, with the language
server's params and results.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from acp import RequestError
from acp import schema as a
from pydantic import BaseModel

from lovia_server import protocol as p
from lovia_server.acp.request_errors import invalid_params
from lovia_server.host.worktree_runs import Continue, WorktreeRequest, WorktreeRuns

IsolationId = Literal["workspace", "worktree"]
ISOLATIONS: dict[str, str] = {
    "workspace": "Prompts run in the session's folder (your working copy).",
    "worktree": "Prompts run in a git worktree of the session's own; review and land its "
    "changes with the _lovia/worktree/* methods.",
}
EXT_PREFIX = "lovia/worktree/"


def isolation_option(current: str) -> a.SessionConfigOptionSelect:
    return a.SessionConfigOptionSelect(
        type="select",
        id="isolation",
        name="Isolation",
        current_value=current,
        options=[
            a.SessionConfigSelectOption(value=value, name=value.capitalize(), description=text)
            for value, text in ISOLATIONS.items()
        ],
    )


def check_isolation(value: object) -> IsolationId:
    if value not in ISOLATIONS:
        raise invalid_params(f"Unknown isolation {value!r}", "value", allowed=list(ISOLATIONS))
    return value  # type: ignore[return-value]


class AcpWorktrees:
    """The session's worktree prompts and the review methods, over the host's worktree runs."""

    def __init__(self, runs: WorktreeRuns) -> None:
        self.runs = runs
        self._methods: dict[str, tuple[type[BaseModel], Callable[[Any], Awaitable[Any]]]] = {
            "list": (p.WorktreeListParams, lambda q: self.runs.listing(q.include_closed)),
            "diff": (p.WorktreeRunParams, lambda q: self.runs.diff(q.run_id)),
            "apply": (p.WorktreeApplyParams, self.runs.apply),
            "discard": (p.WorktreeRunParams, lambda q: self.runs.discard(q.run_id)),
            "keep": (p.WorktreeRunParams, lambda q: self.runs.keep(q.run_id)),
        }

    async def prompt(
        self, session_id: str, cwd: Path, prompt: str, model_input: str, continue_: Continue
    ) -> p.LaunchResult:
        """Run the prompt in the session's open worktree, or in a new one."""
        record = await self.runs.of_session(session_id)
        if record is not None and record.state in ("queued", "active"):
            return await self.runs.follow_up(record, continue_)
        return await self.runs.start(
            WorktreeRequest(
                prompt=prompt,
                model_input=model_input,
                cwd=cwd,
                agent=None,
                model=None,
                include_uncommitted=True,
                session_id=session_id,
            )
        )

    async def cancel_queued(self, session_id: str) -> p.RunFinishedEvent | None:
        """``session/cancel`` of a prompt whose worktree waits for a slot: it is dropped, and
        its prompt ends ``cancelled`` (the run never started, so nothing was streamed)."""
        record = await self.runs.of_session(session_id)
        if record is None or not await self.runs.cancel_queued(record.run_id):
            return None
        return p.RunFinishedEvent(
            session_id=session_id,
            run_id=record.run_id,
            seq=1,
            ts=int(time.time() * 1000),
            kind="run.finished",
            status="cancelled",
            usage=p.Usage(),
            resumable=False,
        )

    async def call(self, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        """``_lovia/worktree/<name>``: the language server's method of that name."""
        method = (
            self._methods.get(name.removeprefix(EXT_PREFIX))
            if name.startswith(EXT_PREFIX)
            else None
        )
        if method is None:
            raise RequestError(
                -32601,
                f"Unknown extension method _{name}",
                {"method": f"_{name}", "allowed": [f"_{EXT_PREFIX}{m}" for m in self._methods]},
            )
        params_type, handler = method
        result = await handler(params_type.model_validate(payload))
        wire: dict[str, Any] = result.to_wire()
        return wire


__all__ = ["ISOLATIONS", "AcpWorktrees", "IsolationId", "check_isolation", "isolation_option"]
