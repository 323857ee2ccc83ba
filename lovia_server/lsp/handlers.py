"""Every ``lovia/*`` method as one typed handler function, registered by the method it serves.

``async def approve(rt, params: p.ApproveParams) -> p.ApproveResult``: a handler gets the
language server's runtime (the host core and the editor's parts) and the validated params, and
calls the host; :func:`serve` validates the params (errors become -32602 with ``data.field``)
and serialises the result. The ``@handles(p.APPROVE)`` decorator makes mypy check that a
handler takes its method's params model and returns its result model.

The server registers the method names from ``protocol.names`` and imports this module with the
first request, so ``initialize`` is answered before the models load.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import lovia
from lovia_server import protocol as p
from lovia_server.host.agents import BUILTIN_CODING
from lovia_server.host.command_runs import (
    CommandRun,
    command_infos,
    command_run,
    local_reply_spec,
    start_compaction,
    workspace_commands,
)
from lovia_server.host.instruction_listing import instruction_files
from lovia_server.host.sandbox_setup import sandbox_status
from lovia_server.host.worktree_runs import WorktreeRequest

if TYPE_CHECKING:
    from lovia_server.lsp.server_runtime import ServerRuntime

P = TypeVar("P", bound=p.WireParams)
R = TypeVar("R", bound=p.WireModel)
Json = Any  # a decoded JSON value (the edge where the wire is untyped)
Handler = Callable[["ServerRuntime", P], Awaitable[R]]


@dataclass(frozen=True)
class Registered(Generic[P, R]):
    method: p.Method[P, R]
    handler: Handler[P, R]


HANDLERS: dict[str, Registered[Any, Any]] = {}
"""The handlers by method name."""


def handles(method: p.Method[P, R]) -> Callable[[Handler[P, R]], Handler[P, R]]:
    """Register the decorated function as ``method``'s handler."""

    def register(handler: Handler[P, R]) -> Handler[P, R]:
        assert method.name not in HANDLERS, f"{method.name} has a handler already"
        HANDLERS[method.name] = Registered(method, handler)
        return handler

    return register


async def serve(rt: ServerRuntime, name: str, raw: Json) -> Json:
    """Validate (errors become -32602 with ``data.field``), call, serialise the result."""
    registered = HANDLERS[name]
    params = p.parse_params(registered.method.params, raw)
    result = await registered.handler(rt, params)
    return result.to_wire()


# ============================================================================== runs


@handles(p.RUN)
async def run(rt: ServerRuntime, params: p.RunParams) -> p.LaunchResult:
    await rt.core.imports_settled()
    if not rt.workspace.folders():
        raise p.ProtocolError(
            p.PATH_OUTSIDE_WORKSPACE,
            "The editor has no workspace folder open",
            {"field": "cwd", "hint": "Open a folder in the editor first."},
        )
    cwd = rt.workspace.resolve_cwd(params.cwd)
    command = await _command(rt, params.prompt, cwd)
    if command is not None:
        if command.reply is not None:
            return await _reply(rt, params, cwd, command)
        if command.compact is not None:
            return await start_compaction(
                rt.core,
                params.session_id,
                cwd,
                prompt=params.prompt,
                compact=command.compact,
                agent=params.agent,
                model=params.model,
            )
        params = params.model_copy(
            update={
                # a command may narrow a run to plan mode, never widen a plan-mode request
                "mode": "plan" if command.mode == "plan" else params.mode,
                "model": command.model or params.model,
                "session_id": None if command.new_session else params.session_id,
            }
        )
    text = command.model_input if command is not None else params.prompt
    worktrees = rt.core.worktrees
    if params.session_id is not None:
        worktree = await worktrees.of_session(params.session_id)
        if worktree is not None:
            # a prompt in a worktree run's session runs in the same worktree: ``at`` is in it
            # (the request's own ``cwd`` names the workspace's folders)
            return await worktrees.follow_up(worktree, lambda at: _launch(rt, params, at, text))
    if params.isolation == "worktree":
        if params.mode == "plan":
            raise p.invalid_params(
                "Plan mode changes nothing, so it has no worktree: run it in the workspace",
                "mode",
            )
        return await _run_in_worktree(rt, params, cwd, text)
    return await _launch(rt, params, cwd, text)


async def _command(rt: ServerRuntime, prompt: str, cwd: Path) -> CommandRun | None:
    """A prompt that starts with ``/name``, as the run it asks for (docs/customization.md)."""
    if not prompt.startswith("/"):
        return None
    config = rt.workspace.config_for(rt.workspace.root_for(cwd))
    return command_run(prompt, await asyncio.to_thread(workspace_commands, config))


async def _reply(
    rt: ServerRuntime, params: p.RunParams, cwd: Path, command: CommandRun
) -> p.LaunchResult:
    """A command answered without the model (``/help``): a run of one scripted reply."""
    assert command.reply is not None
    core = rt.core
    asked = None if command.new_session else params.session_id
    session_id = await core.supervisor.claim_session(asked)
    place = core.agents.place(session_id, cwd)
    return await core.supervisor.start(
        session_id=session_id,
        prompt=params.prompt,
        model_input=params.prompt,
        spec=local_reply_spec(command.reply, place.root, place.cwd),
        max_turns=1,
        new_session=asked is None,
    )


async def _launch(rt: ServerRuntime, params: p.RunParams, cwd: Path, text: str) -> p.LaunchResult:
    core = rt.core
    session_id = await core.supervisor.claim_session(params.session_id)
    context = await rt.workspace.context(params.context)
    plan = params.mode == "plan"
    # the conversation's workspace follows the run's mode (its session is rebuilt on a change)
    (rt.workspace.plan_sessions.add if plan else rt.workspace.plan_sessions.discard)(session_id)
    spec = await core.agents.for_run(
        session_id, cwd, agent=params.agent, model=params.model, plan=plan
    )
    model_input = text if not context.text else f"{text}\n\n{context.text}"
    return await core.supervisor.start(
        session_id=session_id,
        prompt=params.prompt,
        model_input=model_input,
        spec=spec,
        max_turns=core.settings().maxTurns,
        context=context.summaries,
        new_session=params.session_id is None,
    )


async def _run_in_worktree(
    rt: ServerRuntime, params: p.RunParams, cwd: Path, text: str
) -> p.LaunchResult:
    if params.session_id is not None:
        raise p.invalid_params(
            "A worktree run starts a conversation of its own: steer it, or omit sessionId "
            "(a follow-up in a worktree run's session continues in its worktree)",
            "sessionId",
        )
    context = await rt.workspace.context(params.context)
    model_input = text if not context.text else f"{text}\n\n{context.text}"
    return await rt.core.worktrees.start(
        WorktreeRequest(
            prompt=params.prompt,
            model_input=model_input,
            cwd=cwd,
            agent=params.agent,
            model=params.model,
            include_uncommitted=params.include_uncommitted,
        )
    )


@handles(p.STEER)
async def steer(rt: ServerRuntime, params: p.SteerParams) -> p.SteerResult:
    return await rt.core.supervisor.steer(params.run_id, params.message)


@handles(p.UNSTEER)
async def unsteer(rt: ServerRuntime, params: p.UnsteerParams) -> p.UnsteerResult:
    return await rt.core.supervisor.unsteer(params.run_id, params.message_id)


@handles(p.APPROVE)
async def approve(rt: ServerRuntime, params: p.ApproveParams) -> p.ApproveResult:
    return await rt.core.supervisor.approvals.approve(params)


@handles(p.ANSWER)
async def answer(rt: ServerRuntime, params: p.AnswerParams) -> p.AnswerResult:
    return await rt.core.supervisor.answer(params.run_id, params.question_id, params.answer)


@handles(p.CANCEL)
async def cancel(rt: ServerRuntime, params: p.RunIdParams) -> p.CancelResult:
    if await rt.core.worktrees.cancel_queued(params.run_id):
        return p.CancelResult(run_id=params.run_id, status="cancelling")
    return await rt.core.supervisor.cancel(params.run_id)


@handles(p.RESUME)
async def resume(rt: ServerRuntime, params: p.RunIdParams) -> p.LaunchResult:
    core = rt.core
    await core.imports_settled()
    if await core.worktrees.owns(params.run_id):
        return await core.worktrees.resume(params.run_id)
    return await core.resume(params.run_id)


@handles(p.REPLAY)
async def replay(rt: ServerRuntime, params: p.ReplayParams) -> p.ReplayResult:
    return await rt.core.supervisor.replay(params.run_id, params.after_seq)


# ============================================================================== sessions


@handles(p.SESSIONS)
async def sessions(rt: ServerRuntime, params: p.SessionsParams) -> p.SessionsResult:
    return await rt.core.supervisor.list_sessions(
        limit=params.limit, offset=params.offset, query=params.query
    )


@handles(p.SESSION)
async def session(rt: ServerRuntime, params: p.SessionParams) -> p.SessionResult:
    return await rt.core.supervisor.session_view(params.session_id)


@handles(p.DELETE_SESSION)
async def delete_session(rt: ServerRuntime, params: p.SessionParams) -> p.DeleteSessionResult:
    result = await rt.core.supervisor.delete_session(params.session_id)
    if result.deleted:
        await rt.workspace.close_session(params.session_id)
        await rt.restore_points_ready()
        await rt.restore_points.delete_session(params.session_id)
        await rt.core.worktrees.forget_session(params.session_id)
    return result


# ============================================================================== restore points


@handles(p.CHECKPOINTS)
async def checkpoints(rt: ServerRuntime, params: p.SessionParams) -> p.CheckpointsResult:
    await rt.restore_points_ready()
    if await rt.core.store.get_session(params.session_id) is None:
        raise p.ProtocolError(
            p.RUN_NOT_FOUND,
            f"Unknown session {params.session_id}",
            {"sessionId": params.session_id},
        )
    return await rt.restore_points.checkpoints(params.session_id)


@handles(p.RESTORE_PREVIEW)
async def restore_preview(rt: ServerRuntime, params: p.CheckpointParams) -> p.RestorePreviewResult:
    await rt.restore_points_ready()
    return await rt.restore_points.preview(params.checkpoint_id)


@handles(p.RESTORE)
async def restore(rt: ServerRuntime, params: p.RestoreParams) -> p.RestoreResult:
    await rt.restore_points_ready()
    return await rt.restore_points.restore(params, rt.core.supervisor.cut_conversation)


# ============================================================================== status, MCP


@handles(p.STATUS)
async def status(rt: ServerRuntime, params: p.StatusParams) -> p.StatusResult:
    core, server = rt.core, rt.server
    settings = server.settings
    return p.StatusResult(
        version=lovia.__version__,
        protocol_version=p.PROTOCOL_VERSION,
        model=settings.effective_model(),
        agent=settings.agent or BUILTIN_CODING,
        state_dir=str(core.state_dir),
        approvals=server.init_options.approval_mode,
        edit_mode=rt.workspace.edit_mode(),
        folders=rt.workspace.describe(),
        live_runs=core.supervisor.live_runs(),
        session_rules=core.supervisor.rules_view(),
        settings_problems=list(server.settings_problems),
        mcp_servers=core.mcp.infos(_first_root(rt)),
        sandbox=sandbox_status(settings.sandbox),
        delivery=_delivery(rt),
        worktrees=await core.worktrees.counts(),
        instructions=instruction_files(map(rt.workspace.config_for, rt.workspace.folders())),
    )


def _delivery(rt: ServerRuntime) -> p.DeliveryStats | None:
    stats = rt.editor.writer_stats()
    if stats is None:
        return None
    return p.DeliveryStats(
        queued_bytes=stats["queued"],
        limit_bytes=stats["limit"],
        dropped_events=stats["dropped"],
        dropped_bytes=stats["droppedBytes"],
        skipped_deltas=rt.core.publisher.skipped,
    )


def _first_root(rt: ServerRuntime) -> Path | None:
    folders = rt.workspace.folders()
    return rt.workspace.root_for(folders[0]) if folders else None


@handles(p.MCP_RESTART)
async def mcp_restart(rt: ServerRuntime, params: p.MCPRestartParams) -> p.MCPRestartResult:
    return p.MCPRestartResult(server=await rt.core.mcp.restart(params.name, _first_root(rt)))


@handles(p.COMMANDS)
async def commands(rt: ServerRuntime, params: p.CommandsParams) -> p.CommandsResult:
    if not rt.workspace.folders():
        return p.CommandsResult(commands=[])
    root = rt.workspace.root_for(rt.workspace.resolve_cwd(params.cwd))
    found = await asyncio.to_thread(workspace_commands, rt.workspace.config_for(root))
    return p.CommandsResult(commands=command_infos(found, root))


# ============================================================================== worktree runs


@handles(p.WORKTREE_LIST)
async def worktree_list(rt: ServerRuntime, params: p.WorktreeListParams) -> p.WorktreeListResult:
    return await rt.core.worktrees.listing(params.include_closed)


@handles(p.WORKTREE_DIFF)
async def worktree_diff(rt: ServerRuntime, params: p.WorktreeRunParams) -> p.WorktreeDiffResult:
    return await rt.core.worktrees.diff(params.run_id)


@handles(p.WORKTREE_APPLY)
async def worktree_apply(rt: ServerRuntime, params: p.WorktreeApplyParams) -> p.WorktreeApplyResult:
    await rt.restore_points_ready()
    return await rt.core.worktrees.apply(params)


@handles(p.WORKTREE_DISCARD)
async def worktree_discard(
    rt: ServerRuntime, params: p.WorktreeRunParams
) -> p.WorktreeDiscardResult:
    return await rt.core.worktrees.discard(params.run_id)


@handles(p.WORKTREE_KEEP)
async def worktree_keep(rt: ServerRuntime, params: p.WorktreeRunParams) -> p.WorktreeKeepResult:
    return await rt.core.worktrees.keep(params.run_id)


__all__ = ["HANDLERS", "Registered", "handles", "serve"]
