"""``LocalWorkspaceSession`` — the single enforcement point for files and processes.

Every file and process method resolves its paths (symlinks followed), asks the policy,
and raises :class:`PermissionDeniedError` on ``deny``. ``ask`` is *not* resolved here:
by the time a call reaches the session the tool layer has obtained approval.

Long because ``LocalWorkspaceSession`` is one stateful object: its file and search methods
share the session's locks and what the agent has seen. Its processes (the shell, background
processes) are in :mod:`._local_processes`, the file helpers in :mod:`._local_files`, the glob
walk in :mod:`._glob_walk`; splitting search (``list_files``, ``grep``) out is left for later.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import os
import re
import secrets
import stat as _stat
import weakref
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar, runtime_checkable

from lovia.exceptions import UserError
from lovia.tools.base import clip_text
from lovia.workspace import _fs
from lovia.workspace._glob_walk import _compile_glob, _GlobRegex, _walk_tree
from lovia.workspace._local_files import (
    _PARTLY_KNOWN,
    _binary_error,
    _changed_note,
    _check_range,
    _digest,
    _lstat,
    _merged_note,
    _open_file,
    _open_listable,
    _read_capped,
)
from lovia.workspace._local_processes import OutputListener, _Background, _SessionProcesses
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
from lovia.workspace.paths import ResolvedPath, relative_to_root, resolve_abs, resolve_path
from lovia.workspace.policy import Decision, FileOp, WorkspacePolicy
from lovia.workspace.text_merge import merge_text
from lovia.workspace.types import (
    ClippedList,
    DirEntry,
    EditResult,
    FileBytes,
    FileChange,
    FileContent,
    GrepMatch,
    WorkspaceLimits,
)

logger = logging.getLogger("lovia.workspace")

_SAFE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TZ", "TMPDIR")
_PAGING_HINT = "Use start/end to read the rest in pages."
_OVERSIZED_HINT = (
    "The file is larger than the read limit; only its leading portion was read. "
    "Use the shell (e.g. sed -n '1000,1100p' FILE) to look at later parts."
)
_SHELL = "/bin/sh"
_ANCHOR_RE = re.compile(r"\^|\$|\\[AZzbB]|\(\?[=!<]")


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


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _io_errors(method: Callable[_P, Awaitable[_R]]) -> Callable[_P, Awaitable[_R]]:
    """Turn an unexpected ``OSError`` (a race, EIO, EACCES...) into a ``WorkspaceError``."""

    @functools.wraps(method)
    async def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return await method(*args, **kwargs)
        except WorkspaceError:
            raise
        except OSError as exc:
            target = args[1] if len(args) > 1 else kwargs.get("path", ".")
            verb = method.__name__.replace("_", " ")
            raise WorkspaceError(
                f"{verb} failed for {target!r}: {exc.strerror or exc}",
                hint="The file system changed or refused the operation; retry or check the path.",
            ) from None

    return wrapper


def _new_id() -> str:
    return "local-" + secrets.token_hex(4)


@dataclass
class LocalWorkspaceSession(_SessionProcesses):
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

    # ------------------------------------------------------------------ listing

    def _display(self, abs_path: Path) -> str:
        rel = relative_to_root(self.root, abs_path)
        return rel if rel is not None else abs_path.as_posix()

    def _read_decision(self, abs_path: Path) -> Decision:
        return self.policy.decide_path(
            rel=relative_to_root(self.root, abs_path), abs_posix=abs_path.as_posix(), op="read"
        )

    @_io_errors
    async def list_files(
        self,
        path: str = ".",
        *,
        pattern: str | None = None,
        include_hidden: bool = False,
        max_results: int | None = None,
    ) -> ClippedList[DirEntry]:
        self._check_open()
        cap = max_results or self.limits.max_list_results
        rp = self._acl(path, "read")
        if not rp.abs.is_dir():
            raise WorkspaceError(f"Not a directory: {rp.display()}")
        if pattern is not None:
            regex = _compile_glob(pattern)
            return await asyncio.to_thread(self._glob_list, rp, regex, include_hidden, cap)
        return await asyncio.to_thread(self._list_children, rp, include_hidden, cap)

    def _entry(self, abs_path: Path, st_l: os.stat_result) -> DirEntry | None:
        """A DirEntry for ``abs_path`` or None when it must stay hidden."""
        target: Path | None = None
        if _stat.S_ISLNK(st_l.st_mode):
            try:
                target = resolve_abs(abs_path)
            except WorkspaceError:
                return None
            if self._read_decision(target) == "deny":
                return None
            try:
                st = os.stat(target)
            except OSError:
                st = None
        else:
            st = st_l
        if st is not None and _fs.is_special_mode(st.st_mode):
            return None
        is_dir = st is not None and _stat.S_ISDIR(st.st_mode)
        return DirEntry(
            path=self._display(abs_path),
            is_dir=is_dir,
            size=None if is_dir or st is None else st.st_size,
            mtime=None if st is None else st.st_mtime,
            symlink_target=target.as_posix() if target is not None else None,
        )

    def _list_children(
        self, rp: ResolvedPath, include_hidden: bool, cap: int
    ) -> ClippedList[DirEntry]:
        entries: list[DirEntry] = []
        truncated = False
        fd = _open_listable(rp)
        try:
            with os.scandir(fd) as it:
                for de in it:
                    name = de.name
                    if name.startswith(".") and not include_hidden:
                        continue
                    abs_path = rp.abs / name
                    if self._read_decision(abs_path) == "deny":
                        continue
                    try:
                        st_l = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        continue
                    entry = self._entry(abs_path, st_l)
                    if entry is None:
                        continue
                    if len(entries) >= cap:
                        truncated = True
                        break
                    entries.append(entry)
        finally:
            os.close(fd)
        entries.sort(key=lambda e: (not e.is_dir, e.path))
        return ClippedList(entries, truncated=truncated)

    def _glob_list(
        self, rp: ResolvedPath, regex: _GlobRegex, include_hidden: bool, cap: int
    ) -> ClippedList[DirEntry]:
        found: dict[str, DirEntry] = {}
        truncated = False
        match = regex.pattern.fullmatch
        for rel, abs_path, fd, name in _walk_tree(
            rp.abs, regex.max_depth, include_hidden, self._read_decision
        ):
            if not match(rel):
                continue
            # only a match is judged and stat'ed (folders were judged by the walk)
            if self._read_decision(abs_path) == "deny":
                continue
            try:
                st_l = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            entry = self._entry(abs_path, st_l)
            if entry is None or entry.path in found:
                continue
            if len(found) >= cap:
                truncated = True
                break
            found[entry.path] = entry
        return ClippedList(sorted(found.values(), key=lambda e: e.path), truncated=truncated)

    # ------------------------------------------------------------------ grep

    @_io_errors
    async def grep(
        self,
        pattern: str,
        *,
        path: str = ".",
        glob: str | None = None,
        ignore_case: bool = False,
        include_hidden: bool = False,
        max_matches: int | None = None,
    ) -> ClippedList[GrepMatch]:
        self._check_open()
        cap = max_matches or self.limits.max_grep_matches
        rp = self._acl(path, "read")
        try:
            regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except (re.error, OverflowError, RecursionError) as exc:
            raise WorkspaceError(f"Invalid regular expression: {exc}") from None
        target_decision = self._decide(rp, "read")
        return await asyncio.to_thread(
            self._grep_sync, rp, regex, glob, include_hidden, cap, target_decision
        )

    def _grep_sync(
        self,
        rp: ResolvedPath,
        regex: re.Pattern[str],
        glob: str | None,
        include_hidden: bool,
        cap: int,
        target_decision: Decision,
    ) -> ClippedList[GrepMatch]:
        from fnmatch import fnmatchcase

        matches: ClippedList[GrepMatch] = ClippedList()
        prefilter = None if _ANCHOR_RE.search(regex.pattern) else regex
        line_cap = self.limits.max_grep_line_chars
        try:
            st = os.stat(rp.abs)
        except OSError:
            st = None
        if st is not None and _stat.S_ISREG(st.st_mode):
            files: Iterator[tuple[str, str, Callable[[], str | None]]] = iter(
                [(rp.display(), rp.abs.name, lambda: self._grep_read_path(rp.abs))]
            )
        elif st is not None and _stat.S_ISDIR(st.st_mode):
            buffers = self._overlay_paths()
            files = self._grep_walk(rp, include_hidden, target_decision, buffers)
        else:
            raise WorkspaceError(f"Not a file or directory: {rp.display()}")
        for display, name, read in files:
            if glob is not None and not (fnmatchcase(display, glob) or fnmatchcase(name, glob)):
                continue
            text = read()
            if text is None:
                continue
            if prefilter is not None and prefilter.search(text) is None:
                continue
            for n, line in enumerate(text.splitlines(), start=1):
                if regex.search(line):
                    matches.append(GrepMatch(path=display, line=n, text=line.strip()[:line_cap]))
                    if len(matches) >= cap:
                        matches.truncated = True
                        return matches
        return matches

    def _grep_decode(self, data: bytes) -> str | None:
        if b"\x00" in data[:1024]:
            return None
        return data.decode("utf-8", errors="replace")

    def _grep_read_fd(self, fd: int) -> str | None:
        try:
            st = os.fstat(fd)
            cap = self.limits.max_grep_file_bytes
            if not _stat.S_ISREG(st.st_mode) or st.st_size > cap:
                return None
            data = os.read(fd, min(st.st_size, cap) + 1)  # one read for the usual file
            if len(data) > st.st_size:  # it grew meanwhile: read on, up to the cap
                data += _fs.read_fd(fd, max(0, cap - len(data)))
            return self._grep_decode(data)
        except OSError:
            return None
        finally:
            os.close(fd)

    def _grep_read_path(self, abs_path: Path) -> str | None:
        text = self._overlay_text(abs_path)
        if text is not None:
            return None if "\x00" in text[:1024] else text
        try:
            fd = _fs.open_regular(abs_path)
        except (OSError, WorkspaceError):
            logger.debug("grep: cannot open %s", abs_path)
            return None
        return self._grep_read_fd(fd)

    def _overlay_paths(self) -> frozenset[str] | None:
        """The absolute paths the overlay may hold a buffer for, asked once per search (an
        overlay's ``open_paths()``); None: ask it about every file."""
        if self.overlay is None:
            return frozenset()
        lister = getattr(self.overlay, "open_paths", None)
        if lister is None:
            return None
        try:
            return frozenset(Path(p).as_posix() for p in lister())
        except Exception:
            logger.debug("overlay.open_paths failed", exc_info=True)
            return None

    def _grep_read_at(
        self, dir_fd: int, name: str, abs_str: str, buffers: frozenset[str] | None
    ) -> str | None:
        if self.overlay is not None and (buffers is None or abs_str in buffers):
            text = self._overlay_text(Path(abs_str))
            if text is not None:
                return None if "\x00" in text[:1024] else text
        try:
            fd = os.open(name, _fs.FILE_READ_FLAGS, dir_fd=dir_fd)
        except OSError:
            logger.debug("grep: cannot open %s", abs_str)
            return None
        return self._grep_read_fd(fd)

    def _grep_walk(
        self,
        rp: ResolvedPath,
        include_hidden: bool,
        target_decision: Decision,
        buffers: frozenset[str] | None,
    ) -> Iterator[tuple[str, str, Callable[[], str | None]]]:
        """``(display, name, read)`` for files under the target: a directory's files
        (sorted) before its subdirectories; ``read`` opens the file relative to the
        verified directory fd with ``O_NOFOLLOW`` (an open editor buffer wins: the overlay
        is asked only about ``buffers``, the paths it holds, when it can tell them).

        Hardened: every entry is judged. A non-symlink entry is searched on ``allow``
        (or ``ask`` when the walk target itself was ``ask``, i.e. approved); a symlink
        is judged by its target, and a target outside the walk must be exactly ``allow``.
        FIFOs, sockets and devices are skipped; symlinked directories are not descended.
        """
        policy = self.policy
        top = rp.abs.as_posix()

        def ok(decision: Decision) -> bool:
            return decision == "allow" or (decision == "ask" and target_decision == "ask")

        stack: list[tuple[str, str | None]] = [(top, rp.rel)]
        while stack:
            d, d_rel = stack.pop()
            try:
                fd = _fs.open_dir(Path(d), listable=True)
            except (OSError, WorkspaceError):
                continue
            dirs: list[tuple[str, str | None]] = []
            try:
                with os.scandir(fd) as it:
                    entries = sorted((de.name, de) for de in it)
                for name, de in entries:
                    if name.startswith(".") and not include_hidden:
                        continue
                    abs_str = f"{d}/{name}" if d != "/" else f"/{name}"
                    rel = None if d_rel is None else (name if d_rel == "." else f"{d_rel}/{name}")
                    try:
                        is_link = de.is_symlink()
                        is_dir = not is_link and de.is_dir(follow_symlinks=False)
                        is_file = not is_link and de.is_file(follow_symlinks=False)
                    except OSError:
                        continue
                    if is_link:
                        try:
                            target = resolve_abs(abs_str)
                            st_t = os.stat(target)
                        except (OSError, WorkspaceError):
                            continue
                        if not _stat.S_ISREG(st_t.st_mode):
                            continue
                        t_str = target.as_posix()
                        decision = self._read_decision(target)
                        inside_top = t_str == top or t_str.startswith(top.rstrip("/") + "/")
                        if decision == "allow" or (inside_top and ok(decision)):
                            yield (
                                rel if rel is not None else abs_str,
                                name,
                                functools.partial(self._grep_read_path, target),
                            )
                        continue
                    if not (is_dir or is_file):
                        continue  # FIFOs, sockets, devices
                    decision = policy.decide_path(rel=rel, abs_posix=abs_str, op="read")
                    if not ok(decision):
                        continue
                    if is_dir:
                        dirs.append((abs_str, rel))
                    else:
                        yield (
                            rel if rel is not None else abs_str,
                            name,
                            functools.partial(self._grep_read_at, fd, name, abs_str, buffers),
                        )
            finally:
                os.close(fd)
            stack.extend(reversed(dirs))


__all__ = ["DocumentOverlay", "LocalWorkspaceSession", "OutputListener", "WriteSink"]
