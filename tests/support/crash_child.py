"""Child process of tests/e2e/test_crash_resume.py: one checkpointed run that may SIGKILL itself.

    python crash_child.py DB RUN_ID LOG_DIR [--delete-on-success]

Runs a four-turn tool-calling run (one call, a parallel batch of three, one call that needs
approval, a final answer) with ``ScriptedProvider`` on ``SQLiteSession`` + ``SQLiteCheckpointer``
sharing the file DB. When a checkpoint for RUN_ID exists, the script continues after the model
turns it already holds, as a real model would continue the conversation.

``LOVIA_CRASH_AT`` names the point where the process kills itself with SIGKILL:

    model_before:N   the run's N-th model call starts, before any output
    model_after:N    the N-th model output was streamed, before it is checkpointed
    saved:N          the N-th checkpoint write of this process has landed
    tool:TAG         a tool ran for TAG (its line is in tools.log), before it returns
    approval:CALL    the consumer received ApprovalRequired for CALL
    finalize         the final checkpoint write (completed head, or the delete) has landed,
                     before the session append

Side effects are logged to LOG_DIR/tools.log (one tag per executed tool) and LOG_DIR/approvals.log
(one call id per approval request), so the parent can tell which tools ran twice.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from lovia import Agent, CheckpointOptions, RunHead, Runner, SQLiteCheckpointer, SQLiteSession, tool
from lovia import events as ev
from lovia.testing import ScriptedProvider, batch, call, text
from lovia.transcript import InputEntry, ModelDelta, ToolResultEntry, TranscriptEntry

SESSION_ID = "s1"
USER_INPUT = "record a to e"
SCRIPT = [
    call("record", {"tag": "a"}, call_id="c1"),
    batch(
        ("record", {"tag": "b"}, "c2"),
        ("record", {"tag": "c"}, "c3"),
        ("record", {"tag": "d"}, "c4"),
    ),
    call("deploy", {"tag": "e"}, call_id="c5"),
    text("recorded a, b, c, d and deployed e"),
]
# distinct durations make the batch complete in a fixed order: d, then c, then b
DELAYS = {"b": 0.6, "c": 0.3, "d": 0.0}


def crash_if(point: str) -> None:
    if os.environ.get("LOVIA_CRASH_AT") == point:
        os.kill(os.getpid(), signal.SIGKILL)


def log(path: Path, line: str) -> None:
    with path.open("a", encoding="utf-8") as f:
        f.write(line + "\n")


def model_turns(entries: Sequence[TranscriptEntry]) -> int:
    count, inside = 0, False
    for e in entries:
        is_model = not isinstance(e, (InputEntry, ToolResultEntry))
        count += is_model and not inside
        inside = is_model
    return count


class KillingProvider:
    """ScriptedProvider plus the model kill points."""

    name = "scripted"
    model: str | None = None
    supports_json_schema = False

    def __init__(self, done: int) -> None:
        self.inner = ScriptedProvider(SCRIPT[done:])
        self.turn = done

    async def stream(
        self, entries: Sequence[TranscriptEntry], **kw: Any
    ) -> AsyncIterator[ModelDelta]:
        self.turn += 1
        crash_if(f"model_before:{self.turn}")
        async for delta in self.inner.stream(entries, **kw):
            yield delta
        crash_if(f"model_after:{self.turn}")


class KillingCheckpointer(SQLiteCheckpointer):
    saves = 0

    async def append(self, run_id: str, entries: list[TranscriptEntry], head: RunHead) -> None:
        await super().append(run_id, entries, head)
        self.saves += 1
        crash_if(f"saved:{self.saves}")
        if head.status == "completed":
            crash_if("finalize")

    async def delete(self, run_id: str) -> None:
        await super().delete(run_id)
        crash_if("finalize")


def build_agent(done: int, logs: Path) -> Agent[Any]:
    async def side_effect(tag: str) -> str:
        await asyncio.sleep(DELAYS.get(tag, 0.0))
        log(logs / "tools.log", tag)
        crash_if(f"tool:{tag}")
        return f"recorded {tag}"

    @tool
    async def record(tag: str) -> str:
        """Record a tag."""
        return await side_effect(tag)

    @tool(needs_approval=True)
    async def deploy(tag: str) -> str:
        """Deploy a tag (needs approval)."""
        return await side_effect(tag)

    return Agent(
        name="worker",
        instructions="Record every tag.",
        model=KillingProvider(done),
        tools=[record, deploy],
    )


async def main(db: str, run_id: str, logs: Path, delete_on_success: bool) -> None:
    async with SQLiteSession(db) as session, KillingCheckpointer(db) as checkpointer:
        snapshot = await checkpointer.load(run_id)
        done = model_turns(snapshot.entries) if snapshot is not None else 0
        handle = Runner.stream(
            build_agent(done, logs),
            USER_INPUT,
            session=session,
            session_id=SESSION_ID,
            checkpoint=CheckpointOptions(
                checkpointer=checkpointer, run_id=run_id, delete_on_success=delete_on_success
            ),
        )
        async for event in handle:
            if isinstance(event, ev.ApprovalRequired):
                log(logs / "approvals.log", event.call.id)
                crash_if(f"approval:{event.call.id}")
                event.approve()
        result = await handle
        print(json.dumps({"output": result.output, "turns": result.turns}))


if __name__ == "__main__":
    asyncio.run(
        main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), "--delete-on-success" in sys.argv)
    )
