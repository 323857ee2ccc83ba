"""One task on a worker: set up its tree, run the agent headless, take the patch, clean up.

Runs wherever the executor puts it (this process or a Ray worker), so everything it needs
arrives as arguments: the task, the packed tree (or ``None`` for git sources), the agent
file's code, and :class:`WorkerOptions`. Every failure of the task itself becomes a
``failed`` result here, which is why such failures are never retried: only a worker that
dies (and so returns nothing) is.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import tempfile
import time
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lovia import events
from lovia.agent import Agent
from lovia.exceptions import UserError
from lovia.executor.rate_limit import RateLimitedProvider, RateLimiter
from lovia.messages import Usage
from lovia.runner import Runner
from lovia.transcript import (
    InputEntry,
    ToolResultEntry,
    TranscriptEntry,
    entry_to_dict,
    to_json_safe,
)
from lovia.workspace import LocalWorkspace
from lovia_server.batch.approvals import approves
from lovia_server.batch.results import TaskResult, TaskUsage
from lovia_server.batch.task import BUILTIN_AGENT, BatchTask
from lovia_server.batch.task_commands import TaskCommandError, task_command
from lovia_server.batch.task_workspace import is_denied, task_policy, task_workspace
from lovia_server.batch.tree import Denied, TreeError, materialise, patch
from lovia_server.host.plan_runs import refuse_approval


@dataclass(frozen=True)
class AgentCode:
    """An agent file read on the driver, so workers need not see the driver's disk."""

    path: str
    source: str
    attr: str


@dataclass(frozen=True)
class WorkerOptions:
    """Batch-wide settings every task shares."""

    model: str | None = None
    limiter: RateLimiter | None = None
    sandbox: bool | Literal["auto"] = "auto"
    transcripts: bool = True


class _Progress:
    """The run's transcript rebuilt from its events as they come, in the order the run records
    them, so a run that ends without a result (a timeout, too many turns, a provider error)
    still shows what it did up to there. Compaction only changes what the model sees: the
    transcript, like this one, stays whole."""

    def __init__(self, prompt: str) -> None:
        self.entries: list[TranscriptEntry] = [InputEntry("user", prompt)]

    def see(self, event: events.Event) -> None:
        if isinstance(event, events.MessageCompleted):
            self.entries.extend(event.entries)
        elif isinstance(event, events.ToolCallCompleted):
            self.entries.append(
                ToolResultEntry(event.call.id, event.output, is_error=event.is_error)
            )
        elif isinstance(event, events.UserMessageInjected):
            self.entries.append(InputEntry("user", event.content))


def load_agent_code(code: AgentCode) -> Agent[Any]:
    module = types.ModuleType(f"lovia_batch_agent_{abs(hash(code.path)):x}")
    module.__file__ = code.path
    exec(compile(code.source, code.path, "exec"), module.__dict__)
    obj = getattr(module, code.attr, None)
    if isinstance(obj, Agent):
        return obj
    if callable(obj):
        made = obj()
        if isinstance(made, Agent):
            return made
    raise UserError(f"{code.path}:{code.attr} is not an Agent (or a function returning one)")


def build_agent(
    task: BatchTask,
    code: AgentCode | None,
    options: WorkerOptions,
    root: Path,
    *,
    model: str | None = None,
    plan: bool = False,
) -> Agent[Any]:
    """The task's agent bound to its tree under its preset (the server's workspace, see
    :mod:`lovia_server.batch.task_workspace`), rate limited if asked. ``model`` and ``plan``:
    what the task's command sets (:mod:`lovia_server.batch.task_commands`)."""
    model = model or task.model or options.model
    if task.agent == BUILTIN_AGENT:
        if not model:
            raise UserError(
                f"task {task.id} names no model",
                hint="Set 'model' on the task, pass --model, or set LOVIA_MODEL.",
            )
        from lovia.workspace.project_hooks import ProjectHooksPlugin
        from lovia_server.host.agents import coding_agent

        # the tree's own hooks and the user's: the task file's author runs the batch
        agent = coding_agent(model, extra_tools=[], plugins=[ProjectHooksPlugin(root)])
    else:
        if code is None:
            raise UserError(f"task {task.id}: the agent file was not shipped")
        agent = load_agent_code(code)
        if model:
            agent = agent.clone(model=model)
    workspace = task_workspace(root, task.preset, sandbox=options.sandbox, plan=plan)
    agent = agent.clone(workspace=workspace)
    if options.limiter is not None:
        # Limits are keyed by the model string the task names ("openai:gpt-5").
        key = agent.model if isinstance(agent.model, str) else None
        limited = RateLimitedProvider(agent.resolve_provider(), options.limiter, key=key)
        agent = agent.clone(model=limited)
    return agent


async def run_task(
    task: BatchTask, packed: bytes | None, code: AgentCode | None, options: WorkerOptions
) -> TaskResult:
    """Run ``task`` and describe how it went; raises only if the worker itself is going down."""
    start = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix=f"lovia-batch-{task.id[:40]}-"))
    result = TaskResult(id=task.id, status="failed", model=task.model or options.model)
    usage = Usage()
    progress = _Progress(task.prompt)
    base: str | None = None
    denied: Denied | None = None
    try:
        # the judgement of which files never travel: shipping, the clone, the patch
        denied = functools.partial(is_denied, task_policy(root, task.preset), root)
        base = await asyncio.to_thread(materialise, task.source, packed, root, denied)
        # a ``/name`` prompt is read against the tree itself, before any model call
        reading = task_workspace(root, task.preset, sandbox=False)
        command = await asyncio.to_thread(task_command, task.prompt, reading)
        prompt, plan, model = task.prompt, False, None
        if command is not None:
            prompt, plan, model = command.model_input, command.mode == "plan", command.model
            result.model = model or result.model
            progress = _Progress(prompt)
        agent = build_agent(task, code, options, root, model=model, plan=plan)
        executor = getattr(agent.workspace, "executor", None)
        result.sandboxed = bool(getattr(executor, "sandboxed", False))
        run = await _run_headless(agent, task, prompt, usage, progress, plan=plan)
        result.status = "done"
        result.output = to_json_safe(run.output)
        result.turns = run.turns
        progress.entries = list(run.entries)
    except TreeError as exc:
        result.error = f"workspace: {exc}"
    except TaskCommandError as exc:
        result.error = f"command: {exc}"
    except TimeoutError:
        result.error = f"timeout: task exceeded {task.timeout}s"
    except Exception as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        if options.transcripts and len(progress.entries) > 1:
            result.transcript = [entry_to_dict(e) for e in progress.entries]
        if base is not None and denied is not None:
            with contextlib.suppress(TreeError):
                result.patch = await asyncio.to_thread(patch, root, base, denied)
        result.usage = TaskUsage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
        )
        result.duration = time.monotonic() - start
        if task.keep_tree:
            result.tree = f"{os.uname().nodename}:{root}"
        else:
            await asyncio.to_thread(shutil.rmtree, root, True)
    return result


async def _run_headless(
    agent: Agent[Any],
    task: BatchTask,
    prompt: str,
    usage: Usage,
    progress: _Progress,
    *,
    plan: bool = False,
) -> Any:
    """Run ``prompt`` to the end; approvals are answered by the task's policy, never left
    waiting (in plan mode refused, as the server refuses them: a plan-mode run never asks)."""
    handle = Runner.stream(agent, prompt, max_turns=task.max_turns, _parent_usage=usage)
    workspace = agent.workspace
    if not isinstance(workspace, LocalWorkspace):
        raise UserError(f"task {task.id}: the agent has no local workspace")
    root = Path(workspace.root)

    async def drive() -> Any:
        async for event in handle:
            progress.see(event)
            if isinstance(event, events.ApprovalRequired):
                if plan:
                    refuse_approval(event)
                elif approves(task.approvals, event.call, workspace.policy, root):
                    event.approve()
                else:
                    event.reject(
                        "Denied by the batch's approval policy (no one is there to ask). "
                        "Finish the task without this call."
                    )
        return await handle

    async with asyncio.timeout(task.timeout):
        return await drive()


__all__ = ["AgentCode", "WorkerOptions", "build_agent", "load_agent_code", "run_task"]
