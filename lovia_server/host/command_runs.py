"""Prompts that start with ``/name``: the commands every front door expands the same way.

The commands themselves (built-ins, the workspace's and the user's files) are
:mod:`lovia.workspace.project_commands`; here a prompt becomes what the run does: the expanded
prompt (the transcript keeps what the user typed), the mode and model the command sets, a new
conversation for ``/new``, a reply given without the model (``/help``), or the conversation
compacted now (``/compact [focus]``: :func:`start_compaction`). An unknown ``/name`` is refused
before any model call.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from lovia.context.policy import CompactNow
from lovia.exceptions import UserError
from lovia.workspace.project_commands import (
    USER_COMMANDS,
    Command,
    find_commands,
    help_text,
    invoke,
    split_invocation,
)
from lovia_server import protocol as p
from lovia_server.host.ports import RunSpec

if TYPE_CHECKING:
    from lovia.workspace import LocalWorkspace
    from lovia_server.host.core import HostCore

LOCAL_AGENT = "lovia:local"
"""The agent label of a run answered without the model (``/help``)."""


@dataclass(frozen=True)
class CommandRun:
    """What a ``/name`` prompt runs as."""

    model_input: str
    mode: Literal["plan", "act"] | None = None
    model: str | None = None
    reply: str | None = None
    """Answered here, never sent to the model."""
    new_session: bool = False
    compact: CompactNow | None = None
    """``/compact``: compact the conversation now (with the focus the user gave)."""


def workspace_commands(config: LocalWorkspace) -> list[Command]:
    """The commands for a folder's workspace, read through its policy (blocking: a thread)."""
    return find_commands(config.root, config.policy, user_dir=USER_COMMANDS)


def command_infos(commands: list[Command], root: Path) -> list[p.CommandInfo]:
    return [
        p.CommandInfo(
            name=c.name,
            description=c.description,
            argument_hint=c.argument_hint,
            source=c.source,
            path=None if c.path is None else str(root / c.path) if c.source == "workspace"
            else c.path,
            mode=c.mode,
        )
        for c in commands
    ]  # fmt: skip


def resolve_command(prompt: str, commands: list[Command]) -> CommandRun | None:
    """``prompt`` as a command run; None when it does not start with ``/name``. An unknown
    command, or one that cannot run as given, is a :class:`UserError` with a hint (every door
    words it its own way: :func:`command_run` for the server's methods, the batch's task)."""
    invocation = invoke(prompt, commands)
    if invocation is None:
        return None
    command = invocation.command
    if command.action == "help":
        return CommandRun(model_input="", reply=help_text(commands))
    if command.action == "compact":
        return CommandRun(model_input="", compact=CompactNow(invocation.arguments or None))
    if command.action == "new":
        if not invocation.arguments:
            reply = "A new conversation: your next message starts it afresh."
            return CommandRun(model_input="", reply=reply, new_session=True)
        return CommandRun(model_input=invocation.prompt, new_session=True)
    if not invocation.prompt.strip():
        raise UserError(
            f"/{command.name} needs {command.argument_hint or 'something to work on'}",
            hint=f"Type it after the command: /{command.name} {command.argument_hint or '...'}",
        )
    # a Claude Code alias (``sonnet``) is not a lovia model id: the session's model is kept
    model = command.model if command.model and ":" in command.model else None
    return CommandRun(model_input=invocation.prompt, mode=command.mode, model=model)


def refuse_command_steer(message: str) -> None:
    """A steer that starts with ``/name`` is a command, and a command is a prompt of its own
    (``/help`` never reaches the model): -32602 with a hint, whichever client sent it."""
    split = split_invocation(message)
    if split is None:
        return
    raise p.invalid_params(
        f"/{split[0]} is a command: it runs as a prompt of its own, not as a steer",
        "message",
        hint=f"Send /{split[0]} when this run has ended, or cancel the run first. To steer with "
        "a message that starts with '/', begin it with a space.",
    )


def command_run(prompt: str, commands: list[Command]) -> CommandRun | None:
    """:func:`resolve_command` for the server's methods: its refusal is -32602 with
    ``data.hint``."""
    try:
        return resolve_command(prompt, commands)
    except UserError as exc:
        raise p.invalid_params(exc.message, "prompt", hint=exc.hint) from None


async def start_compaction(
    core: HostCore,
    session_id: str | None,
    cwd: Path | None,
    *,
    prompt: str,
    compact: CompactNow,
    agent: str | None = None,
    model: str | None = None,
) -> p.LaunchResult:
    """A ``/compact`` run in the conversation ``session_id`` (``None``: a new, empty one): the
    conversation's own agent compacts its history now; nothing is sent as a prompt."""
    claimed = await core.supervisor.claim_session(session_id)
    spec = await core.agents.for_run(claimed, cwd, agent=agent, model=model)
    spec.compact = compact
    return await core.supervisor.start(
        session_id=claimed,
        prompt=prompt,
        model_input=[],
        spec=spec,
        max_turns=1,
        new_session=session_id is None,
    )


def local_reply_spec(text: str, root: Path, cwd: Path) -> RunSpec:
    """A run that answers ``text`` without a model: a script of one reply, no tools."""
    from lovia.agent import Agent
    from lovia.testing import ScriptedProvider
    from lovia.testing import text as reply

    agent: Agent[None] = Agent(
        name="lovia-local",
        instructions="Answers lovia's own commands locally.",
        model=ScriptedProvider([reply(text)], record=False),
    )
    return RunSpec(
        agent=agent,
        agent_label=LOCAL_AGENT,
        model_label=None,
        root=root,
        cwd=cwd,
        remembered=False,
    )


__all__ = [
    "LOCAL_AGENT",
    "CommandRun",
    "command_infos",
    "command_run",
    "local_reply_spec",
    "refuse_command_steer",
    "resolve_command",
    "start_compaction",
    "workspace_commands",
]
