"""The local session's processes: the shell (``run``), background processes and their output.

:class:`~lovia.workspace.local.LocalWorkspaceSession` takes these methods from
:class:`_SessionProcesses`; the attributes and checks they use are the session's own.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lovia.run_context import current_tool_call
from lovia.tools.base import clip_text
from lovia.workspace._process import (
    OUTPUT_HINT,
    TailBuffer,
    kill_proc,
    kill_process_tree,
    pump,
    run_argv,
    spawn_exec,
)
from lovia.workspace.errors import (
    PermissionDeniedError,
    WorkspaceClosedError,
    WorkspaceError,
)
from lovia.workspace.git_env import hardened_git_config
from lovia.workspace.paths import ResolvedPath
from lovia.workspace.policy import Decision, WorkspacePolicy
from lovia.workspace.types import (
    CommandResult,
    ProcessOutput,
    ProcessStart,
    ProcessState,
    ProcessStatus,
    WorkspaceLimits,
)

logger = logging.getLogger("lovia.workspace")

_SAFE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TZ", "TMPDIR")
_SHELL = "/bin/sh"

OutputListener = Callable[["str | None", str, str], None]
"""``(tool_call_id, "stdout" | "stderr", text)`` for each chunk of shell output."""


@dataclass
class _Background:
    id: str
    command: str
    proc: asyncio.subprocess.Process
    buffer: TailBuffer
    reader: asyncio.Task[None] | None = None
    killed: bool = False
    exit_seen: bool = False

    @property
    def status(self) -> ProcessState:
        if self.killed:
            return "killed"
        return "running" if self.proc.returncode is None else "exited"

    @property
    def exit_code(self) -> int | None:
        if self.killed:
            return -9
        return self.proc.returncode


def _preview(command: str, width: int) -> str:
    flat = " ".join(command.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


class _SessionProcesses:
    """The process half of :class:`~lovia.workspace.local.LocalWorkspaceSession`."""

    root: Path
    policy: WorkspacePolicy
    env: Mapping[str, str] | None
    shell_timeout: float | None
    limits: WorkspaceLimits
    inherit_env: bool
    executor: Any
    id: str
    output_listener: OutputListener | None
    _closed: bool
    _foreground: set[asyncio.subprocess.Process]
    _executor_tasks: set[asyncio.Task[Any]]
    _background: dict[str, _Background]

    if TYPE_CHECKING:

        def _check_open(self) -> None: ...

        def _resolve(self, path: str, *, base: Path | None = None) -> ResolvedPath: ...

        def _shell_runner(self) -> Any: ...

        def decide_command(self, command: str, cwd: str = ".") -> Decision: ...

    # ------------------------------------------------------------------ shell

    def _find_venv(self) -> Path | None:
        for name in (".venv", "venv"):
            venv = self.root / name
            windows = os.name == "nt"
            python = venv / "Scripts" / "python.exe" if windows else venv / "bin" / "python"
            if venv.is_dir() and python.exists():
                return venv
        return None

    def _base_env(self, cwd: Path) -> dict[str, str]:
        if self.inherit_env:
            env = dict(os.environ)
        else:
            env = {k: v for k, v in os.environ.items() if k in _SAFE_ENV or k.startswith("LC_")}
        venv = self._find_venv()
        if venv is not None:
            env["PATH"] = self._venv_path(venv, env.get("PATH"))
            env["VIRTUAL_ENV"] = str(venv)
            env.pop("PYTHONHOME", None)
        env["PWD"] = str(cwd)
        if self.env:
            env.update(self.env)
        return env

    def _venv_path(self, venv: Path, host_path: str | None) -> str:
        """``PATH`` with the venv active but no workspace directory first on it.

        Wrappers outside the workspace come first (``python``, ``pip`` and the venv's own
        tools), then the host's ``PATH``, then the venv's ``bin`` (see
        :mod:`lovia.workspace.venv_shims`). Beyond the spec, which prepends the venv.
        """
        bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
        parts = [host_path] if host_path else []
        if os.name != "nt":
            from lovia.workspace.command_guard import known_programs
            from lovia.workspace.venv_shims import venv_shims

            shims = venv_shims(bin_dir, self.root, known_programs())
            if shims is not None:
                parts.insert(0, str(shims))
        return os.pathsep.join([*parts, str(bin_dir)])

    def _listener(self, call_id: str | None) -> Callable[[str, str], None] | None:
        listener = self.output_listener
        if listener is None:
            return None

        def emit(stream: str, text: str) -> None:
            listener(call_id, stream, text)

        return emit

    @staticmethod
    def _call_id(call_id: str | None) -> str | None:
        if call_id is not None:
            return call_id
        current = current_tool_call.get()
        return current.id if current is not None else None

    def _gate(self, command: str, cwd: str, *, judge: bool = True) -> Path:
        if not isinstance(command, str) or "\x00" in command:
            raise WorkspaceError("Command must be a string without NUL bytes.")
        if judge and self.decide_command(command, cwd) == "deny":
            raise PermissionDeniedError(
                "Command denied by workspace policy.",
                hint="The command, or a path it refers to, is denied by the workspace policy.",
            )
        cwd_abs = self._resolve(cwd).abs
        if not cwd_abs.is_dir():
            raise WorkspaceError(f"Not a directory: {cwd}")
        return cwd_abs

    def _env_for(self, cwd_abs: Path, env: Mapping[str, str] | None) -> dict[str, str]:
        """The command's environment: base, session and call values, then the hardened git
        configuration, which none of them can remove (:mod:`lovia.workspace.git_env`)."""
        merged = self._base_env(cwd_abs)
        if env:
            merged.update(env)
        return hardened_git_config(merged)

    def _adopt(self, proc: asyncio.subprocess.Process) -> None:
        if self._closed:
            kill_proc(proc)
            raise WorkspaceClosedError(f"Workspace session {self.id} is closed.")
        self._foreground.add(proc)

    async def run(
        self,
        command: str,
        *,
        cwd: str = ".",
        timeout: float | None = None,  # noqa: ASYNC109 - spec'd API
        env: Mapping[str, str] | None = None,
        call_id: str | None = None,
        input: bytes | None = None,
        configured: bool = False,
    ) -> CommandResult:
        """Run ``command`` with ``/bin/sh -c`` (or the executor) and wait for it; ``input``
        (optional) goes to its stdin through a pipe (a hook's JSON). ``configured``: the user
        wrote the command (a hook in a protected file), so the command guard does not judge
        it; the sandbox still confines it as any other."""
        self._check_open()
        cwd_abs = self._gate(command, cwd, judge=not configured)
        merged = self._env_for(cwd_abs, env)
        limit = self.limits.max_shell_output_chars
        effective = timeout if timeout is not None else self.shell_timeout
        listener = self._listener(self._call_id(call_id))
        if self.executor is not None:
            return await self._run_executor(
                command, cwd_abs, merged, effective, listener, limit, input
            )
        try:
            return await run_argv(
                [_SHELL, "-c", command],
                cwd=cwd_abs,
                env=merged,
                timeout=effective,
                limit=limit,
                on_output=listener,
                on_spawn=self._adopt,
                on_exit=self._foreground.discard,
                input=input,
            )
        except WorkspaceClosedError:
            raise
        except FileNotFoundError as exc:
            raise WorkspaceError(f"Cannot start the shell: {exc}") from None

    async def _run_executor(
        self,
        command: str,
        cwd_abs: Path,
        env: dict[str, str],
        timeout: float | None,  # noqa: ASYNC109
        listener: Callable[[str, str], None] | None,
        limit: int,
        input: bytes | None = None,
    ) -> CommandResult:
        kwargs: dict[str, Any] = {}
        runner = self._shell_runner()
        params = inspect.signature(runner.run).parameters
        if input is not None:
            if "input" not in params:
                raise WorkspaceError("This shell executor cannot pass input to a command.")
            kwargs["input"] = input
        if "on_output" in params:
            kwargs["on_output"] = listener
        preclipped = "max_output_chars" in params
        if preclipped:
            kwargs["max_output_chars"] = limit
        task = asyncio.ensure_future(
            runner.run(
                command,
                cwd=cwd_abs,
                env=env,
                timeout=timeout,
                policy=self.policy,
                root=self.root,
                **kwargs,
            )
        )
        self._executor_tasks.add(task)
        try:
            result: CommandResult = await task
        except asyncio.CancelledError:
            if self._closed:
                return CommandResult(exit_code=-9, stdout="", stderr="[session closed]")
            raise
        finally:
            self._executor_tasks.discard(task)
        if preclipped or result.timed_out:
            return result
        stdout, t1 = clip_text(result.stdout, limit, hint=OUTPUT_HINT, keep_tail=True)
        stderr, t2 = clip_text(result.stderr, limit, hint=OUTPUT_HINT, keep_tail=True)
        return result.model_copy(
            update={"stdout": stdout, "stderr": stderr, "truncated": result.truncated or t1 or t2}
        )

    # ------------------------------------------------------------------ background

    async def spawn(
        self,
        command: str,
        *,
        cwd: str = ".",
        env: Mapping[str, str] | None = None,
        call_id: str | None = None,
    ) -> ProcessStart:
        """Start ``command`` in the background; poll it with :meth:`read_process_output`."""
        self._check_open()
        runner = self._shell_runner() if self.executor is not None else None
        prepare = getattr(runner, "prepare", None)
        wrap = getattr(self.executor, "wrap_argv", None) if self.executor is not None else None
        if self.executor is not None and wrap is None and prepare is None:
            raise WorkspaceError(
                "Background execution is not supported with a custom shell executor."
            )
        cwd_abs = self._gate(command, cwd)
        merged = self._env_for(cwd_abs, env)
        prepared: Any = None
        if prepare is not None:
            prepared = await prepare(
                command, cwd=cwd_abs, env=merged, policy=self.policy, root=self.root
            )
            argv = list(prepared.argv)
        elif wrap is not None:
            argv = list(wrap(command, cwd=cwd_abs, env=merged, policy=self.policy, root=self.root))
        else:
            argv = [_SHELL, "-c", command]
        try:
            proc = await spawn_exec(argv, cwd=cwd_abs, env=merged, merge_stderr=True)
        except BaseException:
            if prepared is not None:
                await prepared.close()
            raise
        if self._closed:
            kill_proc(proc)
            with contextlib.suppress(Exception):
                await proc.wait()
            if prepared is not None:
                await prepared.close()
            raise WorkspaceClosedError(f"Workspace session {self.id} is closed.")
        pid_hex = secrets.token_hex(3)
        while f"bg-{pid_hex}" in self._background:
            pid_hex = secrets.token_hex(3)
        bg = _Background(
            id=f"bg-{pid_hex}",
            command=command,
            proc=proc,
            buffer=TailBuffer(self.limits.max_shell_output_chars),
        )
        listener = self._listener(self._call_id(call_id))
        bg.reader = asyncio.create_task(self._drain(bg, listener, prepared))
        self._background[bg.id] = bg
        return ProcessStart(process_id=bg.id, pid=proc.pid, command=command)

    async def _drain(
        self, bg: _Background, listener: Callable[[str, str], None] | None, prepared: Any = None
    ) -> None:
        try:
            with contextlib.suppress(asyncio.CancelledError):
                await pump(bg.proc.stdout, "stdout", bg.buffer.append, listener)
            with contextlib.suppress(asyncio.CancelledError):
                await bg.proc.wait()
        finally:
            if prepared is not None:  # the command's proxy ends with it
                with contextlib.suppress(BaseException):
                    await prepared.close()

    def _get_process(self, process_id: str) -> _Background:
        bg = self._background.get(process_id)
        if bg is not None:
            return bg
        if not self._background:
            raise WorkspaceError(
                f"Unknown process id: {process_id!r} — no background processes exist in this "
                "session.",
                hint="Background processes do not survive a restart of the session; re-run the "
                "command with background=true.",
            )
        known = ", ".join(
            f"{p.id} ({p.status}: {_preview(p.command, 40)})" for p in self._background.values()
        )
        raise WorkspaceError(
            f"Unknown process id: {process_id!r}.", hint=f"Known processes: {known}"
        )

    async def read_process_output(self, process_id: str) -> ProcessOutput:
        self._check_open()
        bg = self._get_process(process_id)
        if bg.proc.returncode is not None and bg.reader is not None and not bg.reader.done():
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(bg.reader), 1.0)
        text, dropped = bg.buffer.take()
        status = bg.status
        if status != "running":
            bg.exit_seen = True
        return ProcessOutput(
            process_id=bg.id, status=status, exit_code=bg.exit_code, output=text, truncated=dropped
        )

    async def kill_process(self, process_id: str) -> ProcessOutput:
        self._check_open()
        bg = self._get_process(process_id)
        if bg.status == "running":
            bg.killed = True
            kill_process_tree(bg.proc.pid, alive=True)
            if bg.reader is not None:
                with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(asyncio.shield(bg.reader), 2.0)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(bg.proc.wait(), 2.0)
        bg.exit_seen = True
        text, dropped = bg.buffer.take()
        return ProcessOutput(
            process_id=bg.id,
            status=bg.status,
            exit_code=bg.exit_code,
            output=text,
            truncated=dropped,
        )

    def background_processes(self) -> list[ProcessStatus]:
        """Every background process of this session, in spawn order (passive; never raises)."""
        if self._closed:
            return []
        return [
            ProcessStatus(
                process_id=bg.id,
                command=bg.command,
                status=bg.status,
                exit_code=bg.exit_code,
                exit_seen=bg.exit_seen,
            )
            for bg in self._background.values()
        ]
