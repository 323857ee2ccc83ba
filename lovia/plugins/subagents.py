"""Subagents: background children that work while the parent agent keeps going.

Handoffs transfer the conversation and ``agent_as_tool`` delegates and waits; ``Subagents``
delegates without waiting. ``spawn_subagent`` returns at once and the child runs as a plain
``Runner.run`` coroutine on its own asyncio task. The plugin is invisible to the run loop: a
finished child's report re-enters the parent only through existing seams —

* it is pushed into the parent's ``ctx.mailbox`` and so arrives as a user message at the next
  turn start, or
* ``wait_subagents`` collects it first, withdrawing the queued push with ``Mailbox.remove`` and
  returning the text as its tool result (never as a late result of the spawning call, which
  would break call/result pairing).

Two lifecycles, chosen by ``deliver``:

* **bounded** (``deliver=None``): children never outlive the run; the instance's ``aclose``
  cancels and awaits whatever is still running when the run ends.
* **detached** (``deliver=fn``): every report goes to ``deliver``; the tasks are held on the
  plugin object (``_detached``) so they survive run teardown.

Children run headless: an approval request nobody answers is denied by the runner's default.
The ``run_child`` seam (``ChildSpec -> RunResult``) replaces how a child executes, e.g. a host
routing children through its run supervisor. A host that checkpoints its children also sets
``restore``: when a run resumes, it names the children the interrupted attempt had spawned, and
the roster takes them back (running again through ``run_child``, or settled when their report
already reached the parent) so ``wait_subagents`` and report delivery carry on where they were.

With ``isolation`` (a :class:`~lovia.plugins.subagent_isolation.ChildIsolation`, e.g. git
worktrees from ``lovia.workspace``) the spawn tool takes ``isolation``: such a child works in a
place of its own, so children running in parallel never edit the same files, and its report
ends with the summary of its changes there.

Long because the roster, both lifecycles and the restore path share one task table; a split
(roster / lifecycles / tools) is left for later.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from lovia.exceptions import RunCancelled, UserError
from lovia.plugins.base import PluginInstance
from lovia.plugins.subagent_isolation import ChildIsolation, IsolatedChild
from lovia.reliability import CancelToken, RunBudget
from lovia.run_context import RunContext, current_tool_call
from lovia.steering import Mailbox
from lovia.tools.base import Tool
from lovia.tools.presentation import short
from lovia.transcript import InputEntry, TranscriptEntry

if TYPE_CHECKING:
    from lovia.agent import Agent
    from lovia.runtime.result import RunResult

logger = logging.getLogger("lovia.plugins.subagents")

MAX_WAIT_SECONDS = 600
"""Upper bound of one ``wait_subagents`` call, whatever ``timeout_seconds`` asks for."""

_WAIT_SLICE = 0.5
"""A blocked wait re-checks the parent's cancel token at least this often (seconds)."""


# --------------------------------------------------------------------------- public types


@dataclass
class ChildSpec:
    """One spawn, as handed to a :data:`RunChildFn` override.

    An override must honor ``token`` (stop the child when it trips and raise ``RunCancelled``
    for a cancelled outcome, which delivers no report) and must hand ``mailbox`` to the child
    run so ``send_to_subagent`` reaches it. ``budget`` is a fresh copy for this spawn.
    """

    id: str
    agent: Agent[Any]
    prompt: str
    token: CancelToken
    parent_session_id: str | None
    max_turns: int
    budget: RunBudget | None
    mailbox: Mailbox
    call_id: str | None = None
    """The ``spawn_subagent`` tool call that started the child (a host's idempotency key)."""
    restored: bool = False
    """Taken back by ``restore`` after an interrupted parent run, not freshly spawned."""
    place: IsolatedChild | None = None
    """Set when the child works in a place of its own (``agent`` already works there); a
    ``run_child`` host runs it with its workspace at ``place.root``."""


@dataclass(frozen=True)
class RestoredChild:
    """A child an interrupted attempt of this run had spawned, as a :data:`RestoreFn` names it.

    ``delivered`` means its report (or its cancellation) already reached the parent's
    transcript: the roster keeps it as finished and never reports it again.
    """

    id: str
    agent: str
    prompt: str
    call_id: str | None = None
    delivered: bool = False
    isolation: str | None = None
    """The isolation the child was spawned with (``"worktree"``), ``None`` for the workspace."""


@dataclass
class SubagentReport:
    """One finished child, as handed to a :data:`DeliverFn` (detached mode)."""

    id: str
    agent: str
    prompt: str
    session_id: str | None
    """The parent run's session at spawn time."""
    result: RunResult | None
    error: BaseException | None
    text: str
    """The rendered report, the same text the mailbox path delivers."""


DeliverFn: TypeAlias = Callable[[SubagentReport], Awaitable[None]]
RunChildFn: TypeAlias = Callable[[ChildSpec], Awaitable["RunResult"]]
RestoreFn: TypeAlias = Callable[[RunContext[Any]], Awaitable[Sequence[RestoredChild]]]


# --------------------------------------------------------------------------- run-scoped state


@dataclass
class _Child:
    id: str
    agent_name: str
    prompt: str
    token: CancelToken
    mailbox: Mailbox
    parent_mailbox: Mailbox
    session_id: str | None
    started: float = field(default_factory=time.monotonic)
    task: asyncio.Task[None] | None = None
    result: RunResult | None = None
    error: BaseException | None = None
    text: str | None = None
    report_token: int | None = None
    collected: bool = False
    settled: bool = False  # restored with its report already delivered: nothing will run
    isolate: bool = False  # the model asked for a place of its own (``isolation``)
    place: IsolatedChild | None = None
    changes: str | None = None  # the place's summary of what the child changed

    @property
    def done(self) -> bool:
        return self.settled or (self.task is not None and self.task.done())

    @property
    def cancelled(self) -> bool:
        if isinstance(self.error, RunCancelled):
            return True
        return self.task is not None and self.task.done() and self.task.cancelled()

    def elapsed(self) -> int:
        return int(time.monotonic() - self.started)


class _Roster:
    """The children of one run (one plugin activation); ids are ``t1, t2, …``."""

    def __init__(self) -> None:
        self.children: dict[str, _Child] = {}
        self._count = 0

    def new_id(self) -> str:
        self._count += 1
        return f"t{self._count}"

    def reserve(self, child_id: str) -> None:
        """Keep ``new_id`` past a restored id (``t3`` -> the next spawn is ``t4``)."""
        digits = child_id[1:] if child_id.startswith("t") else ""
        if digits.isdigit():
            self._count = max(self._count, int(digits))

    def live(self) -> list[_Child]:
        return [c for c in self.children.values() if not c.done]

    def known(self) -> str:
        return ", ".join(self.children) or "none"


def _summary(children: Sequence[_Child]) -> str:
    return ", ".join(
        f"{c.id} {c.agent_name} ({c.elapsed()}s)" + (" (stopping)" if c.token.is_cancelled else "")
        for c in children
    )


def _body_text(output: Any) -> str:
    if output is None:
        return ""
    return output if isinstance(output, str) else repr(output)


def _clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    head = max(limit * 2 // 3, 1)
    tail = max(limit - head, 1)
    dropped = len(text) - head - tail
    return text[:head] + f"\n… [{dropped} chars truncated] …\n" + text[-tail:]


def _report_text(child: _Child, limit: int | None) -> str:
    header = f"agent={child.agent_name} elapsed={child.elapsed()}s"
    changes = f"\n\n{child.changes}" if child.changes else ""
    if child.error is not None:
        err = child.error
        hint = getattr(err, "hint", None)
        tail = f"\nHint: {hint}" if hint and child.isolate and child.place is None else ""
        return f"[subagent {child.id}: failed] {header}\n{type(err).__name__}: {err}{tail}{changes}"
    output = child.result.output if child.result is not None else None
    return f"[subagent {child.id}: done] {header}\n{_clip(_body_text(output), limit)}{changes}"


# --------------------------------------------------------------------------- instructions

_BASE_INSTRUCTIONS = """## Background subagents
You can hand self-contained tasks to subagents that work in the background while you carry on.
- `spawn_subagent` starts one and returns immediately with its id (`t1`, `t2`, …).
- `wait_subagents` blocks until a report you have not seen is ready (or the timeout passes).
- `send_to_subagent` adds a message to a running subagent (a forgotten constraint, a change \
of direction); it reads it at its next turn.
- `cancel_subagent` stops one; a cancelled subagent reports nothing.
A subagent sees nothing of this conversation: write every prompt standalone, with all the facts \
and constraints it needs and what its final answer should contain. Reports arrive by \
themselves as `[subagent …]` messages."""

_HEADLESS_RULE = """Nobody can approve tool calls inside a subagent — they are denied \
automatically — so only delegate work its tools can do unattended."""

_SUPERVISED_RULE = """The user watches subagents: tool calls that need approval inside one \
are shown to the user, labelled with its id, and wait for their answer."""

_BOUNDED_RULE = """IMPORTANT: never finish your reply while subagents are still running — \
call `wait_subagents` to collect their reports, or `cancel_subagent` them first. Work still \
running when you finish is stopped and lost."""

_DETACHED_RULE = """You may finish your reply while subagents are still running; their \
reports will reach the conversation later as messages."""

_ISOLATION_RULE = """Subagents that edit files should not share your working copy: spawn them \
with `isolation: "{kind}"` and each works in a {kind} of its own, so parallel subagents never \
edit the same files. Their changes stay there, not in your workspace: the report ends with a \
summary of the diff, and the user reviews, applies or discards it."""

BOUNDED_INSTRUCTIONS = _BASE_INSTRUCTIONS + " " + _HEADLESS_RULE + "\n" + _BOUNDED_RULE
DETACHED_INSTRUCTIONS = _BASE_INSTRUCTIONS + " " + _HEADLESS_RULE + "\n" + _DETACHED_RULE


# --------------------------------------------------------------------------- argument helpers


def _arg_str(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _arg_ids(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple):
        return None
    ids: list[str] = []
    for item in value:
        text = str(item).strip()
        if text and text not in ids:
            ids.append(text)
    return ids or None


def _arg_seconds(value: Any, default: float) -> float:
    if value is None or isinstance(value, bool):
        return default
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(seconds) else seconds


_ID_PARAM = {"type": "string", "description": "The subagent id returned by spawn_subagent."}


# --------------------------------------------------------------------------- the plugin


@dataclass
class Subagents:
    """Let the model spawn background subagents that run while it keeps working.

    ``Subagents([researcher, coder])`` offers a catalog picked by ``Agent.name``; bare
    ``Subagents()`` spawns a clone of the current agent named ``"{name}-sub"`` without plugins
    or handoffs. See the module docstring for the bounded and detached lifecycles.
    """

    agents: Agent[Any] | Sequence[Agent[Any]] = ()
    deliver: DeliverFn | None = None
    run_child: RunChildFn | None = None
    restore: RestoreFn | None = None
    max_concurrent: int = 4
    max_turns: int = 50
    budget: RunBudget | None = None
    max_result_chars: int | None = 16_000
    instructions: str | None = None
    name: str = "subagents"
    approvals_reach_user: bool = False
    """Set by a host whose ``run_child`` shows a child's approvals to the user (the default
    instructions then say so instead of telling the model they are denied)."""
    isolation: ChildIsolation | None = None
    """Lets the model spawn a child in a place of its own (``spawn_subagent``'s
    ``isolation`` argument), e.g. ``lovia.workspace.WorktreeIsolation()``."""
    _detached: set[asyncio.Task[None]] = field(default_factory=set, init=False, repr=False)
    _catalog: dict[str, Agent[Any]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        from lovia.agent import Agent

        agents = [self.agents] if isinstance(self.agents, Agent) else list(self.agents)
        for agent in agents:
            if not getattr(agent, "name", None):
                raise UserError(
                    "Subagents requires every child agent to have a name",
                    hint="The model picks a child by its Agent.name.",
                )
            if agent.name in self._catalog:
                raise UserError(
                    f"Subagents got two child agents named {agent.name!r}",
                    hint="Agent.name is the key the model spawns by; make the names unique.",
                )
            self._catalog[agent.name] = agent

    @property
    def bounded(self) -> bool:
        """True when children are confined to the run (no ``deliver`` callback)."""
        return self.deliver is None

    def _instructions(self) -> str | None:
        if self.instructions is not None:
            return self.instructions or None
        if not self.approvals_reach_user:
            text = BOUNDED_INSTRUCTIONS if self.bounded else DETACHED_INSTRUCTIONS
        else:
            rule = _BOUNDED_RULE if self.bounded else _DETACHED_RULE
            text = _BASE_INSTRUCTIONS + " " + _SUPERVISED_RULE + "\n" + rule
        if self.isolation is not None:
            text += "\n" + _ISOLATION_RULE.format(kind=self.isolation.kind)
        return text

    async def setup(self, ctx: RunContext[Any] | None = None) -> PluginInstance:
        roster = _Roster()
        bounded = self.bounded
        if self.restore is not None and ctx is not None:
            await self._restore(roster, ctx)

        async def aclose() -> None:
            if not bounded:
                return
            live = roster.live()
            for child in live:
                child.token.cancel("the parent run ended")
                if child.task is not None:
                    child.task.cancel()
            tasks = [c.task for c in live if c.task is not None]
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)

        return PluginInstance(
            tools=[
                self._spawn_tool(roster),
                self._wait_tool(roster),
                self._send_tool(roster),
                self._cancel_tool(roster),
            ],
            view_injectors=[self._status_injector(roster)],
            instructions=self._instructions(),
            aclose=aclose,
        )

    # ------------------------------------------------------------------ restoring children

    async def _restore(self, roster: _Roster, ctx: RunContext[Any]) -> None:
        assert self.restore is not None
        for item in await self.restore(ctx):
            roster.reserve(item.id)
            picked = self._pick(item.agent, ctx)
            if isinstance(picked, str):
                logger.warning("subagent.restore_skipped: %s %s", item.id, picked)
                continue
            child = _Child(
                id=item.id,
                agent_name=picked.name,
                prompt=item.prompt,
                token=CancelToken(),
                mailbox=Mailbox(),
                parent_mailbox=ctx.mailbox,
                session_id=ctx.session_id,
            )
            child.isolate = item.isolation is not None and self.isolation is not None
            roster.children[child.id] = child
            if item.delivered:
                child.settled = child.collected = True
                continue
            spec = self._spec(child, picked, item.call_id, restored=True)
            self._start(child, spec, ctx)

    def _spec(
        self, child: _Child, agent: Agent[Any], call_id: str | None, *, restored: bool = False
    ) -> ChildSpec:
        return ChildSpec(
            id=child.id,
            agent=agent,
            prompt=child.prompt,
            token=child.token,
            parent_session_id=child.session_id,
            max_turns=self.max_turns,
            budget=dataclasses.replace(self.budget) if self.budget is not None else None,
            mailbox=child.mailbox,
            call_id=call_id,
            restored=restored,
        )

    def _start(self, child: _Child, spec: ChildSpec, ctx: RunContext[Any]) -> None:
        task = asyncio.create_task(
            self._execute(child, spec, ctx), name=f"lovia-subagent-{child.id}"
        )
        child.task = task
        if not self.bounded:
            self._detached.add(task)
            task.add_done_callback(self._detached.discard)

    # ------------------------------------------------------------------ running a child

    def _pick(self, requested: str, ctx: RunContext[Any]) -> Agent[Any] | str:
        """The child agent to run, or the text explaining why there is none."""
        catalog = self._catalog
        if not catalog:
            parent = ctx.agent
            return parent.clone(name=f"{parent.name}-sub", plugins=[], handoffs=[])
        available = ", ".join(sorted(catalog))
        if not requested:
            if len(catalog) == 1:
                return next(iter(catalog.values()))
            return f"Say which subagent to spawn with `agent` (available: {available})."
        agent = catalog.get(requested)
        if agent is None:
            return f"unknown subagent {requested!r} (available: {available})"
        return agent

    async def _execute(self, child: _Child, spec: ChildSpec, ctx: RunContext[Any]) -> None:
        try:
            try:
                if child.isolate:
                    spec = await self._isolate(child, spec)
                child.result = await self._run(spec, ctx)
            except Exception as exc:
                child.error = exc
                if not isinstance(exc, RunCancelled):
                    logger.info(
                        "subagent.failed: %s agent=%s %s: %s",
                        child.id,
                        child.agent_name,
                        type(exc).__name__,
                        exc,
                    )
        finally:
            if child.place is not None:
                # Also after a cancel: the place keeps or clears what the child left there.
                child.changes = await asyncio.shield(self._finish(child, child.place))
        if child.cancelled:
            return
        child.text = _report_text(child, self.max_result_chars)
        if self.deliver is None:
            child.report_token = child.parent_mailbox.push(child.text)
            return
        report = SubagentReport(
            id=child.id,
            agent=child.agent_name,
            prompt=child.prompt,
            session_id=child.session_id,
            result=child.result,
            error=child.error,
            text=child.text,
        )
        try:
            await self.deliver(report)
        except Exception:
            logger.exception("subagent.deliver_failed: %s", child.id)

    async def _run(self, spec: ChildSpec, ctx: RunContext[Any]) -> RunResult:
        if self.run_child is not None:
            return await self.run_child(spec)
        from lovia.runner import Runner

        return await Runner.run(
            spec.agent,
            spec.prompt,
            context=ctx.context,
            max_turns=spec.max_turns,
            budget=spec.budget,
            cancel_token=spec.token,
            mailbox=spec.mailbox,
            tracer=ctx._tracer,
            _parent_usage=ctx.usage,
        )

    async def _isolate(self, child: _Child, spec: ChildSpec) -> ChildSpec:
        assert self.isolation is not None
        place = await self.isolation.isolate(spec)
        child.place = place
        return dataclasses.replace(spec, agent=place.agent, place=place)

    @staticmethod
    async def _finish(child: _Child, place: IsolatedChild) -> str:
        try:
            return await place.finish()
        except Exception as exc:
            logger.warning("subagent.isolation_finish_failed: %s", child.id, exc_info=True)
            return f"(Its changes could not be summarized: {type(exc).__name__}: {exc})"

    # ------------------------------------------------------------------ tools

    def _spawn_tool(self, roster: _Roster) -> Tool:
        properties: dict[str, Any] = {
            "prompt": {
                "type": "string",
                "description": "The complete, standalone task. The subagent sees nothing of "
                "this conversation: include every fact and constraint it needs and say what "
                "its final answer should contain.",
            }
        }
        required = ["prompt"]
        if self._catalog:
            properties["agent"] = {
                "type": "string",
                "enum": sorted(self._catalog),
                "description": "Which subagent to run.",
            }
            if len(self._catalog) > 1:
                required.append("agent")
        isolation = self.isolation
        if isolation is not None:
            properties["isolation"] = {
                "type": "string",
                "enum": ["workspace", isolation.kind],
                "default": "workspace",
                "description": f"Where the subagent works: `workspace` (your working copy) or "
                f"`{isolation.kind}` (a {isolation.kind} of its own: use it for subagents that "
                "edit files while others do; its changes stay there for review and its report "
                "ends with their summary).",
            }

        async def spawn(args: dict[str, Any], ctx: RunContext[Any]) -> str:
            prompt = _arg_str(args, "prompt").strip()
            if not prompt:
                return "Nothing spawned: the prompt was empty."
            live = roster.live()
            if len(live) >= self.max_concurrent:
                return (
                    f"At capacity ({len(live)} subagents running: {_summary(live)}). "
                    "Wait for one with wait_subagents or stop one with cancel_subagent, "
                    "then spawn again."
                )
            picked = self._pick(_arg_str(args, "agent").strip(), ctx)
            if isinstance(picked, str):
                return picked
            where = _arg_str(args, "isolation").strip() or "workspace"
            if where != "workspace" and (isolation is None or where != isolation.kind):
                offered = "workspace" + (f", {isolation.kind}" if isolation is not None else "")
                return f"Nothing spawned: unknown isolation {where!r} (available: {offered})."
            child = _Child(
                id=roster.new_id(),
                agent_name=picked.name,
                prompt=prompt,
                token=CancelToken(),
                mailbox=Mailbox(),
                parent_mailbox=ctx.mailbox,
                session_id=ctx.session_id,
                isolate=where != "workspace",
            )
            call = current_tool_call.get()
            spec = self._spec(child, picked, call.id if call is not None else None)
            roster.children[child.id] = child
            self._start(child, spec, ctx)
            place = f" in a {where} of its own" if child.isolate else ""
            return (
                f"Subagent {child.id} ({child.agent_name}) started in the background{place}; its "
                "report will arrive as a message when it finishes. Keep working meanwhile."
            )

        return Tool(
            name="spawn_subagent",
            description=(
                "Start a subagent on a self-contained task in the background and return its id "
                "immediately. It works while you continue; its report arrives later as a "
                "message, or collect it with wait_subagents."
            ),
            parameters={
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
            invoke=spawn,
            kind="other",
            title=lambda args: short(f"Start subagent: {args.get('prompt', '')}"),
        )

    def _wait_tool(self, roster: _Roster) -> Tool:
        async def wait(args: dict[str, Any], ctx: RunContext[Any]) -> str:
            if not roster.children:
                return "No subagents have been spawned."
            ids = _arg_ids(args.get("ids"))
            if ids is None:
                targets = list(roster.children.values())
            else:
                unknown = [i for i in ids if i not in roster.children]
                if unknown:
                    return f"Unknown subagent id(s) {', '.join(unknown)} (known: {roster.known()})."
                targets = [roster.children[i] for i in ids]
            limit = min(max(_arg_seconds(args.get("timeout_seconds"), 60), 0), MAX_WAIT_SECONDS)
            deadline = time.monotonic() + limit
            while True:
                ready = [c for c in targets if c.done and not c.collected]
                if ready:
                    return self._collect(ready, targets, ctx)
                if all(c.done for c in targets):
                    return "All targeted subagents already finished and were reported."
                remaining = deadline - time.monotonic()
                running = [c for c in targets if not c.done]
                if remaining <= 0:
                    return (
                        f"Timed out; still running: {_summary(running)}. "
                        "Keep working and wait again later, or cancel_subagent."
                    )
                if ctx.cancel_token.is_cancelled:
                    return "The run is being cancelled; stopped waiting."
                pending = [c.task for c in running if c.task is not None]
                await asyncio.wait(
                    pending,
                    timeout=min(_WAIT_SLICE, remaining),
                    return_when=asyncio.FIRST_COMPLETED,
                )

        return Tool(
            name="wait_subagents",
            description=(
                "Wait for background subagents and collect their reports. Returns as soon as a "
                "targeted subagent has a report you have not seen, or when the timeout passes."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "ids": {
                        "anyOf": [
                            {"type": "array", "items": {"type": "string"}},
                            {"type": "null"},
                        ],
                        "default": None,
                        "description": "Subagent ids to wait for; omit to wait for all of them.",
                    },
                    "timeout_seconds": {
                        "type": "integer",
                        "default": 60,
                        "description": "How long to wait at most (capped at 600).",
                    },
                },
                "required": [],
                "additionalProperties": False,
            },
            invoke=wait,
            kind="other",
            title="Wait for subagents",
        )

    def _collect(self, ready: list[_Child], targets: list[_Child], ctx: RunContext[Any]) -> str:
        parts: list[str] = []
        for child in ready:
            child.collected = True
            if child.cancelled:
                parts.append(f"{child.id} was cancelled; no report.")
            elif child.report_token is not None and child.parent_mailbox.remove(child.report_token):
                # Still queued: withdraw it so the report reaches the model exactly once.
                parts.append(child.text or "")
            else:
                parts.append(f"{child.id} finished; its report was already delivered as a message.")
        running = [c for c in targets if not c.done]
        if running:
            parts.append(f"Still running: {_summary(running)}.")
        return "\n\n".join(parts)

    def _send_tool(self, roster: _Roster) -> Tool:
        async def send(args: dict[str, Any], ctx: RunContext[Any]) -> str:
            message = _arg_str(args, "message").strip()
            if not message:
                return "Nothing sent: the message was empty."
            child_id = _arg_str(args, "id").strip()
            child = roster.children.get(child_id)
            if child is None:
                return f"No subagent {child_id!r} (known: {roster.known()})."
            if child.done:
                return (
                    f"Subagent {child.id} already finished; spawn a new one if there is more to do."
                )
            if child.token.is_cancelled:
                return f"Subagent {child.id} is stopping; the message was not delivered."
            child.mailbox.push(message)
            return f"Delivered to {child.id}; it reads the message at the start of its next turn."

        return Tool(
            name="send_to_subagent",
            description=(
                "Send a message to a running subagent; it arrives as a user message at the "
                "subagent's next turn. Use it to add a constraint, narrow the scope or redirect "
                "the work without restarting. Write it standalone: the subagent still sees "
                "nothing of this conversation."
            ),
            parameters={
                "type": "object",
                "properties": {
                    "id": _ID_PARAM,
                    "message": {"type": "string", "description": "The message to deliver."},
                },
                "required": ["id", "message"],
                "additionalProperties": False,
            },
            invoke=send,
            kind="other",
            title=lambda args: f"Message subagent {args.get('id', '')}".rstrip(),
        )

    def _cancel_tool(self, roster: _Roster) -> Tool:
        async def cancel(args: dict[str, Any], ctx: RunContext[Any]) -> str:
            child_id = _arg_str(args, "id").strip()
            child = roster.children.get(child_id)
            if child is None:
                return f"No subagent {child_id!r} (known: {roster.known()})."
            if child.done:
                return f"Subagent {child.id} already finished."
            child.token.cancel("cancelled by the parent agent")
            return (
                f"Subagent {child.id} asked to stop; it halts at its next turn or tool "
                "boundary and delivers no report."
            )

        return Tool(
            name="cancel_subagent",
            description=(
                "Stop a running subagent. It halts at its next safe point and delivers no report."
            ),
            parameters={
                "type": "object",
                "properties": {"id": _ID_PARAM},
                "required": ["id"],
                "additionalProperties": False,
            },
            invoke=cancel,
            kind="other",
            title=lambda args: f"Stop subagent {args.get('id', '')}".rstrip(),
        )

    # ------------------------------------------------------------------ per-turn status

    def _status_injector(
        self, roster: _Roster
    ) -> Callable[[RunContext[Any]], list[TranscriptEntry] | None]:
        bounded = self.bounded

        def running_subagents(ctx: RunContext[Any]) -> list[TranscriptEntry] | None:
            live = roster.live()
            if not live:
                return None
            text = f"<system-reminder>\nBackground subagents running: {_summary(live)}."
            if bounded:
                text += (
                    "\nDo not finish your reply while they run — wait_subagents or "
                    "cancel_subagent first."
                )
            text += "\n</system-reminder>"
            return [InputEntry(role="user", content=text)]

        return running_subagents


__all__ = [
    "BOUNDED_INSTRUCTIONS",
    "DETACHED_INSTRUCTIONS",
    "MAX_WAIT_SECONDS",
    "ChildIsolation",
    "ChildSpec",
    "DeliverFn",
    "IsolatedChild",
    "RestoreFn",
    "RestoredChild",
    "RunChildFn",
    "SubagentReport",
    "Subagents",
]
