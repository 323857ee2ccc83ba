"""Resume helpers: find the agent a snapshot stopped on, normalise its entries, replay results."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lovia.checkpointer import RunSnapshot
from lovia.exceptions import UserError
from lovia.runtime.tool_calls import wire_safe_arguments
from lovia.transcript import ToolCallEntry, ToolResultEntry, TranscriptEntry

if TYPE_CHECKING:
    from lovia.agent import Agent
    from lovia.handoff import _HandoffSignal
    from lovia.runtime.result import RunResult


def normalize_replayed_entries(entries: list[TranscriptEntry]) -> list[TranscriptEntry]:
    """Wrap non-object arguments of answered calls as ``{"_raw": ...}`` (idempotent)."""
    answered = {e.call_id for e in entries if isinstance(e, ToolResultEntry)}
    out: list[TranscriptEntry] = []
    for e in entries:
        if isinstance(e, ToolCallEntry) and e.call_id in answered:
            fixed = wire_safe_arguments(e.arguments)
            if fixed is not None:
                e = ToolCallEntry(e.call_id, e.name, fixed)
        out.append(e)
    return out


def reachable_agents(entry: Agent[Any]) -> dict[str, Agent[Any]]:
    """Every agent reachable through handoffs from ``entry`` (first name wins)."""
    from lovia.handoff import Handoff

    found: dict[str, Agent[Any]] = {}
    seen: set[int] = set()
    stack = [entry]
    while stack:
        agent = stack.pop()
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        found.setdefault(agent.name, agent)
        targets = [h.target if isinstance(h, Handoff) else h for h in agent.handoffs]
        stack.extend(reversed(targets))
    return found


def resolve_resume_agent(entry: Agent[Any], snapshot: RunSnapshot) -> Agent[Any]:
    agents = reachable_agents(entry)
    agent = agents.get(snapshot.agent_name)
    if agent is None:
        raise UserError(
            f"Snapshot '{snapshot.run_id}' was last active on agent '{snapshot.agent_name}', "
            f"which is not reachable from the handoff graph of entry agent '{entry.name}'.",
            hint="Resume with the same entry agent (and handoffs) that started the run, or "
            "restart it with CheckpointOptions(if_run_exists='restart').",
        )
    return agent


def unapplied_handoff(agent: Agent[Any], entries: list[TranscriptEntry]) -> _HandoffSignal | None:
    """The handoff ``agent`` performed in the run's last turn but never switched to, if any.

    The loop switches agents at the end of the turn that ran the handoff tool, after the
    handoff's result was checkpointed. A run stopped in between (crash, cancel) was recorded as
    still on ``agent``; its resume must finish that switch instead of forgetting it. The winning
    handoff is the first successful one in request order (handoffs run as barriers, in order).
    """
    from lovia.handoff import Handoff, _HandoffSignal, build_handoff_tool

    results: dict[str, ToolResultEntry] = {}
    calls: list[ToolCallEntry] = []
    for entry in reversed(entries):
        if isinstance(entry, ToolResultEntry) and not calls:
            results[entry.call_id] = entry
        elif isinstance(entry, ToolCallEntry):
            calls.insert(0, entry)
        else:
            break
    if not results or not agent.handoffs:
        return None
    handoffs = [h if isinstance(h, Handoff) else Handoff(target=h) for h in agent.handoffs]
    by_tool = {build_handoff_tool(h).name: h for h in handoffs}
    for call in calls:
        handoff = by_tool.get(call.name)
        outcome = results.get(call.call_id)
        if handoff is None or outcome is None or outcome.is_error or handoff.target is agent:
            continue
        done = f"Transferred to {handoff.target.name}"
        if outcome.output == done or outcome.output.startswith(done + " ("):
            return _HandoffSignal(handoff)
    return None


def result_from_completed_snapshot(
    agent: Agent[Any], snapshot: RunSnapshot, *, output_type: Any = None
) -> RunResult:
    from lovia.runtime.result import RunResult

    target = output_type if output_type is not None else agent.output_type
    output = snapshot.output
    error = snapshot.error if isinstance(snapshot.error, dict) else {}
    if output is None and error.get("type") == "OutputNotSerializable":
        raise UserError(
            f"Checkpoint '{snapshot.run_id}' completed, but its output is not JSON-safe.",
            hint="Use an output type that serialises to JSON (e.g. a pydantic model), or "
            "restart the run with CheckpointOptions(if_run_exists='restart').",
        )
    if target is not str:
        from lovia.schema import coerce_output  # pydantic: only for structured output

        output = coerce_output(target, output)
    elif output is None:
        output = ""
    return RunResult(
        output=output,
        entries=normalize_replayed_entries(list(snapshot.entries)),
        final_agent=agent,
        usage=snapshot.usage.clone(),
        turns=snapshot.turns,
        finish_reason=None,
        last_input_tokens=snapshot.last_input_tokens,
    )


__all__ = [
    "normalize_replayed_entries",
    "reachable_agents",
    "resolve_resume_agent",
    "result_from_completed_snapshot",
    "unapplied_handoff",
]
