"""Restore points' restore: previewing a point and putting the workspace back to it, with the
journal that finishes an interrupted restore.

:class:`~lovia.workspace.restore_points.RestorePoints` takes these methods from
:class:`_PointRestore`; the state and helpers they use are the store's own (declared here for
the checker).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from lovia.exceptions import LoviaError
from lovia.workspace import _restore_apply as apply
from lovia.workspace._git import GitError
from lovia.workspace._restore_capture import _ShadowCapture
from lovia.workspace._shadow_git import (
    _as_text,
    _file_diff,
    _occupied,
    _refuse_unconfirmed,
)
from lovia.workspace.protected import protects
from lovia.workspace.restore_models import (
    ChangedPath,
    FileRestore,
    PointKind,
    RestorePoint,
    RestorePointError,
    RestorePreview,
    RestoreResult,
    SkippedPath,
    _Entry,
)

_CAT_CHUNK = 256

logger = logging.getLogger("lovia.workspace.restore_points")


class _PointRestore(_ShadowCapture):
    """The restore half of :class:`~lovia.workspace.restore_points.RestorePoints`."""

    if TYPE_CHECKING:

        def _locked(self) -> contextlib.AbstractAsyncContextManager[Any]: ...

        async def _get(self, point_id: str) -> RestorePoint: ...

        async def _diff(self, a: str, b: str) -> list[_Entry]: ...

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
        ) -> RestorePoint: ...

        async def _set_baseline(self, tree: str) -> None: ...

        async def _baseline_tree(self) -> str | None: ...

        async def _hand_paths_after(self, point: RestorePoint) -> set[str]: ...

    async def preview(
        self,
        point_id: str,
        *,
        agent_paths: Iterable[str] = (),
        hand_paths: Iterable[str] = (),
        with_text: bool = True,
    ) -> RestorePreview:
        """What restoring ``point_id`` would change; hand changes are flagged.

        A path is *hand-changed* when it was changed outside the agent's runs at any time
        after the point: it differs from the state last recorded for the agent (the newest
        snapshot, ``after_run`` or restore), or a later point recorded a change of it made
        between runs — unless it is in ``agent_paths`` (paths the host knows the agent
        wrote). ``hand_paths`` are flagged too (e.g. files with unsaved editor changes).
        """
        self._runner()
        async with self._locked():
            point = await self._get(point_id)
            try:
                cur, _ = await self._capture()
                files, skipped = await self._plan(point, cur, set(agent_paths), hand_paths)
                if with_text:
                    await self._fill_text(files)
            except GitError as exc:
                raise RestorePointError(f"Could not preview the restore: {exc.message}") from exc
        return RestorePreview(point=point, files=files, skipped=skipped)

    async def restore(
        self,
        point_id: str,
        *,
        force_paths: Iterable[str] = (),
        overwrite_hand_changes: bool = False,
        agent_paths: Iterable[str] = (),
        hand_paths: Iterable[str] = (),
        session_id: str | None = None,
        confirmed_protected: Iterable[str] | None = None,
    ) -> RestoreResult:
        """Restore the files to ``point_id``; undoable (a point is taken first).

        Hand-changed files are kept unless listed in ``force_paths`` (or
        ``overwrite_hand_changes``). Files never stored (ignored, denied, too large)
        are never touched. With ``confirmed_protected`` (a host that shows the warning), a
        protected file the restore would write and that is not listed there refuses the
        whole restore (:class:`UnconfirmedProtectedPaths`); removing one needs no
        confirmation. Crash-safe: an interrupted restore is finished on the next
        :meth:`open`.
        """
        self._runner()
        forced = set(force_paths)
        async with self._locked():
            await self._recover()
            point = await self._get(point_id)
            try:
                cur, _ = await self._capture()
                files, skipped = await self._plan(point, cur, set(agent_paths), hand_paths)
                kept = [
                    f.path
                    for f in files
                    if f.hand_changed and not overwrite_hand_changes and f.path not in forced
                ]
                kept_set = set(kept)
                todo = [f for f in files if f.path not in kept_set]
                if confirmed_protected is not None:
                    _refuse_unconfirmed(todo, set(confirmed_protected))
                if not todo:
                    return RestoreResult(point=point, kept=kept, skipped=skipped)
                undo = await self._commit_point(
                    cur,
                    kind="restore",
                    skipped=[],
                    session_id=session_id,
                    label=f"Before restoring {point.id}",
                    metadata={"restoring": point.id},
                )
                ops = [
                    apply.FileOp(path=f.raw_path, op="delete")
                    if f.action == "delete"
                    else apply.FileOp(path=f.raw_path, op="write", mode=f.new_mode, blob=f.new_blob)
                    for f in todo
                ]
                journal = {"v": 1, "point": point.id, "tree": point.tree, "undo": undo.id}
                journal["ops"] = [op.to_json() for op in ops]
                await asyncio.to_thread(apply.write_journal, self._journal_path, journal)
                failed = await self._apply(ops)
                await self._finish_restore()
            except GitError as exc:
                raise RestorePointError(f"Could not restore: {exc.message}") from exc
        failed_paths = {f.path for f in failed}
        done = [f for f in todo if f.path not in failed_paths]
        status = {"create": "added", "delete": "deleted", "modify": "modified"}
        return RestoreResult(
            point=point,
            undo_point=undo,
            restored=[f.path for f in done],
            changes=[
                ChangedPath(path=f.path, status=status[f.action])  # type: ignore[arg-type]
                for f in done
            ],
            kept=kept,
            skipped=skipped + failed,
        )

    # ------------------------------------------------------------------ internals

    @property
    def _journal_path(self) -> Path:
        return self.store / "restore-journal.json"

    async def _plan(
        self,
        point: RestorePoint,
        cur: str,
        agent_paths: set[str],
        hand_paths: Iterable[str] = (),
    ) -> tuple[list[FileRestore], list[SkippedPath]]:
        entries = await self._diff(cur, point.tree)
        baseline = await self._baseline_tree()
        dirty: set[str] = set(hand_paths)
        if baseline is not None and baseline != cur:
            dirty |= {e.path for e in await self._diff(baseline, cur)} - agent_paths
        if entries:
            dirty |= await self._hand_paths_after(point) - agent_paths
        files: list[FileRestore] = []
        skipped: list[SkippedPath] = []
        for e in entries:
            if self._denied(e.path):
                skipped.append(SkippedPath(path=e.path, reason="denied"))
                continue
            if e.status == "A":
                if _occupied(self.root / e.path):
                    skipped.append(
                        SkippedPath(
                            path=e.path,
                            reason="unsaved_file_in_the_way",
                            detail="a file that is not in the current snapshot (ignored, too "
                            "large or unreadable) exists there; it is left alone",
                        )
                    )
                    continue
                action: Literal["create", "modify", "delete"] = "create"
            elif e.status == "D":
                action = "delete"
            else:
                action = "modify"
            restore = FileRestore(
                path=e.path,
                action=action,
                old_mode=e.old_mode,
                new_mode=e.new_mode,
                old_blob=e.old_sha,
                new_blob=e.new_sha,
                hand_changed=e.path in dirty,
                protected=protects(self.policy, self.root, e.path),
            )
            restore._raw = e.path
            files.append(restore)
        return files, skipped

    async def _fill_text(self, files: list[FileRestore]) -> None:
        git = self._runner()
        limit = self.settings.preview_max_bytes
        shas = [s for f in files for s in (f.old_blob, f.new_blob) if s]
        blobs: dict[str, bytes] = {}
        for i in range(0, len(shas), _CAT_CHUNK):
            blobs.update(await git.cat_blobs(shas[i : i + _CAT_CHUNK]))
        for f in files:
            old = blobs.get(f.old_blob) if f.old_blob else None
            new = blobs.get(f.new_blob) if f.new_blob else None
            f.too_large = any(d is not None and len(d) > limit for d in (old, new))
            old_text, old_bin = _as_text(old, limit)
            new_text, new_bin = _as_text(new, limit)
            f.binary = (old_bin or new_bin) and not f.too_large
            if f.too_large:
                old_text = new_text = None
            f.old_text = old_text
            f.new_text = new_text
            f.diff = _file_diff(f)

    async def _apply(self, ops: list[apply.FileOp]) -> list[SkippedPath]:
        """Run the journal's operations: deletions (deepest first), then writes."""
        git = self._runner()
        umask = apply.current_umask()
        deletes = sorted(
            (op for op in ops if op.op == "delete"), key=lambda o: o.path.count("/"), reverse=True
        )
        writes = [op for op in ops if op.op == "write"]
        failed = await asyncio.to_thread(self._apply_chunk, deletes, {}, umask)
        for i in range(0, len(writes), _CAT_CHUNK):
            chunk = writes[i : i + _CAT_CHUNK]
            blobs = await git.cat_blobs([op.blob for op in chunk if op.blob])
            failed += await asyncio.to_thread(self._apply_chunk, chunk, blobs, umask)
        return failed

    def _apply_chunk(
        self, ops: list[apply.FileOp], blobs: dict[str, bytes], umask: int
    ) -> list[SkippedPath]:
        failed: list[SkippedPath] = []
        for op in ops:
            try:
                if op.op == "delete":
                    apply.apply_delete(self.root, op.path)
                elif op.blob is None or op.mode is None or op.blob not in blobs:
                    raise ValueError("incomplete write operation")
                else:
                    apply.apply_write(self.root, op.path, blobs[op.blob], op.mode, umask)
            except (OSError, ValueError, LoviaError) as exc:
                failed.append(SkippedPath(path=op.path, reason="failed", detail=str(exc)))
        return failed

    async def _finish_restore(self) -> None:
        """After the ops ran: the restored tree becomes the baseline; drop the journal."""
        tree, _ = await self._capture()
        await self._set_baseline(tree)
        await asyncio.to_thread(apply.remove_journal, self._journal_path)

    async def _recover(self) -> None:
        """Finish a restore that a crash interrupted (replaying its journal)."""
        try:
            journal = await asyncio.to_thread(apply.read_journal, self._journal_path)
        except (OSError, ValueError) as exc:
            logger.warning("dropping an unreadable restore journal: %s", exc)
            await asyncio.to_thread(apply.remove_journal, self._journal_path)
            return
        if journal is None:
            return
        ops = [apply.FileOp.from_json(o) for o in journal.get("ops", [])]
        logger.warning(
            "finishing an interrupted restore to %s (%d files)", journal.get("point"), len(ops)
        )
        await asyncio.to_thread(apply.cleanup_temps, self.root, [o.path for o in ops])
        failed = await self._apply(ops)
        for f in failed:
            logger.warning("interrupted restore could not set %s: %s", f.path, f.detail)
        await self._finish_restore()
