"""``Workspace.local`` (the factory), ``LocalWorkspace`` (the config) and session bindings."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from lovia.exceptions import UserError
from lovia.workspace.instructions import build_instructions
from lovia.workspace.local import DocumentOverlay, LocalWorkspaceSession, OutputListener, WriteSink
from lovia.workspace.plan_mode import explain_refusals, plan_instructions
from lovia.workspace.policy import CommandRule, PathRule, WorkspaceMode, WorkspacePolicy
from lovia.workspace.project_instructions import (
    USER_INSTRUCTIONS,
    InstructionFile,
    ProjectInstructions,
    startup_files,
    system_section,
    with_join_policies,
)
from lovia.workspace.types import WorkspaceLimits

if TYPE_CHECKING:
    from lovia.plugins.base import ViewInjector
    from lovia.tools.base import Tool
    from lovia.workspace.editor_tools import EditorTools


def _bundle(policy: WorkspacePolicy) -> list[Tool]:
    from lovia.workspace import tools as t

    out: list[Tool] = [t.read_file, t.view_image, t.list_files, t.grep_files]
    if policy.write != "deny" or policy.write_outside != "deny":
        out += [t.write_file, t.edit_file]
    if policy.allow_shell:
        out += [t.shell, t.read_process_output, t.kill_process]
    return out


@dataclass(frozen=True)
class LocalWorkspace:
    """Configuration of a local workspace; ``open()`` makes a live session per run.

    Value equality matters: hosts compare configs to decide whether a held session
    can be reused. ``overlay``, ``write_sink`` and ``output_listener`` are host seams
    passed on to every session (see ``docs/workspace.md``).
    """

    root: str
    policy: WorkspacePolicy = field(default_factory=WorkspacePolicy.coding)
    env: Mapping[str, str] | None = None
    shell_timeout: float | None = 300.0
    limits: WorkspaceLimits = field(default_factory=WorkspaceLimits)
    inherit_env: bool = False
    executor: Any = None
    close_after_run: bool = True
    overlay: DocumentOverlay | None = None
    write_sink: WriteSink | None = None
    output_listener: OutputListener | None = None
    editor: EditorTools | None = field(default=None, compare=False)
    """The editor's language intelligence (a host seam): its tools, and problems reported
    after every edit (``lovia.workspace.editor_tools``). Sessions do not use it, so it takes
    no part in comparing configs: turning it off does not rebuild a held session."""
    project_instructions: ProjectInstructions | None = None
    """Read the project's ``AGENTS.md`` and friends (``lovia.workspace.project_instructions``):
    the ones that apply everywhere join the instructions, the others join the conversation
    when a file tool reaches a path they cover. ``None``: none are read."""

    async def open(self) -> LocalWorkspaceSession:
        """A new live session with these settings (the root must exist)."""
        return LocalWorkspaceSession(
            root=self.root,  # type: ignore[arg-type]
            policy=self.policy,
            env=dict(self.env) if self.env is not None else None,
            shell_timeout=self.shell_timeout,
            limits=self.limits,
            inherit_env=self.inherit_env,
            executor=self.executor,
            overlay=self.overlay,
            write_sink=self.write_sink,
            output_listener=self.output_listener,
        )

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[WorkspaceSessionBinding]:
        """Open a session, yield it bound (runs reuse it), close it on exit."""
        live = await self.open()
        try:
            yield self.bind(live)
        finally:
            await live.close()

    def bind(self, session: Any) -> WorkspaceSessionBinding:
        """Wrap a caller-owned live session; runs reuse it and never close it."""
        return WorkspaceSessionBinding(workspace=self, _session=session)

    def tools(self) -> list[Tool]:
        tools = _bundle(self.policy)
        if self.project_instructions is not None:
            tools = with_join_policies(tools, self.root, self.policy, self.project_instructions)
        tools = self.editor.wrap(tools) if self.editor is not None else tools
        return explain_refusals(tools) if self.policy.plan_mode else tools

    def view_injectors(self) -> list[ViewInjector]:
        if not self.policy.allow_shell:
            return []
        from lovia.workspace.tools import background_process_reminder

        return [background_process_reminder]

    def instructions(self) -> str:
        text = build_instructions(self.root, self.policy, executor=self.executor)
        editor = self.editor.instructions() if self.editor is not None else ""
        text = f"{text}\n\n{editor}" if editor else text
        if self.policy.plan_mode:
            text = f"{text}\n\n{plan_instructions(self.policy)}"
        project = self.project_files()
        return f"{text}\n\n{system_section(project)}" if project else text

    def project_files(self) -> list[InstructionFile]:
        """The instruction files that apply everywhere (the system prompt's), read now."""
        if self.project_instructions is None:
            return []
        return startup_files(self.root, self.policy, self.project_instructions)


@dataclass(frozen=True)
class WorkspaceSessionBinding:
    """A ``LocalWorkspace`` bound to one live session that the caller owns."""

    workspace: LocalWorkspace
    _session: Any
    close_after_run: bool = False

    async def open(self) -> Any:
        return self._session

    def tools(self) -> list[Tool]:
        return self.workspace.tools()

    def instructions(self) -> str:
        return self.workspace.instructions()

    def view_injectors(self) -> list[ViewInjector]:
        return self.workspace.view_injectors()


class Workspace:
    """Factory facade: ``Workspace.local(...)``."""

    def __init__(self) -> None:
        raise UserError(
            "Workspace is a factory, not a class to instantiate.",
            hint="Use Workspace.local(root, mode=...).",
        )

    @staticmethod
    def local(
        root: str = ".",
        *,
        mode: WorkspaceMode = "coding",
        policy: WorkspacePolicy | None = None,
        readable: tuple[str, ...] = (),
        writable: tuple[str, ...] = (),
        denied_paths: tuple[str, ...] = (),
        path_rules: tuple[PathRule, ...] = (),
        command_rules: tuple[CommandRule, ...] = (),
        env: Mapping[str, str] | None = None,
        shell_timeout: float | None = 300.0,
        inherit_env: bool = False,
        limits: WorkspaceLimits | None = None,
        executor: Any = None,
        sandbox: bool | Literal["auto"] = False,
        protected_paths: tuple[str, ...] | None = None,
        overlay: DocumentOverlay | None = None,
        write_sink: WriteSink | None = None,
        output_listener: OutputListener | None = None,
        project_instructions: ProjectInstructions | bool = False,
    ) -> LocalWorkspace:
        """A local workspace at ``root`` with a preset (``mode``) or an explicit ``policy``.

        ``readable``/``writable`` add allow rules (after ``path_rules``, writable first);
        ``sandbox=True`` runs shell commands under bubblewrap (``"auto"``: when available).
        ``protected_paths`` replaces the built-in list of paths whose writes always ask
        (``None``: :data:`~lovia.workspace.protected.DEFAULT_PROTECTED_PATHS`).
        ``project_instructions=True`` reads the project's ``AGENTS.md`` and friends with the
        default limits and the user's ``~/.lovia/AGENTS.md`` (see docs/customization.md).
        """
        rules = (
            tuple(path_rules)
            + tuple(PathRule(p, "allow") for p in _as_tuple(writable))
            + tuple(PathRule(p, "allow", ops=frozenset({"read"})) for p in _as_tuple(readable))
        )
        denied = _as_tuple(denied_paths)
        commands = tuple(command_rules)
        if policy is not None:
            if denied or commands or rules:
                raise UserError(
                    "Pass either policy= or rule shorthands (denied_paths=, command_rules=, "
                    "path_rules=, readable=, writable=), not both.",
                    hint="Put the rules into the WorkspacePolicy you pass.",
                )
            if protected_paths is not None:
                raise UserError(
                    "Pass either policy= or protected_paths=, not both.",
                    hint="Set protected_paths on the WorkspacePolicy you pass.",
                )
            chosen = policy
        elif mode == "readonly":
            if commands:
                raise UserError(
                    "command_rules have no effect with mode='readonly': the readonly preset has "
                    "no shell.",
                    hint="Use mode='coding' or mode='trusted' to allow shell commands.",
                )
            chosen = WorkspacePolicy.readonly(denied_paths=denied, path_rules=rules)
        elif mode == "coding":
            chosen = WorkspacePolicy.coding(
                denied_paths=denied, path_rules=rules, command_rules=commands
            )
        elif mode == "trusted":
            chosen = WorkspacePolicy.trusted(
                denied_paths=denied, path_rules=rules, command_rules=commands
            )
        else:
            raise UserError(
                f"Unknown workspace mode: {mode!r}",
                hint="Use 'readonly', 'coding' or 'trusted'.",
            )
        if protected_paths is not None and policy is None:
            chosen = dataclasses.replace(chosen, protected_paths=_as_tuple(protected_paths))
        if sandbox and executor is not None:
            raise UserError("Pass either sandbox= or executor=, not both.")
        if sandbox:
            from lovia.workspace.sandbox import BubblewrapExecutor

            executor = (
                BubblewrapExecutor.if_available()
                if sandbox == "auto"
                else BubblewrapExecutor.require()
            )
        return LocalWorkspace(
            root=str(root),
            policy=chosen,
            env=dict(env) if env is not None else None,
            shell_timeout=shell_timeout,
            limits=limits or WorkspaceLimits(),
            inherit_env=inherit_env,
            executor=executor,
            overlay=overlay,
            write_sink=write_sink,
            output_listener=output_listener,
            project_instructions=(
                ProjectInstructions(user_file=USER_INSTRUCTIONS)
                if project_instructions is True
                else project_instructions or None
            ),
        )

    @staticmethod
    def docker(*args: Any, **kwargs: Any) -> LocalWorkspace:
        raise NotImplementedError("Workspace.docker is not implemented yet.")


def _as_tuple(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(value)


__all__ = ["LocalWorkspace", "Workspace", "WorkspaceSessionBinding"]
