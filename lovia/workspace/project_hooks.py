"""Project hooks: the user's shell commands at fixed points of a run, Claude Code's contract.

``.lovia/hooks.json`` in the workspace and ``~/.lovia/hooks.json`` hold what Claude Code keeps
under its settings' ``hooks`` key, so scripts written for it work unchanged where the events
match: the JSON on stdin, exit code 2 to block (stderr is the reason), JSON on stdout for a
decision or context. Hooks run through the workspace session, as the shell tool's commands do:
under the policy, in the sandbox, with stdin on a pipe of their own and a timeout. A hook that
fails, crashes or hangs is ended and reported; it never ends or stalls the run. A hook can make
a tool call's approval stricter; its ``allow`` only skips an ordinary approval, never a deny
rule, plan mode's refusal or a protected path's warned card.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lovia.messages import ToolCall
from lovia.plugins.base import PluginInstance
from lovia.run_context import RunContext
from lovia.run_interceptor import Interception, RunInterceptor, Verdict

logger = logging.getLogger("lovia.workspace.project_hooks")

HOOKS_FILE = ".lovia/hooks.json"
"""Where a workspace keeps its hooks (the user's are in ``~/.lovia/hooks.json``)."""

EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "PreCompact",
)

CLAUDE_TOOL_NAMES: dict[str, str] = {
    "Bash": "shell",
    "Write": "write_file",
    "Edit": "edit_file",
    "MultiEdit": "edit_file",
    "Read": "read_file",
    "Glob": "list_files",
    "LS": "list_files",
    "Grep": "grep_files",
}
"""Claude Code's tool names and the lovia tool each one's matcher matches."""

DEFAULT_TIMEOUT = 60.0
"""Seconds a hook may run unless its ``timeout`` says otherwise."""
MAX_OUTPUT = 20_000
"""Characters of a hook's stdout and stderr that are read (each)."""
BLOCK = 2
"""The exit code that blocks (Claude Code's)."""


@dataclass(frozen=True)
class HookCommand:
    """One configured command: which event, which tools, where it came from."""

    event: str
    command: str
    matcher: str = ""
    timeout: float = DEFAULT_TIMEOUT
    source: str = HOOKS_FILE

    def matches(self, target: str | None) -> bool:
        """Claude Code's rule: empty or ``*`` matches all, else the name or a regex of it;
        Claude's own tool names match their lovia tools."""
        pattern = self.matcher.strip()
        if not pattern or pattern == "*" or target is None:
            return True
        names = [target, *(c for c, lovia in CLAUDE_TOOL_NAMES.items() if lovia == target)]
        try:
            regex = re.compile(pattern)
        except re.error:
            return pattern in names
        return any(regex.fullmatch(name) for name in names)


@dataclass
class HookFile:
    """The commands of one hooks file and what was wrong with it."""

    commands: list[HookCommand] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def load_hook_file(path: Path, *, source: str) -> HookFile:
    """``path``'s hooks (``{"hooks": {event: [{matcher, hooks: [...]}]}}``; a bare
    ``{event: [...]}`` is read too). Unknown events and bad entries are problems, not errors."""
    found = HookFile()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return found
    except OSError as exc:
        found.problems.append(f"{source}: cannot be read ({exc})")
        return found
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        found.problems.append(f"{source}: not valid JSON ({exc})")
        return found
    table = data.get("hooks", data) if isinstance(data, dict) else None
    if not isinstance(table, dict):
        found.problems.append(f'{source}: expected {{"hooks": {{...}}}}')
        return found
    for event, groups in table.items():
        if event not in EVENTS:
            found.problems.append(f"{source}: event {event!r} is not supported (ignored)")
            continue
        for group in groups if isinstance(groups, list) else []:
            if not isinstance(group, dict):
                continue
            matcher = group.get("matcher") or ""
            for hook in group.get("hooks") or []:
                command = _command_of(hook, source, event, found.problems)
                if command is not None:
                    found.commands.append(
                        HookCommand(
                            event, command, str(matcher), _timeout(hook.get("timeout")), source
                        )
                    )
    return found


def _command_of(hook: Any, source: str, event: str, problems: list[str]) -> str | None:
    if not isinstance(hook, dict):
        return None
    kind = hook.get("type", "command")
    command = hook.get("command")
    if kind != "command" or not isinstance(command, str) or not command.strip():
        problems.append(f"{source}: a {event} hook of type {kind!r} is not supported (ignored)")
        return None
    return command


def _timeout(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return DEFAULT_TIMEOUT


def hook_files(root: Path, *, workspace: bool, user_dir: Path | None) -> list[tuple[Path, str]]:
    """The hooks files to read: the user's, then (``workspace``: trusted) the workspace's."""
    files: list[tuple[Path, str]] = []
    if user_dir is not None:
        files.append((user_dir / "hooks.json", "~/.lovia/hooks.json"))
    if workspace:
        files.append((root / HOOKS_FILE, HOOKS_FILE))
    return files


@dataclass
class HookOutcome:
    """What one hook's run came to."""

    command: HookCommand
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    error: str | None = None


class ProjectHooks(RunInterceptor):
    """The configured hooks as a run interceptor (one per run; files are read at setup)."""

    def __init__(
        self, root: Path, commands: list[HookCommand], problems: list[str] | None = None
    ) -> None:
        self.root = root
        self.commands = commands
        self._problems = list(problems or [])

    # ------------------------------------------------------------------ the points

    async def run_starting(
        self, ctx: RunContext[Any], *, prompt: str, first: bool
    ) -> Interception | None:
        said = Interception(notices=self._problems)
        self._problems = []
        if first:
            said = said.merge(
                await self._fire("SessionStart", ctx, {"source": "startup"}, target="startup")
            )
        said = said.merge(await self._fire("UserPromptSubmit", ctx, {"prompt": prompt}))
        return said

    async def before_tool(
        self, call: ToolCall, args: dict[str, Any], ctx: RunContext[Any], *, needs_approval: bool
    ) -> Interception | None:
        extra = {"tool_name": call.name, "tool_input": tool_input(args, ctx, self.root)}
        said = await self._fire("PreToolUse", ctx, {**extra, "tool_use_id": call.id}, call.name)
        # an allow skips an ordinary card only: never a protected path's warned one
        if (
            said is not None
            and said.decision == "allow"
            and (not needs_approval or touches_protected(args, ctx))
        ):
            said.decision = None
        if said is not None and said.decision == "ask" and said.reason:
            said.notices.append(f"a PreToolUse hook asks for {call.name}: {said.reason}")
        return said

    async def after_tool(
        self,
        call: ToolCall,
        args: dict[str, Any],
        ctx: RunContext[Any],
        *,
        output: str,
        is_error: bool,
    ) -> Interception | None:
        extra = {
            "tool_name": call.name,
            "tool_input": tool_input(args, ctx, self.root),
            "tool_response": {"output": output, "is_error": is_error, "success": not is_error},
            "tool_use_id": call.id,
        }
        return await self._fire("PostToolUse", ctx, extra, call.name)

    async def before_stop(
        self, ctx: RunContext[Any], *, output: str, again: bool
    ) -> Interception | None:
        extra = {"stop_hook_active": again, "last_assistant_message": output}
        return await self._fire("Stop", ctx, extra)

    async def before_compact(
        self,
        ctx: RunContext[Any],
        *,
        reactive: bool,
        trigger: Literal["auto", "manual"] = "auto",
        focus: str | None = None,
    ) -> Interception | None:
        extra = {"trigger": trigger, "custom_instructions": focus or "", "reactive": reactive}
        return await self._fire("PreCompact", ctx, extra, target=trigger)

    # ------------------------------------------------------------------ running hooks

    async def _fire(
        self, event: str, ctx: RunContext[Any], extra: dict[str, Any], target: str | None = None
    ) -> Interception | None:
        chosen: list[HookCommand] = []
        for command in self.commands:
            if (
                command.event == event
                and command.matches(target)
                and all(c.command != command.command for c in chosen)
            ):
                chosen.append(command)
        if not chosen:
            return None
        payload = {**base_payload(ctx, self.root, event), **extra}
        data = (json.dumps(payload, default=str) + "\n").encode()
        outcomes = await asyncio.gather(*(self._run(c, data, ctx) for c in chosen))
        said: Interception | None = None
        for outcome in outcomes:
            one = interpret(event, outcome)
            for line in one.notices:
                logger.warning("hook.notice: %s", line)
            said = one if said is None else said.merge(one)
        return said

    async def _run(self, hook: HookCommand, data: bytes, ctx: RunContext[Any]) -> HookOutcome:
        env = {"LOVIA_PROJECT_DIR": str(self.root), "CLAUDE_PROJECT_DIR": str(self.root)}
        session = getattr(ctx, "workspace", None)
        try:
            if session is not None and callable(getattr(session, "run", None)):
                result = await session.run(
                    hook.command,
                    cwd=".",
                    timeout=hook.timeout,
                    env=env,
                    input=data,
                    configured=True,
                )
            else:
                from lovia.workspace._process import run_argv

                result = await run_argv(
                    ["/bin/sh", "-c", hook.command],
                    cwd=self.root,
                    env={**os.environ, **env},
                    timeout=hook.timeout,
                    limit=MAX_OUTPUT,
                    input=data,
                )
        except Exception as exc:
            return HookOutcome(hook, None, "", "", error=str(exc) or type(exc).__name__)
        return HookOutcome(
            hook,
            result.exit_code,
            result.stdout[:MAX_OUTPUT],
            result.stderr[:MAX_OUTPUT],
            timed_out=result.timed_out,
        )


def base_payload(ctx: RunContext[Any], root: Path, event: str) -> dict[str, Any]:
    """The fields every hook gets on stdin (Claude Code's names)."""
    session = getattr(ctx, "workspace", None)
    policy = getattr(session, "policy", None)
    plan = bool(getattr(policy, "plan_mode", False))
    return {
        "session_id": ctx.session_id or ctx.run_id or "",
        "transcript_path": "",
        "cwd": str(root),
        "hook_event_name": event,
        "permission_mode": "plan" if plan else "default",
    }


def tool_input(args: dict[str, Any], ctx: RunContext[Any], root: Path) -> dict[str, Any]:
    """The call's arguments, plus the names Claude Code's tools use for the same thing
    (``file_path`` absolute, ``old_string``/``new_string``), so their scripts find them."""
    shown = dict(args)
    path = args.get("path")
    if isinstance(path, str):
        base = Path(getattr(getattr(ctx, "workspace", None), "root", None) or root)
        full = Path(os.path.expanduser(path))
        shown.setdefault("file_path", str(full if full.is_absolute() else base / full))
    if isinstance(args.get("old"), str):
        shown.setdefault("old_string", args["old"])
    if isinstance(args.get("new"), str):
        shown.setdefault("new_string", args["new"])
    return shown


def touches_protected(args: dict[str, Any], ctx: RunContext[Any]) -> bool:
    """Whether the call may write a protected path: a command that names one, or any argument
    that spells one (a file tool's ``path``, an MCP tool's ``target``: judged alike, so a tool
    lovia does not know is not waved through). Unknown: yes, fail closed."""
    from lovia.workspace.protected import protected_command_targets, protected_path

    session = getattr(ctx, "workspace", None)
    policy = getattr(session, "policy", None)
    root = getattr(session, "root", None)
    if policy is None or root is None:
        return False
    try:
        command = args.get("command")
        if isinstance(command, str):
            cwd = args.get("cwd")
            where = cwd if isinstance(cwd, str) else "."
            if protected_command_targets(policy, Path(root), command, where):
                return True
        for key, value in args.items():
            values = value if isinstance(value, list) else [value]
            for item in values:
                if key in ("command", "content", "old", "new") or not isinstance(item, str):
                    continue
                if (
                    item
                    and len(item) < 4096
                    and "\n" not in item
                    and protected_path(policy, Path(root), item) is not None
                ):
                    return True
    except Exception:
        return True
    return False


def interpret(event: str, outcome: HookOutcome) -> Interception:
    """A hook's exit code and output as Claude Code reads them, for ``event``."""
    name = f"{event} hook `{_short(outcome.command.command)}` ({outcome.command.source})"
    if outcome.error is not None:
        return Interception(notices=[f"{name} could not run: {outcome.error}"])
    if outcome.timed_out:
        return Interception(
            notices=[f"{name} timed out after {outcome.command.timeout:g}s and was ended"]
        )
    stderr = outcome.stderr.strip()
    if outcome.exit_code == BLOCK:
        reason = stderr or f"blocked by {name}"
        if event == "PreToolUse":
            return Interception(decision="deny", reason=reason)
        if event in ("PostToolUse",):
            return Interception(context=[f"{event} hook feedback:\n{reason}"])
        if event in ("UserPromptSubmit", "Stop", "PreCompact"):
            return Interception(block=reason)
        return Interception(notices=[f"{name}: {reason}"])
    if outcome.exit_code != 0:
        detail = f": {stderr}" if stderr else ""
        return Interception(notices=[f"{name} failed (exit code {outcome.exit_code}){detail}"])
    return _from_stdout(event, name, outcome.stdout.strip())


def _from_stdout(event: str, name: str, stdout: str) -> Interception:
    data: Any = None
    if stdout.startswith("{"):
        try:
            data = json.loads(stdout)
        except json.JSONDecodeError:
            data = None
    if not isinstance(data, dict):
        if stdout and event in ("UserPromptSubmit", "SessionStart"):
            return Interception(context=[stdout])
        return Interception()
    said = Interception()
    message = data.get("systemMessage")
    if isinstance(message, str) and message:
        said.notices.append(f"{name}: {message}")
    if data.get("continue") is False:
        reason = data.get("stopReason")
        said.stop = reason if isinstance(reason, str) and reason else f"stopped by {name}"
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    context = specific.get("additionalContext")
    if isinstance(context, str) and context.strip():
        said.context.append(context)
    decision = data.get("decision")
    reason = data.get("reason")
    reason = reason if isinstance(reason, str) and reason else None
    if event == "PreToolUse":
        verdict = _verdict(specific.get("permissionDecision"), decision)
        why = specific.get("permissionDecisionReason")
        said.decision = verdict
        said.reason = why if isinstance(why, str) and why else reason
        if verdict == "deny" and not said.reason:
            said.reason = f"blocked by {name}"
    elif decision == "block":
        text = reason or f"blocked by {name}"
        if event == "PostToolUse":
            said.context.append(f"PostToolUse hook feedback:\n{text}")
        elif event in ("UserPromptSubmit", "Stop", "PreCompact"):
            said.block = text
    return said


def _verdict(permission: Any, legacy: Any) -> Verdict | None:
    if permission in ("allow", "deny", "ask"):
        return permission  # type: ignore[no-any-return]
    if legacy == "approve":
        return "allow"
    if legacy == "block":
        return "deny"
    return None


def _short(command: str, width: int = 60) -> str:
    line = " ".join(command.split())
    return line if len(line) <= width else line[: width - 1] + "…"


@dataclass
class ProjectHooksPlugin:
    """Adds the hooks files' commands to an agent's runs (re-read at each run's start).
    ``workspace``: read the workspace's own file (a trusted workspace only); ``user_dir``:
    the user's lovia directory (``~/.lovia``), ``None`` for none."""

    root: Path
    workspace: bool = True
    user_dir: Path | None = field(default_factory=lambda: Path.home() / ".lovia")
    name: str = "project_hooks"

    async def setup(self, ctx: RunContext[Any]) -> PluginInstance:
        commands: list[HookCommand] = []
        problems: list[str] = []
        for path, source in hook_files(self.root, workspace=self.workspace, user_dir=self.user_dir):
            found = await asyncio.to_thread(load_hook_file, path, source=source)
            commands += found.commands
            problems += found.problems
        for line in problems:
            logger.warning("hook.config: %s", line)
        if not commands and not problems:
            return PluginInstance()
        return PluginInstance(interceptors=[ProjectHooks(self.root, commands, problems)])


__all__ = [
    "CLAUDE_TOOL_NAMES",
    "DEFAULT_TIMEOUT",
    "EVENTS",
    "HOOKS_FILE",
    "HookCommand",
    "HookFile",
    "HookOutcome",
    "ProjectHooks",
    "ProjectHooksPlugin",
    "base_payload",
    "hook_files",
    "interpret",
    "load_hook_file",
    "tool_input",
    "touches_protected",
]
