"""Plan mode: the workspace policy narrowed so the agent can look but not touch.

The agent may read, search, ask the editor and run the commands the read-only table vouches
for; every write is ``deny`` and every ``ask`` becomes ``deny`` (see
:attr:`~lovia.workspace.policy.WorkspacePolicy.plan_mode`), so nothing changes on disk and no
approval card is raised. It only narrows the policy it is given: a denied path, a protected
path or a shell that is off stays so. The prompt section tells the model why, and what to
end with (a plan).
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from lovia.workspace.errors import PermissionDeniedError
from lovia.workspace.policy import WorkspacePolicy

if TYPE_CHECKING:
    from lovia.run_context import RunContext
    from lovia.tools.base import Tool, ToolInvoker

RunMode: TypeAlias = Literal["plan", "act"]

REFUSAL_SUFFIX = "propose it in the plan instead"


def plan_policy(policy: WorkspacePolicy) -> WorkspacePolicy:
    """``policy`` in plan mode (idempotent)."""
    if policy.plan_mode:
        return policy
    return dataclasses.replace(policy, plan_mode=True)


def refusal(what: str) -> str:
    """The tool result a refused call gets: ``plan mode: <what> — propose it in the plan…``."""
    return f"plan mode: {what.rstrip('.')} — {REFUSAL_SUFFIX}."


def explain_refusals(tools: list[Tool]) -> list[Tool]:
    """``tools`` whose policy refusals say plan mode (the policy refuses; this only words it).

    A call the plan-mode policy denies raises :class:`PermissionDeniedError` in the session;
    the model sees ``plan mode: … — propose it in the plan instead`` rather than a hint about
    presets it cannot change.
    """
    out = []
    for tool in tools:
        tool = copy.copy(tool)
        tool.policies = (_explained(tool.name), *tool.policies)
        out.append(tool)
    return out


def _explained(name: str) -> Any:
    async def policy(invoke: ToolInvoker, args: dict[str, Any], ctx: RunContext[Any]) -> Any:
        try:
            return await invoke(args, ctx)
        except PermissionDeniedError as exc:
            reason = exc.message or "the workspace policy refused it"
            raise PermissionDeniedError(refusal(f"{name} refused ({reason.rstrip('.')})")) from exc

    return policy


def refused_tools(tools: list[Tool]) -> list[Tool]:
    """``tools`` (an MCP server's, say) that never run in plan mode and never ask: each call
    is refused with a plan-mode result."""
    out = []
    for tool in tools:
        tool = copy.copy(tool)
        tool.needs_approval = False
        tool.policies = (_refused(tool.name, tool.source), *tool.policies)
        out.append(tool)
    return out


def _refused(name: str, source: str | None) -> Any:
    what = f"{name} (an MCP tool of {source!r})" if source else name

    async def policy(invoke: ToolInvoker, args: dict[str, Any], ctx: RunContext[Any]) -> Any:
        raise PermissionDeniedError(refusal(f"{what} is not run"))

    return policy


def plan_instructions(policy: WorkspacePolicy) -> str:
    """The system-prompt section for a plan-mode run (generated from the policy)."""
    shell = (
        "run read-only commands (listing, searching, `git status`, `git diff`, ...)"
        if policy.allow_shell and policy.allow_read_only_commands
        else "not run commands"
    )
    return (
        "# Plan mode\n"
        "You are in plan mode: explore and propose, change nothing. You may read and search "
        f"files, ask the editor (diagnostics, references) and {shell}. Writes, edits, other "
        "commands and MCP tools are refused by the workspace policy (no one will be asked), "
        "so do not try them: put them in the plan.\n"
        "End your answer with the plan: a numbered list of steps, then a list headed "
        "`Files to touch:` with each file you expect to create or change. If you have a "
        "`todo_write` tool, also record the steps with it (all pending): they become the "
        "checklist when the user acts on the plan."
    )


def act_instructions(plan: str) -> str:
    """The prompt text of an "act on this plan" run: the approved plan, to carry out."""
    return (
        "Act on this plan (approved by the user; carry it out step by step, then say what "
        f"you did):\n\n{plan.strip()}"
    )


__all__ = [
    "REFUSAL_SUFFIX",
    "RunMode",
    "act_instructions",
    "explain_refusals",
    "plan_instructions",
    "plan_policy",
    "refusal",
    "refused_tools",
]
