"""The local session's search: ``list_files`` (children or a glob) and ``grep``.

:class:`~lovia.workspace.local.LocalWorkspaceSession` takes these methods from
:class:`_SessionSearch`; the attributes and checks they use are the session's own.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import re
import stat as _stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lovia.workspace import _fs
from lovia.workspace import _rg_prefilter as _rg
from lovia.workspace._glob_walk import _compile_glob, _GlobRegex, _walk_tree
from lovia.workspace._local_files import (
    _io_errors,
    _open_listable,
)
from lovia.workspace.errors import (
    WorkspaceError,
)
from lovia.workspace.paths import ResolvedPath, relative_to_root, resolve_abs
from lovia.workspace.policy import Decision, FileOp, WorkspacePolicy
from lovia.workspace.types import (
    ClippedList,
    DirEntry,
    GrepMatch,
    WorkspaceLimits,
)

logger = logging.getLogger("lovia.workspace")

_ANCHOR_RE = re.compile(r"\^|\$|\\[AZzbB]|\(\?[=!<]")

_GrepFile = tuple[str, str, Callable[[], "str | None"]]
"""``(display, name, read)``: a file a search may read, and how."""


def _lstat_mode(path: str) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _may_search(decision: Decision, target_decision: Decision) -> bool:
    """A file is searched on ``allow``, or on ``ask`` when the search target itself was
    ``ask`` (the user approved the search)."""
    return decision == "allow" or (decision == "ask" and target_decision == "ask")


class _SessionSearch:
    """The search half of :class:`~lovia.workspace.local.LocalWorkspaceSession`."""

    root: Path
    policy: WorkspacePolicy
    limits: WorkspaceLimits
    overlay: Any  # the session's ``DocumentOverlay | None`` (local.py imports this module)

    if TYPE_CHECKING:

        def _check_open(self) -> None: ...

        def _acl(self, path: str, *ops: FileOp) -> ResolvedPath: ...

        def _decide(self, rp: ResolvedPath, op: FileOp) -> Decision: ...

        def _overlay_text(self, abs_path: Path) -> str | None: ...

        def _wrote(self, rp: ResolvedPath, text: str, *, whole: bool = True) -> None: ...

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

    def _collect(
        self, found: Iterable[tuple[Path, int, str]], cap: int
    ) -> tuple[list[DirEntry], bool]:
        """The entries ``found`` (path, its folder's fd, its name) the policy lets the agent
        see, at most ``cap`` (and whether more were left); only these are judged and stat'ed."""
        entries: dict[str, DirEntry] = {}
        for abs_path, fd, name in found:
            if self._read_decision(abs_path) == "deny":
                continue
            try:
                st_l = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            entry = self._entry(abs_path, st_l)
            if entry is None or entry.path in entries:
                continue
            if len(entries) >= cap:
                return list(entries.values()), True
            entries[entry.path] = entry
        return list(entries.values()), False

    def _list_children(
        self, rp: ResolvedPath, include_hidden: bool, cap: int
    ) -> ClippedList[DirEntry]:
        fd = _open_listable(rp)
        try:
            with os.scandir(fd) as it:
                names = [de.name for de in it if include_hidden or not de.name.startswith(".")]
            entries, truncated = self._collect(((rp.abs / n, fd, n) for n in names), cap)
        finally:
            os.close(fd)
        entries.sort(key=lambda e: (not e.is_dir, e.path))
        return ClippedList(entries, truncated=truncated)

    def _glob_list(
        self, rp: ResolvedPath, regex: _GlobRegex, include_hidden: bool, cap: int
    ) -> ClippedList[DirEntry]:
        match = regex.pattern.fullmatch
        walk = _walk_tree(rp.abs, regex.max_depth, include_hidden, self._read_decision)
        # only a match is judged and stat'ed (folders were judged by the walk)
        found = ((abs_path, fd, name) for rel, abs_path, fd, name in walk if match(rel))
        entries, truncated = self._collect(found, cap)
        return ClippedList(sorted(entries, key=lambda e: e.path), truncated=truncated)

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
            files: Iterator[_GrepFile] = iter(
                [(rp.display(), rp.abs.name, lambda: self._grep_read_path(rp.abs))]
            )
        elif st is not None and _stat.S_ISDIR(st.st_mode):
            buffers = self._overlay_paths()
            found = self._grep_prefiltered(rp, regex, include_hidden, target_decision, buffers)
            if found is not None:
                files = found
            else:
                top = rp.abs.as_posix()
                files = self._grep_walk(top, rp.rel, top, include_hidden, target_decision, buffers)
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

    def _grep_read_file(self, abs_str: str, buffers: frozenset[str]) -> str | None:
        if self.overlay is not None and abs_str in buffers:
            text = self._overlay_text(Path(abs_str))
            if text is not None:
                return None if "\x00" in text[:1024] else text
        try:
            fd = _fs.open_regular(Path(abs_str))
        except (OSError, WorkspaceError):
            logger.debug("grep: cannot open %s", abs_str)
            return None
        return self._grep_read_fd(fd)

    def _grep_prefiltered(
        self,
        rp: ResolvedPath,
        regex: re.Pattern[str],
        include_hidden: bool,
        target_decision: Decision,
        buffers: frozenset[str] | None,
    ) -> Iterator[_GrepFile] | None:
        """The files under the folder ``rp`` that may match, found by ``rg``
        (:mod:`lovia.workspace._rg_prefilter`), each judged as the walk judges it, in the
        walk's order. None: walk instead (no rg or no literal to look for, path rules, an
        overlay that cannot list its buffers, a folder outside the root...)."""
        policy = self.policy
        if rp.rel is None or target_decision != "allow" or buffers is None:
            return None
        if len(policy.restricted_patterns) != len(policy.denied_paths):
            return None  # a path rule may narrow or widen what the walk searches
        pattern = _rg.needle(regex)
        top = rp.abs.as_posix()
        globs = _rg.exclude_globs(policy.denied_paths, top, rp.rel)
        if pattern is None or globs is None:
            return None
        found = _rg.candidates(rp.abs, pattern, globs, include_hidden=include_hidden)
        if found is None:
            return None
        listed, odd = found
        base = "" if rp.rel == "." else f"{rp.rel}/"

        @functools.cache
        def searchable(rel: str) -> bool:
            """The walk would reach ``rel`` (below ``top``) and may search it."""
            head, _, name = rel.rpartition("/")
            if name.startswith(".") and not include_hidden:
                return False
            if head and not searchable(head):
                return False
            decision = policy.decide_path(rel=base + rel, abs_posix=f"{top}/{rel}", op="read")
            return _may_search(decision, target_decision)

        files: dict[str, _GrepFile] = {}

        def add_file(rel: str) -> None:
            if searchable(rel):
                read = functools.partial(self._grep_read_file, f"{top}/{rel}", buffers)
                files[rel] = (base + rel, rel.rpartition("/")[2], read)

        for rel in listed:
            add_file(rel)
        for rel in odd:  # symlinks, and names rg left to us; their folders judged as the walk
            head, _, name = rel.rpartition("/")
            if head and not searchable(head):
                continue
            abs_str = f"{top}/{rel}"
            try:
                st = os.lstat(abs_str)
            except OSError:
                continue
            if _stat.S_ISLNK(st.st_mode):
                link = self._grep_link(abs_str, base + rel, name, top, target_decision)
                if link is not None:
                    files[rel] = link
            elif _stat.S_ISREG(st.st_mode):
                add_file(rel)
            elif _stat.S_ISDIR(st.st_mode) and searchable(rel):
                walk = self._grep_walk(
                    abs_str, base + rel, top, include_hidden, target_decision, buffers, by_path=True
                )
                for item in walk:
                    files[item[0][len(base) :]] = item
        for path in buffers:  # an editor buffer rg could not see the text of
            rel = path[len(top) + 1 :] if path.startswith(top + "/") else ""
            if rel and rel not in files and _stat.S_ISREG(_lstat_mode(path)):
                add_file(rel)
        return iter([files[rel] for rel in sorted(files, key=_rg.walk_key)])

    def _grep_link(
        self, abs_str: str, display: str, name: str, top: str, target_decision: Decision
    ) -> _GrepFile | None:
        """A symlink found under the search root ``top``: searched when its target is a regular
        file the policy allows (or, inside ``top``, one the walk may search)."""
        try:
            target = resolve_abs(abs_str)
            st_t = os.stat(target)
        except (OSError, WorkspaceError):
            return None
        if not _stat.S_ISREG(st_t.st_mode):
            return None
        t_str = target.as_posix()
        decision = self._read_decision(target)
        inside_top = t_str == top or t_str.startswith(top.rstrip("/") + "/")
        if decision == "allow" or (inside_top and _may_search(decision, target_decision)):
            return (display, name, functools.partial(self._grep_read_path, target))
        return None

    def _grep_walk(
        self,
        start: str,
        start_rel: str | None,
        top: str,
        include_hidden: bool,
        target_decision: Decision,
        buffers: frozenset[str] | None,
        *,
        by_path: bool = False,
    ) -> Iterator[_GrepFile]:
        """``(display, name, read)`` for files under ``start`` (the search root ``top`` or a
        folder below it): a directory's files (sorted) before its subdirectories; ``read``
        opens the file relative to the verified directory fd with ``O_NOFOLLOW`` (an open
        editor buffer wins: the overlay is asked only about ``buffers``, the paths it holds,
        when it can tell them; ``by_path``: ``read`` opens the path again, for a caller that
        keeps the files past the walk).

        Hardened: every entry is judged. A non-symlink entry is searched on ``allow``
        (or ``ask`` when the walk target itself was ``ask``, i.e. approved); a symlink
        is judged by its target, and a target outside the walk must be exactly ``allow``.
        FIFOs, sockets and devices are skipped; symlinked directories are not descended.
        """
        policy = self.policy
        stack: list[tuple[str, str | None]] = [(start, start_rel)]
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
                        link = self._grep_link(
                            abs_str, rel if rel is not None else abs_str, name, top, target_decision
                        )
                        if link is not None:
                            yield link
                        continue
                    if not (is_dir or is_file):
                        continue  # FIFOs, sockets, devices
                    decision = policy.decide_path(rel=rel, abs_posix=abs_str, op="read")
                    if not _may_search(decision, target_decision):
                        continue
                    if is_dir:
                        dirs.append((abs_str, rel))
                    elif by_path and buffers is not None:
                        read = functools.partial(self._grep_read_file, abs_str, buffers)
                        yield (rel if rel is not None else abs_str, name, read)
                    else:
                        read = functools.partial(self._grep_read_at, fd, name, abs_str, buffers)
                        yield (rel if rel is not None else abs_str, name, read)
            finally:
                os.close(fd)
            stack.extend(reversed(dirs))
