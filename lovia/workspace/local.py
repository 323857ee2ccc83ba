"""``LocalWorkspaceSession`` — the single enforcement point for files and processes.

Every file and process method resolves its paths (symlinks followed), asks the policy,
and raises :class:`PermissionDeniedError` on ``deny``. ``ask`` is *not* resolved here:
by the time a call reaches the session the tool layer has obtained approval.

The session is one object made of parts: its search (``list_files``, ``grep``) is in
:mod:`._local_search`, its processes (the shell, background processes) in
:mod:`._local_processes`, the file helpers in :mod:`._local_files` and the glob walk in
:mod:`._glob_walk`; this module keeps the lifecycle, the decisions and the file methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import secrets
import stat as _stat
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from lovia.exceptions import UserError
from lovia.tools.base import clip_text
from lovia.workspace import _fs
from lovia.workspace._local_files import (
    _PARTLY_KNOWN,
    _binary_error,
    _changed_note,
    _check_range,
    _digest,
    _io_errors,
    _lstat,
    _merged_note,
    _open_file,
    _read_capped,
)
from lovia.workspace._local_processes import OutputListener, _Background, _SessionProcesses
from lovia.workspace._local_search import _SessionSearch
from lovia.workspace._process import (
    kill_proc,
    kill_process_tree,
)
from lovia.workspace.edits import EMPTY_OLD_MESSAGE, EditError, apply_edit
from lovia.workspace.errors import (
    EditConflictError,
    FileChangedError,
    FileTooLargeError,
    PermissionDeniedError,
    WorkspaceClosedError,
    WorkspaceError,
)
from lovia.workspace.paths import ResolvedPath, resolve_abs, resolve_path
from lovia.workspace.policy import Decision, FileOp, WorkspacePolicy
from lovia.workspace.text_merge import merge_text
from lovia.workspace.types import (
    EditResult,
    FileBytes,
    FileChange,
    FileContent,
    WorkspaceLimits,
)

logger = logging.getLogger("lovia.workspace")

_PAGING_HINT = "Use start/end to read the rest in pages."
_OVERSIZED_HINT = (
    "The file is larger than the read limit; only its leading portion was read. "
    "Use the shell (e.g. sed -n '1000,1100p' FILE) to look at later parts."
)


# --------------------------------------------------------------------------- host seams


@runtime_checkable
class DocumentOverlay(Protocol):
    """Editor buffers that should be read instead of the disk (host seam).

    ``text_for`` gets the absolute *resolved* path after the ACL check and returns
    the buffer text, or None to read the disk. ``grep`` calls it from a worker
    thread, so it must be quick and thread-safe (a dict lookup is).

    An overlay may also have ``wrote(path, text)``: the session calls it after each write it
    made (through the write sink or on disk), so that reads see what the agent wrote until the
    editor's buffer catches up (a buffer not yet reloaded, a ``didChange`` still on its way).
    """

    def text_for(self, path: Path) -> str | None: ...


class AsyncDocumentOverlay(DocumentOverlay, Protocol):
    """An overlay whose buffers live in another process (an ACP client's ``fs/read_text_file``).

    Reads and edits await ``read_text_for``; ``grep`` still uses the quick ``text_for``.
    """

    async def read_text_for(self, path: Path) -> str | None: ...


WriteSink = Callable[[Path, "str | None", str], Awaitable["bool | None"]]
"""``async (path, old_text, new_text) -> bool``: True when the host applied the write itself."""


def _new_id() -> str:
    return "local-" + secrets.token_hex(4)


@dataclass
class LocalWorkspaceSession(_SessionSearch, _SessionProcesses):
    """A live workspace on the local file system. See ``docs/workspace.md``."""

    root: Path
    policy: WorkspacePolicy = field(default_factory=WorkspacePolicy)
    env: Mapping[str, str] | None = None
    shell_timeout: float | None = 300.0
    limits: WorkspaceLimits = field(default_factory=WorkspaceLimits)
    inherit_env: bool = False
    executor: Any = None
    id: str = field(default_factory=_new_id)
    overlay: DocumentOverlay | None = None
    write_sink: WriteSink | None = None
    output_listener: OutputListener | None = None

    _closed: bool = field(default=False, init=False, repr=False)
    _locks: weakref.WeakValueDictionary[str, asyncio.Lock] = field(
        default_factory=weakref.WeakValueDictionary, init=False, repr=False
    )
    _foreground: set[asyncio.subprocess.Process] = field(
        default_factory=set, init=False, repr=False
    )
    _executor_tasks: set[asyncio.Task[Any]] = field(default_factory=set, init=False, repr=False)
    _background: dict[str, _Background] = field(default_factory=dict, init=False, repr=False)
    _runner: Any = field(default=None, init=False, repr=False)
    _runner_of: Any = field(default=None, init=False, repr=False)
    _seen: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    """Per file, a digest of the text the agent last read or wrote (:data:`_PARTLY_KNOWN`:
    it edited the file after someone else changed it, so it knows it only in part)."""

    def __post_init__(self) -> None:
        try:
            root = resolve_abs(Path(os.fspath(self.root)).expanduser())
        except (WorkspaceError, TypeError) as exc:
            raise UserError(
                f"Workspace root does not exist: {self.root}",
                hint="Pass an existing directory: Workspace.local(root=...).",
            ) from exc
        if not root.is_dir():
            raise UserError(
                f"Workspace root does not exist: {root}",
                hint="Pass an existing directory: Workspace.local(root=...).",
            )
        self.root = root

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> LocalWorkspaceSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise WorkspaceClosedError(f"Workspace session {self.id} is closed.")

    async def close(self) -> None:
        """Kill every foreground and background process group; idempotent."""
        if self._closed:
            return
        self._closed = True
        for proc in list(self._foreground):
            kill_proc(proc)
        for task in list(self._executor_tasks):
            task.cancel()
        readers: list[asyncio.Task[None]] = []
        for bg in self._background.values():
            kill_process_tree(bg.proc.pid, alive=bg.proc.returncode is None)
            if bg.reader is not None:
                readers.append(bg.reader)
        waits: list[Awaitable[Any]] = [p.wait() for p in self._foreground]
        waits += [bg.proc.wait() for bg in self._background.values()]
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.gather(*waits, return_exceptions=True), 5.0)
        for r in readers:
            r.cancel()
        for t in [*readers, *self._executor_tasks]:
            with contextlib.suppress(BaseException):
                await t
        self._background.clear()
        aclose = getattr(self._runner, "aclose", None)
        if self._runner is not self.executor and aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()

    def _shell_runner(self) -> Any:
        """The executor's live side for this session (``executor.session()`` when it has one,
        e.g. the sandbox's proxies), else the executor itself; closed with the session."""
        if self._runner_of is not self.executor or self._runner is None:
            opener = getattr(self.executor, "session", None)
            self._runner = opener() if callable(opener) else self.executor
            self._runner_of = self.executor
        return self._runner

    # ------------------------------------------------------------------ decisions

    def _resolve(self, path: str, *, base: Path | None = None) -> ResolvedPath:
        return resolve_path(self.root, path, base=base)

    def _decide(self, rp: ResolvedPath, op: FileOp) -> Decision:
        return self.policy.decide_path(rel=rp.rel, abs_posix=rp.abs_posix, op=op)

    def decide_path(self, path: str, *, write: bool = False) -> Decision:
        """The ACL decision for ``path`` (resolved from the root)."""
        return self._decide(self._resolve(path), "write" if write else "read")

    def protects(self, path: str) -> bool:
        """Whether writing ``path`` (resolved from the root) changes a protected path."""
        rp = self._resolve(path)
        return self.policy.is_protected(rel=rp.rel, abs_posix=rp.abs_posix)

    def display_path(self, path: str) -> str:
        """``path`` as it resolves: root-relative inside the root, absolute outside."""
        return self._resolve(path).display()

    def decide_command(self, command: str, cwd: str = ".") -> Decision:
        """Static command rules merged (most restrictive) with every path the command touches."""
        try:
            env: dict[str, str] | None = self._env_for(self._resolve(cwd).abs, None)
        except WorkspaceError:
            env = None
        # imported on first use: the guard's tables cost import time a session may not need
        from lovia.workspace.command_guard import decide_command

        return decide_command(self.policy, self.root, command, cwd, env=env)

    def _deny_error(self, rp: ResolvedPath, op: FileOp) -> PermissionDeniedError:
        display = rp.display()
        if not rp.inside:
            verb = "Reading" if op == "read" else "Writing"
            grant = "readable" if op == "read" else "writable"
            return PermissionDeniedError(
                f"{verb} outside the workspace is not permitted: {display}",
                hint="Ask the user to grant access, e.g. "
                f"Workspace.local(..., {grant}=[{display!r}]).",
            )
        if op == "write" and self._decide(rp, "read") != "deny":
            return PermissionDeniedError(
                f"Workspace policy denies writing to {display!r}.",
                hint="The workspace is read-only here; the user can use mode='coding' or add a "
                "writable rule for this path.",
            )
        return PermissionDeniedError(f"Path {display!r} is denied by workspace policy.")

    def _acl(self, path: str, *ops: FileOp) -> ResolvedPath:
        rp = self._resolve(path)
        for op in ops:
            if self._decide(rp, op) == "deny":
                raise self._deny_error(rp, op)
        return rp

    def _lock_for(self, abs_path: Path) -> asyncio.Lock:
        key = abs_path.as_posix()
        lock = self._locks.get(key)
        if lock is None:
            lock = asyncio.Lock()
            self._locks[key] = lock
        return lock

    def _overlay_text(self, abs_path: Path) -> str | None:
        if self.overlay is None:
            return None
        try:
            text = self.overlay.text_for(abs_path)
        except Exception:
            logger.debug("overlay.text_for failed for %s", abs_path, exc_info=True)
            return None
        return text if isinstance(text, str) else None

    async def _overlay_read(self, abs_path: Path) -> str | None:
        """The overlay's text for a read or an edit, awaiting an out-of-process overlay."""
        reader = getattr(self.overlay, "read_text_for", None)
        if reader is None:
            return self._overlay_text(abs_path)
        try:
            text = await reader(abs_path)
        except Exception:
            logger.debug("overlay.read_text_for failed for %s", abs_path, exc_info=True)
            return None
        return text if isinstance(text, str) else None

    def _wrote(self, rp: ResolvedPath, text: str, *, whole: bool = True) -> None:
        """The agent wrote ``text`` (``whole``: all of it its own): it knows the file as
        that, or only in part; the overlay is told."""
        self._seen[rp.abs.as_posix()] = _digest(text) if whole else _PARTLY_KNOWN
        hook = getattr(self.overlay, "wrote", None)
        if callable(hook):
            try:
                hook(rp.abs, text)
            except Exception:
                logger.debug("overlay.wrote failed for %s", rp.abs, exc_info=True)

    def known_in_part(self, path: str) -> None:
        """The agent knows ``path`` only in part (what was written is not its own text, e.g.
        a version the user edited): its next whole-file write needs a read first."""
        self._seen[self._resolve(path).abs.as_posix()] = _PARTLY_KNOWN

    def check_known(self, path: str, text: str) -> None:
        """Raise :class:`FileChangedError` when the agent last read or wrote ``path`` as
        another text than ``text`` (a change shown for approval was computed on ``text``)."""
        self._check_fresh(self._resolve(path), text)

    def _check_fresh(self, rp: ResolvedPath, current: str) -> None:
        """Refuse a whole-file write computed from an older text than ``current``."""
        seen = self._seen.get(rp.abs.as_posix())
        if seen is not None and seen != _digest(current):
            display = rp.display()
            raise FileChangedError(
                f"{display} changed since you last read it — the user or another program "
                "edited it; nothing was written.",
                hint=f"Read {display} again and redo your change on its current text (edit_file "
                "changes only the lines it names).",
            )

    # ------------------------------------------------------------------ files

    @_io_errors
    async def read_text(
        self, path: str, *, start: int | None = None, end: int | None = None
    ) -> FileContent:
        self._check_open()
        rp = self._acl(path, "read")
        display = rp.display()
        async with self._lock_for(rp.abs):
            text = await self._overlay_read(rp.abs)
            if text is not None:
                _check_range(start, end)
                oversized = False
                if "\x00" in text[:1024]:
                    raise _binary_error(display)
            else:
                fd = _open_file(rp)
                try:
                    _check_range(start, end)
                    cap = self.limits.max_file_read_bytes
                    data, size = await asyncio.to_thread(_read_capped, fd, cap)
                finally:
                    os.close(fd)
                oversized = size > cap
                if b"\x00" in data[:1024]:
                    raise _binary_error(display)
                text = data.decode("utf-8", errors="replace")
                sample = text[:4096]
                if sample and sample.count("\ufffd") / len(sample) > 0.10:
                    raise WorkspaceError(
                        f"Not UTF-8 text: {display}",
                        hint="Convert it first, e.g. iconv -f GBK -t UTF-8 FILE (via the shell).",
                    )
        self._seen[rp.abs.as_posix()] = _digest(text)
        lines = text.splitlines(keepends=True)
        total = len(lines)
        start_line = start or 1
        end_line = end or total
        content = "".join(lines[start_line - 1 : end_line])
        hint = _OVERSIZED_HINT if oversized else _PAGING_HINT
        content, clipped = clip_text(content, self.limits.max_file_read_chars, hint=hint)
        if oversized and not clipped and content:
            content += f"\n[... {_OVERSIZED_HINT}]"
        return FileContent(
            path=display,
            content=content,
            start=start_line,
            end=min(end_line, total),
            total_lines=total,
            truncated=clipped or end_line < total or oversized,
        )

    @_io_errors
    async def read_bytes(self, path: str, *, max_bytes: int | None = None) -> FileBytes:
        self._check_open()
        rp = self._acl(path, "read")
        display = rp.display()
        async with self._lock_for(rp.abs):
            fd = _open_file(rp)
            try:
                if max_bytes is not None:
                    try:
                        size = os.fstat(fd).st_size
                    except OSError as exc:
                        raise WorkspaceError(f"Cannot stat {display}: {exc}") from None
                    if size > max_bytes:
                        raise FileTooLargeError(
                            f"{display} is {size:,} bytes (limit {max_bytes:,} bytes)."
                        )
                data = await asyncio.to_thread(_fs.read_fd, fd, max_bytes)
            finally:
                os.close(fd)
        return FileBytes(path=display, data=data)

    async def _current_text(self, rp: ResolvedPath) -> str | None:
        text = await self._overlay_read(rp.abs)
        if text is not None:
            return text
        try:
            data, _ = await asyncio.to_thread(
                _fs.read_bytes, rp.abs, self.limits.max_file_read_bytes
            )
        except (OSError, WorkspaceError):
            return None
        return data.decode("utf-8", errors="replace")

    async def current_text(self, path: str) -> str | None:
        """The text a write or edit of ``path`` would start from: the overlay's (maybe unsaved)
        text, else the file's; None when there is no such file. A denied path raises as any
        read does. Hosts use it to preview a change (see ``lovia.tools.presentation``)."""
        self._check_open()
        return await self._current_text(self._acl(path, "read"))

    async def _sink(self, rp: ResolvedPath, old: str | None, new: str) -> bool:
        if self.write_sink is None:
            return False
        outcome: Any = self.write_sink(rp.abs, old, new)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return bool(outcome)

    @_io_errors
    async def write_text(
        self, path: str, content: str, *, create_only: bool = False, base: str | None = None
    ) -> FileChange:
        """Create ``path`` or replace its text with ``content``.

        Over an existing file the agent read or wrote before, the write is refused
        (:class:`FileChangedError`) when the file's text is no longer what the agent last saw:
        ``content`` was built from an older text and would revert the newer one. With ``base``
        (the text an approved change was computed on, e.g. the approval card's), the change
        ``base -> content`` is merged into the current text instead; changes that overlap
        raise :class:`EditConflictError`. Either way nothing is written over a newer text.
        """
        self._check_open()
        rp = self._acl(path, "write")
        display = rp.display()
        if rp.rel == ".":
            raise WorkspaceError("Cannot write to the workspace root as a file.")
        data = content.encode("utf-8")
        async with self._lock_for(rp.abs):
            st = _lstat(rp)
            if st is not None and _stat.S_ISDIR(st.st_mode):
                raise WorkspaceError(f"Is a directory: {display}")
            exists = st is not None
            if create_only and exists:
                return FileChange(
                    ok=False,
                    path=display,
                    action="unchanged",
                    message="file already exists; retry without create_only to overwrite",
                )
            old = await self._current_text(rp) if exists else None
            proposed = content
            if old is not None:
                content = await self._over_current(rp, old, content, base)
                data = content.encode("utf-8")
            note = _merged_note(display) if content != proposed else None
            if self.write_sink is not None and await self._sink(rp, old, content):
                self._wrote(rp, content, whole=note is None)
                return FileChange(
                    path=display,
                    action="updated" if exists else "created",
                    bytes_written=len(data),
                    message=note,
                )
            try:
                if create_only:
                    created = await asyncio.to_thread(_fs.exclusive_create, rp.abs, data)
                    if not created:
                        return FileChange(
                            ok=False,
                            path=display,
                            action="unchanged",
                            message="file already exists; retry without create_only to overwrite",
                        )
                    existed = False
                else:
                    existed = await asyncio.to_thread(_fs.atomic_write, rp.abs, data)
            except _fs.IsDirectoryError:
                raise WorkspaceError(f"Is a directory: {display}") from None
            except NotADirectoryError:
                raise WorkspaceError(
                    f"Cannot create {display}: a parent path is not a directory."
                ) from None
            except _fs.NotRegularFileError:
                raise WorkspaceError(
                    f"Not a regular file: {display}",
                    hint="FIFOs, sockets and devices cannot be written with write_file.",
                ) from None
            self._wrote(rp, content, whole=note is None)
        return FileChange(
            path=display,
            action="updated" if existed else "created",
            bytes_written=len(data),
            message=note,
        )

    async def _over_current(
        self, rp: ResolvedPath, current: str, content: str, base: str | None
    ) -> str:
        """What writing ``content`` over the file's ``current`` text writes: ``content`` when
        the agent's view is current, the merge when ``base`` is given; else it raises."""
        if base is None:
            self._check_fresh(rp, current)
            return content
        try:
            merged = await merge_text(current, base, content)
        except OSError as exc:
            raise EditConflictError(
                f"{rp.display()} changed after the change was approved and could not be merged "
                f"(git merge-file: {exc.strerror or exc}); nothing was written.",
                hint="Read the file again and propose the change anew.",
            ) from None
        if merged is None:
            raise EditConflictError(
                f"{rp.display()}: the approved change overlaps a change made to the same lines "
                "after it was shown (by the user or another program); nothing was written and "
                "the file keeps that newer text.",
                hint="Read the file again and propose the change anew on its current text.",
            )
        return merged

    @_io_errors
    async def edit_text(
        self, path: str, old: str, new: str, *, replace_all: bool = False
    ) -> EditResult:
        self._check_open()
        if old == "":
            return EditResult(ok=False, path=path, message=EMPTY_OLD_MESSAGE)
        rp = self._acl(path, "read", "write")
        display = rp.display()
        async with self._lock_for(rp.abs):
            text = await self._overlay_read(rp.abs)
            if text is None:
                fd = _open_file(rp)
                try:
                    size = os.fstat(fd).st_size
                    if size > self.limits.max_file_read_bytes:
                        return EditResult(
                            ok=False,
                            path=display,
                            message=f"file is too large to edit ({size:,} bytes, limit "
                            f"{self.limits.max_file_read_bytes:,}); use the shell instead "
                            "(e.g. sed -i).",
                        )
                    data = await asyncio.to_thread(_fs.read_fd, fd, None)
                finally:
                    os.close(fd)
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    return EditResult(
                        ok=False,
                        path=display,
                        message="file is not valid UTF-8; edit it with the shell instead.",
                    )
            try:
                new_text, count = apply_edit(text, old, new, replace_all=replace_all)
            except EditError as exc:
                return EditResult(
                    ok=False, path=display, replacements=exc.replacements, message=exc.message
                )
            if new_text == text:
                return EditResult(ok=True, path=display, replacements=count, changed=False)
            seen = self._seen.get(rp.abs.as_posix())
            changed = seen not in (None, _PARTLY_KNOWN, _digest(text))
            if not await self._sink(rp, text, new_text):
                try:
                    await asyncio.to_thread(_fs.atomic_write, rp.abs, new_text.encode("utf-8"))
                except _fs.NotRegularFileError:
                    raise WorkspaceError(f"Not a regular file: {display}") from None
            # the rest of the file may be newer than the agent's read: it knows it in part
            self._wrote(rp, new_text, whole=not changed and seen != _PARTLY_KNOWN)
        note = _changed_note(display) if changed else None
        return EditResult(ok=True, path=display, replacements=count, changed=True, message=note)


__all__ = ["DocumentOverlay", "LocalWorkspaceSession", "OutputListener", "WriteSink"]
