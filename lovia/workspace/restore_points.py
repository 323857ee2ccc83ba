"""Restore points: snapshots of the workspace tree that a user can roll back to.

A *shadow* git repository, kept in a store directory outside the workspace (and
outside any ``.git`` of the user's), records the tree before each turn that may write.
It is driven through the ``git`` CLI with its own ``GIT_DIR`` and index and the
workspace as work tree, so the user's repository, index and stash are never touched.
Snapshots are content-addressed (git's object store) and incremental (the shadow index
is kept between snapshots, so git's stat cache skips unchanged files). In a git repository
the first snapshot starts from the repository's own index (``_restore_seed``); within a run,
points use a change watch (``_tree_watch``) and write their tree without the index
(``_tree_edit``), so a point costs what changed, not the size of the tree.

Hosts use :class:`RestorePoints`: ``before_turn`` (the run hook), ``after_run``,
``list_points``, ``preview``, ``restore``, ``delete_session``, ``prune``. See
``docs/restore-points.md``.

Long because ``RestorePoints`` is one stateful object: its points (commit, list, drop,
baseline) and pruning run under one store lock and share its state. Its capture (shadow index,
change watch, filters) is in :mod:`._restore_capture`, preview and restore (with the journal) in
:mod:`._point_restore`, its models in :mod:`.restore_models` and the store's plain parts in
:mod:`._shadow_git`; splitting the points from pruning is left for later.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lovia.exceptions import UserError
from lovia.tools.presentation import may_write
from lovia.workspace import _restore_apply as apply
from lovia.workspace import _restore_seed, _tree_watch
from lovia.workspace._git import GitError, GitRunner, find_git
from lovia.workspace._point_restore import _PointRestore
from lovia.workspace._shadow_git import (
    _denied_as_ignore,
    _escape_ignore,
    _label,
    _parse_raw_diff,
    _read_json,
    _resolve_dirs,
    _store_path,
    _write_json,
)
from lovia.workspace.paths import relative_to_root, resolve_abs
from lovia.workspace.patterns import PathTest
from lovia.workspace.policy import WorkspacePolicy
from lovia.workspace.restore_models import (
    ChangedPath,
    FileRestore,
    PointKind,
    RestorePoint,
    RestorePointError,
    RestorePointSettings,
    RestorePreview,
    RestoreResult,
    SkippedPath,
    UnconfirmedProtectedPaths,
    _Entry,
    _Head,
)

try:  # POSIX only; elsewhere the in-process lock is all there is
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("lovia.workspace.restore_points")

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

_POINT_REF = "refs/lovia/points/"
# A deleted point's record of hand changes (see ``_delete_points``), kept while older points live.
_HAND_REF = "refs/lovia/hand/"
# A point's ``base_tree`` (the tree object itself: refs may name trees), kept reachable with it.
_BASE_REF = "refs/lovia/bases/"
_PAIR_HEADER = re.compile(rb"([0-9a-f]{40,64}) ([0-9a-f]{40,64})\n")
_LATEST_REF = "refs/lovia/latest"  # the newest point's commit (what "changed" is relative to)
_ID_RE = re.compile(r"^rp-[0-9]{16}-[0-9a-f]{6}$")
_PACK_LOOSE_OBJECTS = 5000  # prune() packs the store beyond this many loose objects

_warned: set[str] = set()
_NO_GIT = (
    "git was not found on PATH; restore points are off for this workspace "
    "(install git to enable them)."
)


def git_missing(git_path: str | None = None) -> str | None:
    """Why restore points cannot work here (no ``git`` on ``git_path``/``$PATH``), or None."""
    return _NO_GIT if find_git(git_path) is None else None


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        logger.warning(message)


# --------------------------------------------------------------------------- the store


def _resolve_all(paths: Sequence[str | Path]) -> tuple[Path, ...]:
    return tuple(Path(os.path.realpath(os.path.expanduser(p))) for p in paths)


@dataclass
class RestorePoints(_PointRestore):
    """The restore-point store of one workspace. Build with :meth:`open`."""

    root: Path
    store: Path
    policy: WorkspacePolicy
    settings: RestorePointSettings
    git: GitRunner | None
    unavailable_reason: str | None = None
    last_error: str | None = None
    # More folders never to store (the host's own state, when it lives in the workspace).
    exclude: tuple[Path, ...] = ()
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)
    _lock_fd: int | None = field(default=None, init=False, repr=False)
    _turns: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    _turn_lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)
    _last_id: int = field(default=0, init=False, repr=False)
    # Only this process uses the store (its flock), so HEAD is cached after open.
    _head: _Head | None = field(default=None, init=False, repr=False)
    # The tree of the shadow index as last written, and of the newest point (None: unknown).
    _index_tree: str | None = field(default=None, init=False, repr=False)
    _latest_tree: str | None = field(default=None, init=False, repr=False)
    # The tree of the last capture (the index may lag behind it after a quick one), and
    # the diff a quick capture already knows: (from tree, to tree, [(path, A/M/D, ...)]).
    _tree: str | None = field(default=None, init=False, repr=False)
    _known_diff: tuple[str, str, list[tuple[str, str, str | None, str | None]]] | None = field(
        default=None, init=False, repr=False
    )
    # The change watch (inotify) and whether the index matched the tree when it last reset.
    _watch: _tree_watch.TreeWatch | None = field(default=None, init=False, repr=False)
    _watch_synced: bool = field(default=False, init=False, repr=False)
    _watch_off: bool = field(default=False, init=False, repr=False)
    # The denial patterns' one-regex prefilter, rebuilt when the policy's denials change.
    _deny_filter: tuple[tuple[Any, Any], PathTest, tuple[str, ...]] | None = field(
        default=None, init=False, repr=False
    )

    # ------------------------------------------------------------------ opening

    @classmethod
    async def open(
        cls,
        root: str | Path,
        store_dir: str | Path,
        *,
        policy: WorkspacePolicy | None = None,
        settings: RestorePointSettings | None = None,
        git_path: str | None = None,
        exclude: Sequence[str | Path] = (),
    ) -> RestorePoints:
        """Open (creating) the store for ``root`` under ``store_dir``.

        Never fails because git is missing: the result then has ``available == False``
        and ``unavailable_reason`` says why (also logged once). ``git_path`` is a PATH
        string to look ``git`` up on (default ``$PATH``). A crashed restore is finished
        here. ``exclude``: more folders that are never stored or touched (a host's state
        directory, say, when it lies inside the workspace).
        """
        root_path, base = await asyncio.to_thread(_resolve_dirs, root, store_dir)
        store = _store_path(root_path, base)
        if ".git" in store.parts:
            raise UserError(
                f"The restore-point store cannot live inside the workspace's .git: {store}",
                hint="Pass a store directory outside the workspace (e.g. next to the state DB).",
            )
        self = cls(
            root=root_path,
            store=store,
            policy=policy or WorkspacePolicy(),
            settings=settings or RestorePointSettings(),
            git=None,
            exclude=await asyncio.to_thread(_resolve_all, exclude),
        )
        git = find_git(git_path)
        if git is None:
            self.unavailable_reason = _NO_GIT
            _warn_once(self.unavailable_reason)
            return self
        try:
            await asyncio.to_thread(store.mkdir, parents=True, exist_ok=True)
            self._lock_fd = os.open(store / "lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            self.git = GitRunner(
                git=git,
                git_dir=store / "git",
                work_tree=root_path,
                index_file=store / "index",
                home=store,
                pass_fds=(self._lock_fd,),
            )
            async with self._locked():
                await self._init_repo()
                await self._recover()
        except (OSError, GitError) as exc:
            self.unavailable_reason = f"restore points are off: {exc}"
            self.git = None
            _warn_once(self.unavailable_reason)
        return self

    @staticmethod
    def store_exists(root: str | Path, store_dir: str | Path) -> bool:
        """Whether ``root`` has a store under ``store_dir`` already (nothing is created)."""
        base = resolve_abs(Path(store_dir).expanduser())
        return _store_path(resolve_abs(Path(root).expanduser()), base).is_dir()

    @staticmethod
    def store_path(root: str | Path, store_dir: str | Path) -> Path:
        """Where ``root``'s store lives under ``store_dir`` (whether or not it exists)."""
        base = resolve_abs(Path(store_dir).expanduser())
        return _store_path(resolve_abs(Path(root).expanduser()), base)

    @property
    def available(self) -> bool:
        return self.git is not None

    async def close(self) -> None:
        """Release the store (after an operation in progress has finished)."""
        async with self._lock:
            self._close()

    def _close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)
            self._lock_fd = None
        self.git = None
        self.unavailable_reason = self.unavailable_reason or "closed"

    def _runner(self) -> GitRunner:
        if self.git is None:
            raise RestorePointError(
                "Restore points are not available for this workspace.",
                hint=self.unavailable_reason or "Install git to enable restore points.",
            )
        return self.git

    @contextlib.asynccontextmanager
    async def _locked(self) -> Any:
        async with self._lock:
            fd = self._lock_fd
            if fd is not None and fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    await asyncio.to_thread(fcntl.flock, fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                if fd is not None and fcntl is not None:
                    with contextlib.suppress(OSError):
                        fcntl.flock(fd, fcntl.LOCK_UN)

    async def _init_repo(self) -> None:
        git = self._runner()
        git_dir = git.git_dir
        if not (git_dir / "HEAD").exists():
            await git.run("init", "--quiet")
        # Our lock is held and every git child of ours held it too: lock files are stale.
        for lock in (
            self.store / "index.lock",
            git_dir / "HEAD.lock",
            git_dir / "packed-refs.lock",
        ):
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()
        for dirpath, _, files in os.walk(git_dir / "refs"):
            for name in files:
                if name.endswith(".lock"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(os.path.join(dirpath, name))
        await self._write_excludes()
        await self._load_head()

    async def _load_head(self) -> None:
        git = self._runner()
        code, out, _ = await git.run_full("log", "-1", "--format=%H%x00%T", "HEAD")
        parts = out.decode().strip().split("\0") if code == 0 else []
        self._head = _Head(parts[0], parts[1]) if len(parts) == 2 and parts[0] else None

    async def _write_excludes(self) -> None:
        git = self._runner()
        lines = [
            "# written by lovia restore points; regenerated on open",
            f"{apply.TEMP_PREFIX}*{apply.TEMP_SUFFIX}",
        ]
        rel_store = relative_to_root(self.root, self.store)
        if rel_store is not None:
            _warn_once(f"restore-point store {self.store} is inside the workspace; it is excluded")
            lines.append("/" + _escape_ignore(rel_store) + "/")
        for folder in self.exclude:
            rel = relative_to_root(self.root, folder)
            if rel is not None and rel != ".":
                lines.append("/" + _escape_ignore(rel) + "/")
        lines += _denied_as_ignore(self.policy, self.root)
        user_exclude = self.root / ".git" / "info" / "exclude"
        with contextlib.suppress(OSError):
            lines += user_exclude.read_text("utf-8", "replace").splitlines()
        text = "\n".join(lines) + "\n"
        path = git.git_dir / "info" / "exclude"
        path.parent.mkdir(parents=True, exist_ok=True)
        state_path = self.store / "state.json"
        fingerprint = hashlib.sha256(
            (text + repr(self._denial_key()) + str(self.settings.max_file_bytes)).encode()
        ).hexdigest()
        old = _read_json(state_path).get("fingerprint")
        with contextlib.suppress(FileNotFoundError):
            if path.read_text() == text and old == fingerprint:
                return
        path.write_text(text)
        if old is not None and old != fingerprint:
            await self._drop_tracked_unwanted(all_entries=True)
        _write_json(state_path, {"fingerprint": fingerprint})

    # ------------------------------------------------------------------ points

    def _new_id(self) -> str:
        now = max(time.time_ns() // 1000, self._last_id + 1)
        self._last_id = now
        return f"rp-{now:016d}-{secrets.token_hex(3)}"

    async def _list(self) -> list[RestorePoint]:
        return (await self._list_all())[0]

    async def _list_all(self) -> tuple[list[RestorePoint], list[RestorePoint]]:
        """``(points, hand records of deleted points)``, each oldest first."""
        git = self._runner()
        out = await git.run(
            "for-each-ref",
            "--format=%(refname)%00%(objectname)%00%(tree)%00%(contents)%00",
            _POINT_REF,
            _HAND_REF,
        )
        fields = out.decode("utf-8", "replace").split("\0")
        points: list[RestorePoint] = []
        hands: list[RestorePoint] = []
        for i in range(0, len(fields) - 3, 4):
            ref, commit, tree, body = fields[i].strip(), fields[i + 1], fields[i + 2], fields[i + 3]
            try:
                data = json.loads(body)
                point = RestorePoint.model_validate({**data, "commit": commit, "tree": tree})
            except ValueError:
                logger.warning("skipping an unreadable restore point %s", commit)
                continue
            (hands if ref.startswith(_HAND_REF) else points).append(point)
        points.sort(key=lambda p: p.id)
        hands.sort(key=lambda p: p.id)
        return points, hands

    async def _get(self, point_id: str) -> RestorePoint:
        if not isinstance(point_id, str) or not _ID_RE.match(point_id):
            raise RestorePointError(
                f"Unknown restore point: {point_id!r}", hint="List the points to get valid ids."
            )
        for p in await self._list():
            if p.id == point_id:
                return p
        raise RestorePointError(
            f"Unknown restore point: {point_id!r}",
            hint="It may have been deleted with its session or pruned by the size cap.",
        )

    async def _diff(self, a: str, b: str) -> list[_Entry]:
        git = self._runner()
        out = await git.run("diff-tree", "-r", "-z", "--no-renames", "--raw", a, b)
        return list(_parse_raw_diff(out))

    async def _diff_pairs(self, pairs: list[tuple[str, str]]) -> list[list[_Entry]]:
        """Several tree diffs in one git process (``diff-tree --stdin``), in order."""
        if not pairs:
            return []
        git = self._runner()
        data = "".join(f"{a} {b}\n" for a, b in pairs).encode()
        out = await git.run("diff-tree", "--stdin", "-r", "-z", "--no-renames", "--raw", input=data)
        results: list[list[_Entry]] = []
        pos = 0
        while pos < len(out):
            header = _PAIR_HEADER.match(out, pos)
            if header is not None:
                results.append([])
                pos = header.end()
                continue
            end = out.find(b"\0", pos)
            end = out.find(b"\0", end + 1) if end >= 0 else -1
            if end < 0 or not results:
                break
            results[-1].extend(_parse_raw_diff(out[pos : end + 1]))
            pos = end + 1
        if len(results) != len(pairs):
            raise GitError(f"git diff-tree --stdin answered {len(results)} of {len(pairs)} diffs")
        return results

    async def _commit_point(
        self,
        tree: str,
        *,
        kind: PointKind,
        skipped: list[SkippedPath],
        session_id: str | None = None,
        turn_index: int | None = None,
        label: str = "",
        user_message: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> RestorePoint:
        git = self._runner()
        cap = self.settings.max_listed_paths
        known = self._known_diff
        self._known_diff = None
        if self._latest_tree == tree:
            entries: list[_Entry] = []  # the same tree as the newest point: nothing changed
        elif known is not None and known[0] == self._latest_tree and known[1] == tree:
            entries = [_Entry(p, None, None, old, new, status) for p, status, old, new in known[2]]
        else:
            code, out, _ = await git.run_full(
                "diff-tree", "-r", "-z", "--no-renames", "--raw", _LATEST_REF, tree
            )
            entries = (
                list(_parse_raw_diff(out)) if code == 0 else await self._diff(EMPTY_TREE, tree)
            )
        status = {"A": "added", "D": "deleted"}
        changed = [
            ChangedPath(path=e.path, status=status.get(e.status, "modified"))  # type: ignore[arg-type]
            for e in entries[:cap]
        ]
        # Where the tree differs from the state last recorded for the agent, the difference
        # was made by hand; a ref keeps that state's tree reachable as long as the point.
        head = self._head
        base_tree = head.tree if head is not None and head.tree != tree else ""
        point = RestorePoint(
            id=self._new_id(),
            created_at=time.time(),
            kind=kind,
            session_id=session_id,
            turn_index=turn_index,
            label=label,
            user_message=user_message[:4000] if user_message is not None else None,
            changed=changed,
            changed_count=len(entries),
            skipped=skipped[:cap],
            skipped_count=len(skipped),
            metadata=metadata or {},
            base_tree=base_tree,
        )
        body = point.model_dump_json(
            exclude={"commit", "tree", "changes_after", "changes_after_count"}
        )
        commit = (
            (await git.run("commit-tree", tree, "-F", "-", input=body.encode())).decode().strip()
        )
        refs = f"update {_POINT_REF}{point.id} {commit}\n"
        if base_tree:
            refs += f"update {_BASE_REF}{point.id} {base_tree}\n"
        refs += f"update {_LATEST_REF} {commit}\nupdate HEAD {commit}\n"
        await git.run("update-ref", "--no-deref", "--stdin", input=refs.encode())
        self._head = _Head(commit, tree)
        self._latest_tree = tree
        return point.model_copy(update={"commit": commit, "tree": tree})

    async def _baseline_tree(self) -> str | None:
        """Tree of the state last produced by a snapshot, a settled run or a restore."""
        return self._head.tree if self._head is not None else None

    async def _set_baseline(self, tree: str) -> None:
        git = self._runner()
        out = await git.run("commit-tree", tree, "-F", "-", input=b'{"baseline": true}\n')
        commit = out.decode().strip()
        await git.run("update-ref", "--no-deref", "HEAD", commit)
        self._head = _Head(commit, tree)

    async def _hand_paths_after(self, point: RestorePoint) -> set[str]:
        """Paths changed by hand at some time after ``point`` (up to the newest record)."""
        points, hands = await self._list_all()
        later = [
            q
            for q in (*points, *hands)
            if q.id > point.id and q.base_tree and q.base_tree != q.tree
        ]
        diffs = await self._diff_pairs([(q.base_tree, q.tree) for q in later])
        return {e.path for entries in diffs for e in entries}

    # ------------------------------------------------------------------ public API

    async def snapshot(
        self,
        *,
        kind: PointKind = "manual",
        session_id: str | None = None,
        turn_index: int | None = None,
        label: str = "",
        user_message: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> RestorePoint:
        """Record the tree as it stands now. Raises :class:`RestorePointError` without git."""
        self._runner()
        async with self._locked():
            try:
                tree, skipped = await self._capture(quick=True)
                return await self._commit_point(
                    tree,
                    kind=kind,
                    skipped=skipped,
                    session_id=session_id,
                    turn_index=turn_index,
                    label=label,
                    user_message=user_message,
                    metadata=metadata,
                )
            except GitError as exc:
                raise RestorePointError(f"Could not take a restore point: {exc.message}") from exc

    async def before_turn(
        self,
        session_id: str,
        turn_index: int,
        user_message: str | None = None,
        *,
        tools: Iterable[Any] | None = None,
        is_write_tool: Callable[[Any], bool] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> RestorePoint | None:
        """The run hook: call it before a turn's tool calls run.

        Snapshots at most once per ``(session_id, turn_index)`` and only when one of
        ``tools`` (the tools about to be called) may change files — by its declared kind
        (:func:`lovia.tools.presentation.may_write`: anything but ``read``, ``search``,
        ``think`` and ``fetch``) or ``is_write_tool``; with ``tools=None`` the turn is
        assumed to write. Never raises: failures are logged, kept in ``last_error`` and
        return None.
        """
        if self.git is None:
            return None
        if tools is not None:
            pred = is_write_tool or may_write
            if not any(pred(t) for t in tools):
                return None
        async with self._turn_lock:
            return await self._before_turn(session_id, turn_index, user_message, metadata)

    async def _before_turn(
        self,
        session_id: str,
        turn_index: int,
        user_message: str | None,
        metadata: dict[str, Any] | None,
    ) -> RestorePoint | None:
        if self._turns.get(session_id) == turn_index:
            return None
        try:
            if session_id not in self._turns:
                async with self._locked():
                    known = await self._list()
                if any(
                    p.session_id == session_id and p.turn_index == turn_index and p.kind == "turn"
                    for p in known
                ):
                    self._turns[session_id] = turn_index
                    return None
            point = await self.snapshot(
                kind="turn",
                session_id=session_id,
                turn_index=turn_index,
                user_message=user_message,
                label=_label(user_message, turn_index),
                metadata=metadata,
            )
        except Exception as exc:
            self.last_error = str(exc)
            logger.warning("restore point before turn %s failed: %s", turn_index, exc)
            return None
        self._turns[session_id] = turn_index
        return point

    async def after_run(self, session_id: str | None = None) -> None:
        """Mark the tree as the agent left it (call when a run ends), then apply the size cap.

        Changes after this are "by hand" for :meth:`preview`. The mark is per workspace;
        ``session_id`` is accepted for symmetry with :meth:`before_turn`. Never raises.
        """
        if self.git is None:
            return
        try:
            async with self._locked():
                tree, _ = await self._capture()
                await self._set_baseline(tree)
                # Off the turn's path: stop borrowing blobs from the user's repository.
                await _restore_seed.own_objects(self._runner())
            await self.prune()
        except Exception as exc:
            self.last_error = str(exc)
            logger.warning("restore points after run failed: %s", exc)

    async def warm(self) -> None:
        """Bring the shadow index up to date without taking a point (never raises).

        A full scan: a host calls this when a run starts, while the model thinks, so the
        snapshot before the first write is quick and the change watch starts from a scan.
        """
        if self.git is None:
            return
        try:
            async with self._locked():
                await self._capture()
        except Exception as exc:
            self.last_error = str(exc)
            logger.warning("restore points warm-up failed: %s", exc)

    async def list_points(
        self, session_id: str | None = None, *, with_changes: bool = False
    ) -> list[RestorePoint]:
        """Points, oldest first (all sessions, or one).

        ``with_changes`` fills each point's ``changes_after``: what changed from the point to
        the state recorded after it — for a turn's point, the files that turn changed.
        """
        if self.git is None:
            return []
        async with self._locked():
            points = await self._list()
            chosen = [p for p in points if session_id is None or p.session_id == session_id]
            if not with_changes or not chosen:
                return chosen
            head = await self._baseline_tree()
            ends: dict[str, str] = {}
            for p, nxt in zip(points, [*points[1:], None], strict=True):
                ends[p.id] = (nxt.base_tree or nxt.tree) if nxt is not None else (head or p.tree)
            try:
                diffs = await self._diff_pairs([(p.tree, ends[p.id]) for p in chosen])
            except GitError as exc:
                raise RestorePointError(f"Could not list the changes: {exc.message}") from exc
        status = {"A": "added", "D": "deleted"}
        cap = self.settings.max_listed_paths
        return [
            p.model_copy(
                update={
                    "changes_after": [
                        ChangedPath(path=e.path, status=status.get(e.status, "modified"))  # type: ignore[arg-type]
                        for e in entries[:cap]
                    ],
                    "changes_after_count": len(entries),
                }
            )
            for p, entries in zip(chosen, diffs, strict=True)
        ]

    async def drop_turns(self, session_id: str, from_turn: int) -> int:
        """Delete a session's turn points from ``from_turn`` on (its conversation was cut
        there); undo points of restores are kept. Returns how many were deleted."""
        if self.git is None:
            return 0
        async with self._turn_lock, self._locked():
            points = [
                p
                for p in await self._list()
                if p.session_id == session_id
                and p.kind == "turn"
                and p.turn_index is not None
                and p.turn_index >= from_turn
            ]
            await self._delete_points(points)
            self._turns.pop(session_id, None)
        return len(points)

    async def get(self, point_id: str) -> RestorePoint:
        self._runner()
        async with self._locked():
            return await self._get(point_id)

    async def delete_session(self, session_id: str, *, prune: bool = True) -> int:
        """Delete a session's points (and, with ``prune``, objects nothing else uses)."""
        if self.git is None:
            return 0
        async with self._locked():
            points = [p for p in await self._list() if p.session_id == session_id]
            await self._delete_points(points)
            if prune and points:
                await self._gc()
        self._turns.pop(session_id, None)
        return len(points)

    async def store_bytes(self) -> int:
        """Bytes used by the store's objects (loose + packed)."""
        git = self._runner()
        async with self._locked():
            return await self._store_bytes(git)

    async def prune(self, max_bytes: int | None = None) -> list[str]:
        """Apply the size cap: delete the oldest points until the store fits; return their ids.

        The newest point is always kept.
        """
        if self.git is None:
            return []
        cap = self.settings.max_store_bytes if max_bytes is None else max_bytes
        deleted: list[str] = []
        async with self._locked():
            git = self._runner()
            size, loose = await self._store_usage(git)
            if size <= cap:
                if loose > _PACK_LOOSE_OBJECTS:
                    await self._gc()  # pack: loose objects cost a file (and a block) each
                return []
            await self._gc()
            for _ in range(64):
                size, _ = await self._store_usage(git)
                points = await self._list()
                if size <= cap or len(points) <= 1:
                    break
                batch = points[: max(1, (len(points) - 1) // 4)]
                await self._delete_points(batch)
                deleted += [p.id for p in batch]
                await self._gc()
        return deleted

    async def _delete_points(self, points: list[RestorePoint]) -> None:
        """Delete points; a deleted point's record of hand changes stays while an older point
        lives (restoring that one must still flag them); records older than every point go."""
        if not points:
            return
        git = self._runner()
        self._latest_tree = None
        gone = {p.id for p in points}
        before, hands = await self._list_all()
        remaining = [p for p in before if p.id not in gone]
        oldest = remaining[0].id if remaining else None
        lines = [f"delete {_POINT_REF}{p.id}" for p in points]
        for p in points:
            if not p.base_tree or p.base_tree == p.tree:
                continue
            if oldest is not None and p.id > oldest and p.commit:
                lines.append(f"update {_HAND_REF}{p.id} {p.commit}")  # its base ref stays
            else:
                lines.append(f"delete {_BASE_REF}{p.id}")
        for h in hands:
            if oldest is None or h.id < oldest:
                lines += [f"delete {_HAND_REF}{h.id}", f"delete {_BASE_REF}{h.id}"]
        await git.run("update-ref", "--stdin", input=("\n".join(lines) + "\n").encode())
        if remaining:
            await git.run("update-ref", _LATEST_REF, remaining[-1].commit)
        else:
            await git.run("update-ref", "-d", _LATEST_REF, ok_codes=(0, 1))
        # HEAD may still name a deleted point's commit; re-point it at a fresh one.
        baseline = await self._baseline_tree()
        if baseline is not None:
            await self._set_baseline(baseline)

    async def _gc(self) -> None:
        git = self._runner()
        await git.run("gc", "--prune=now", "--quiet")

    async def _store_bytes(self, git: GitRunner) -> int:
        return (await self._store_usage(git))[0]

    async def _store_usage(self, git: GitRunner) -> tuple[int, int]:
        """``(bytes of objects, number of loose objects)``."""
        out = (await git.run("count-objects", "-v")).decode()
        total = loose = 0
        for line in out.splitlines():
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key in ("size", "size-pack", "size-garbage"):
                total += int(value or 0) * 1024
            elif key == "count":
                loose = int(value or 0)
        return total, loose


__all__ = [
    "ChangedPath",
    "FileRestore",
    "RestorePoint",
    "RestorePointError",
    "RestorePointSettings",
    "RestorePoints",
    "RestorePreview",
    "RestoreResult",
    "SkippedPath",
    "UnconfirmedProtectedPaths",
    "git_missing",
]
