"""Child processes for the workspace shell (internal).

Every child runs with stdin from ``/dev/null`` (the host's stdin may be a JSON-RPC
pipe), in a new session/process group, and is killed together with all of its
descendants on timeout, cancellation and session close.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from lovia.tools.base import clip_text
from lovia.workspace.types import CommandResult

logger = logging.getLogger("lovia.workspace.process")

OutputCallback = Callable[[str, str], None]
"""``(stream_name, text)`` for each decoded chunk of output."""

OUTPUT_HINT = "Re-run with a filter (e.g. pipe through grep/head) for more."
CHUNK = 65536
EXIT_GRACE = 0.5


# --------------------------------------------------------------------------- killing


def _proc_table() -> dict[int, tuple[int, int, int]] | None:
    """``pid -> (ppid, pgrp, session)`` from /proc, or None where /proc is absent."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    table: dict[int, tuple[int, int, int]] = {}
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        close = data.rfind(b")")
        fields = data[close + 2 :].split()
        if len(fields) < 4:
            continue
        try:
            table[int(name)] = (int(fields[1]), int(fields[2]), int(fields[3]))
        except ValueError:
            continue
    return table


def kill_process_tree(pid: int, *, alive: bool) -> None:
    """SIGKILL the process group/session led by ``pid`` and every descendant we can find.

    ``alive`` says whether ``pid`` has not been reaped yet; only then is it safe to
    walk descendants by parent pid (a reaped pid may have been reused). Members of
    the group or session are safe to target: their ids stay reserved while in use.
    """
    for _ in range(4):
        targets: set[int] = set()
        table = _proc_table()
        if table is not None:
            if alive:
                children: dict[int, list[int]] = {}
                for p, (ppid, _, _) in table.items():
                    children.setdefault(ppid, []).append(p)
                stack = [pid]
                while stack:
                    for c in children.get(stack.pop(), ()):
                        if c not in targets:
                            targets.add(c)
                            stack.append(c)
            for p, (_, pgrp, sid) in table.items():
                if pgrp == pid or sid == pid:
                    targets.add(p)
            targets.discard(os.getpid())
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.killpg(pid, signal.SIGKILL)
        for p in targets:
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                os.kill(p, signal.SIGKILL)
        if not targets:
            break


def kill_proc(proc: asyncio.subprocess.Process) -> None:
    kill_process_tree(proc.pid, alive=proc.returncode is None)


# --------------------------------------------------------------------------- output


class OutputCapture:
    """Collects one stream; keeps head and tail only once it is far over the limit."""

    def __init__(self, limit: int) -> None:
        self.keep = max(1, limit)
        self.head = ""
        self.tail = ""
        self.total = 0
        self.overflow = False

    def add(self, text: str) -> None:
        if not text:
            return
        self.total += len(text)
        if not self.overflow:
            self.head += text
            if len(self.head) > 4 * self.keep:
                self.overflow = True
                self.tail = self.head[-self.keep :]
                self.head = self.head[: self.keep]
        else:
            self.tail = (self.tail + text)[-self.keep :]

    def full_text(self) -> str | None:
        return None if self.overflow else self.head

    def clipped(self, limit: int, *, hint: str = OUTPUT_HINT) -> tuple[str, bool]:
        """The same text ``clip_text(..., keep_tail=True)`` gives for the whole stream."""
        if not self.overflow:
            return clip_text(self.head, limit, hint=hint, keep_tail=True)
        suffix = f" {hint}" if hint else ""
        notice = f"\n[... truncated: showing {limit} of {self.total} chars.{suffix}]\n"
        if limit <= 0:
            return notice.strip(), True
        half = limit // 2
        return self.head[:half] + notice + self.tail[len(self.tail) - (limit - half) :], True


class TailBuffer:
    """Newest-``cap``-characters buffer of a background process's output."""

    def __init__(self, cap: int) -> None:
        self.cap = max(0, cap)
        self._text = ""
        self._dropped = False

    def append(self, text: str) -> None:
        if not text:
            return
        self._text += text
        if len(self._text) > self.cap:
            self._text = self._text[len(self._text) - self.cap :] if self.cap else ""
            self._dropped = True

    def take(self) -> tuple[str, bool]:
        text, dropped = self._text, self._dropped
        self._text = ""
        self._dropped = False
        return text, dropped


def _emit(callback: OutputCallback | None, stream: str, text: str) -> None:
    if callback is None or not text:
        return
    try:
        callback(stream, text)
    except Exception:  # a broken listener never breaks the command
        logger.debug("output listener failed", exc_info=True)


async def pump(
    reader: asyncio.StreamReader | None,
    name: str,
    sink: Callable[[str], None],
    callback: OutputCallback | None,
) -> None:
    if reader is None:
        return
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    while True:
        chunk = await reader.read(CHUNK)
        if not chunk:
            break
        text = decoder.decode(chunk)
        if text:
            sink(text)
            _emit(callback, name, text)
    tail = decoder.decode(b"", final=True)
    if tail:
        sink(tail)
        _emit(callback, name, tail)


async def spawn_exec(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    merge_stderr: bool = False,
    piped: bool = False,
) -> asyncio.subprocess.Process:
    """Start a child in its own session with stdin from /dev/null (``piped``: from a pipe of
    ours, never the host's own stdin).

    Cancellation while the child is being created never leaks it: the creation is
    shielded, and a child that exists by then is killed with its whole tree.
    """
    creating = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE if piped else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT if merge_stderr else asyncio.subprocess.PIPE,
            cwd=str(cwd),
            env=dict(env),
            start_new_session=True,
        )
    )
    try:
        return await asyncio.shield(creating)
    except asyncio.CancelledError:
        with contextlib.suppress(BaseException):
            proc = await creating
            kill_proc(proc)
            await proc.wait()
        raise


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    """Write ``data`` to the child's stdin and close it; a child that stops reading is fine."""
    stdin = proc.stdin
    if stdin is None:
        return
    with contextlib.suppress(OSError):  # BrokenPipe, ConnectionReset: the child went away
        stdin.write(data)
        await stdin.drain()
    with contextlib.suppress(OSError):
        stdin.close()


async def _settle(tasks: list[asyncio.Task[None]], within: float) -> None:
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=within)
    for t in pending:
        t.cancel()
    for t in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await t


async def run_argv(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float | None,  # noqa: ASYNC109 - a process deadline, not a cancel scope
    limit: int,
    on_output: OutputCallback | None = None,
    on_spawn: Callable[[asyncio.subprocess.Process], None] | None = None,
    on_exit: Callable[[asyncio.subprocess.Process], None] | None = None,
    input: bytes | None = None,
) -> CommandResult:
    """Run ``argv`` to completion; stdout/stderr clipped to ``limit`` chars each; ``input``
    (optional) is written to its stdin, which is then closed.

    ``on_spawn`` runs right after the child exists (it may kill it and raise, which
    is how a session that closed meanwhile refuses the child); ``on_exit`` runs when
    the child is gone (also on errors).
    """
    proc = await spawn_exec(argv, cwd=cwd, env=env, piped=input is not None)
    if on_spawn is not None:
        try:
            on_spawn(proc)
        except BaseException:
            kill_proc(proc)
            with contextlib.suppress(Exception):
                await proc.wait()
            raise
    try:
        out = OutputCapture(limit)
        err = OutputCapture(limit)
        pumps = [
            asyncio.create_task(pump(proc.stdout, "stdout", out.add, on_output)),
            asyncio.create_task(pump(proc.stderr, "stderr", err.add, on_output)),
        ]
        if input is not None:
            pumps.append(asyncio.create_task(_feed(proc, input)))
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        try:
            if timeout is None:
                await proc.wait()
            else:
                await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            kill_proc(proc)
            await proc.wait()
            await _settle(pumps, 1.0)
            return CommandResult(
                exit_code=None, stdout="", stderr=f"[timeout after {timeout}s]", timed_out=True
            )
        except BaseException:
            kill_proc(proc)
            with contextlib.suppress(BaseException):
                await asyncio.shield(proc.wait())
            for t in pumps:
                t.cancel()
            raise
        # The shell is done. Give its output a moment to drain, then kill whatever it
        # left behind in its group (use background=true for long-running processes).
        grace = (
            EXIT_GRACE if deadline is None else max(0.0, min(EXIT_GRACE, deadline - loop.time()))
        )
        _, pending = await asyncio.wait(pumps, timeout=grace)
        kill_process_tree(proc.pid, alive=False)
        await _settle(list(pending), 1.0)
        stdout, t1 = out.clipped(limit)
        stderr, t2 = err.clipped(limit)
        return CommandResult(
            exit_code=proc.returncode, stdout=stdout, stderr=stderr, truncated=t1 or t2
        )
    finally:
        if proc.returncode is None:
            kill_proc(proc)
        if on_exit is not None:
            on_exit(proc)


__all__ = [
    "OUTPUT_HINT",
    "OutputCallback",
    "OutputCapture",
    "TailBuffer",
    "kill_proc",
    "kill_process_tree",
    "pump",
    "run_argv",
    "spawn_exec",
]
