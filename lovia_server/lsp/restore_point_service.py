"""Restore points in the editor host: a store per workspace folder next to ``state.db``, the
run hook (a point before each turn's first call that may change files) and the
``lovia/checkpoints`` / ``lovia/restorePreview`` / ``lovia/restore`` requests.

The store itself is ``lovia.workspace.restore_points``; this module maps it onto the protocol,
keeps the ACL and the settings in step with the editor, and never lets a restore-point problem
fail a run (a missing ``git`` is said once, then runs go on without restore points).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp

from lovia.workspace.restore_points import (
    ChangedPath,
    RestorePoint,
    RestorePointError,
    RestorePoints,
    RestorePointSettings,
    SkippedPath,
    UnconfirmedProtectedPaths,
    git_missing,
)
from lovia_server import protocol as p
from lovia_server.host.uris import path_uri

if TYPE_CHECKING:
    from lovia_server.host.ports import RunTurn
    from lovia_server.lsp.client_state import LspClient
    from lovia_server.lsp.editor_workspace import EditorWorkspace

logger = logging.getLogger("lovia_server.lsp.restore_point_service")

_MB = 1024 * 1024
PREVIEW_FILE_BYTES = 512 * 1024
"""Per file, the text a preview carries (bigger files show no text)."""
PREVIEW_BUDGET_CHARS = 16 * _MB
"""Over a whole preview: files beyond it come without text (``textOmitted``)."""


@dataclass(frozen=True)
class LiveRunPlace:
    """What a restore needs to know of a live run: where it works."""

    run_id: str
    session_id: str
    root: Path


CutConversation = Callable[[str, int], Awaitable[tuple[list[str], str | None]]]
"""``(session_id, turn_index) -> (removed run ids, the cut turn's prompt)``."""


class RestorePointService:
    """One ``RestorePoints`` store per workspace folder, opened on first use."""

    def __init__(
        self,
        server: LspClient,
        workspace: EditorWorkspace,
        store_dir: Path,
        live_runs: Callable[[], list[LiveRunPlace]],
        never_store: tuple[Path, ...] = (),
    ) -> None:
        self.server = server
        # Folders no point holds: the server's state dir when it lies inside a workspace
        # (its database changes while git reads it).
        self.never_store = never_store
        self.workspace = workspace
        self.store_dir = store_dir
        self.live_runs = live_runs
        self._stores: dict[Path, tuple[Any, RestorePoints]] = {}
        self._lock = asyncio.Lock()
        self._warned = False
        self._settling: dict[Path, set[asyncio.Task[None]]] = {}
        self._background: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ stores

    def _enabled(self) -> bool:
        return self.server.settings.restorePoints.enabled

    def _key(self, root: Path) -> tuple[Any, ...]:
        """What a store is opened with: when it changes (settings, ACL) the store is reopened."""
        policy = self.workspace.config_for(root).policy
        settings = self.server.settings.restorePoints
        return (
            policy.denied_paths,
            tuple((r.pattern, r.action, tuple(sorted(r.ops))) for r in policy.path_rules),
            settings.maxStoreMB,
            settings.maxFileMB,
        )

    async def store_for(self, root: Path, *, create: bool = True) -> RestorePoints | None:
        """The folder's store (None when restore points are off or, without ``create``, when
        the folder has none yet)."""
        if not self._enabled():
            return None
        key = self._key(root)
        async with self._lock:
            held = self._stores.get(root)
            if held is not None and held[0] == key:
                return held[1]
            if held is None and not create:
                exists = await asyncio.to_thread(RestorePoints.store_exists, root, self.store_dir)
                if not exists:
                    return None
            if held is not None:
                await held[1].close()
            settings = self.server.settings.restorePoints
            points = await RestorePoints.open(
                root,
                self.store_dir,
                exclude=self.never_store,
                policy=self.workspace.config_for(root).policy,
                settings=RestorePointSettings(
                    max_file_bytes=int(settings.maxFileMB * _MB),
                    max_store_bytes=int(settings.maxStoreMB * _MB),
                    preview_max_bytes=PREVIEW_FILE_BYTES,
                ),
            )
            self._stores[root] = (key, points)
        if not points.available:
            self._warn(points.unavailable_reason or "restore points are off")
        return points

    def _warn(self, reason: str) -> None:
        if self._warned:
            return
        self._warned = True
        logger.warning("restore_points.unavailable: %s", reason)
        self.server.log_to_client(
            f"lovia: {reason} Runs work as usual, without restore points.",
            lsp.MessageType.Warning,
        )

    async def _existing(self) -> list[RestorePoints]:
        """The stores of the open folders that have one (opened, so crashed restores finish)."""
        out = []
        for root in self.workspace.folders():
            try:
                points = await self.store_for(root, create=False)
            except Exception:
                logger.warning("restore_points.open_failed: %s", root, exc_info=True)
                continue
            if points is not None and points.available:
                out.append(points)
        return out

    async def recover(self) -> None:
        """Open the folders' existing stores: a restore a crash interrupted is finished."""
        await self._existing()

    async def aclose(self) -> None:
        for task in list(self._background):
            task.cancel()
        async with self._lock:
            held = list(self._stores.values())
            self._stores.clear()
        for _, points in held:
            await points.close()

    async def drop_root(self, root: Path) -> None:
        """A folder that is gone for good (a worktree run's, once landed or discarded): its
        store goes with it."""
        await self._settled(root)
        async with self._lock:
            held = self._stores.pop(root, None)
        if held is not None:
            await held[1].close()
        store = RestorePoints.store_path(root, self.store_dir)
        await asyncio.to_thread(shutil.rmtree, store, True)

    # ------------------------------------------------------------------ the run hook

    def run_started(self, turn: RunTurn) -> None:
        """Bring the folder's shadow index up to date while the model thinks."""
        self._spawn(self._warm(turn.root))

    async def _warm(self, root: Path) -> None:
        points = await self.store_for(root)
        if points is not None:
            await points.warm()

    async def before_write(self, turn: RunTurn, tools: Iterable[Any]) -> p.CheckpointCreated | None:
        """Called before tool calls run: a point for the turn when one of ``tools`` may
        change files (by its declared kind) and the turn has none yet."""
        points = await self.store_for(turn.root)
        if points is None or not points.available:
            return None
        point = await points.before_turn(
            turn.session_id,
            turn.turn_index,
            turn.prompt,
            tools=list(tools),
            metadata={"runId": turn.run_id},
        )
        if point is None:
            return None
        return p.CheckpointCreated(
            checkpoint_id=point.id,
            turn_index=turn.turn_index,
            label=point.label,
            created_at=int(point.created_at * 1000),
            root=str(points.root),
            root_uri=path_uri(points.root),
        )

    async def snapshot(self, root: Path, session_id: str, label: str) -> str | None:
        """A point of ``root`` now, outside any run (before a worktree run lands); its id."""
        points = await self.store_for(root)
        if points is None or not points.available:
            return None
        await self._settled(root)
        point = await points.snapshot(kind="manual", session_id=session_id, label=label)
        return point.id

    def run_ended(self, turn: RunTurn) -> None:
        """Record the tree as the agent left it (so its writes are not taken for hand changes)
        and apply the size cap. Restores in that folder wait for it."""
        root = turn.root
        task = self._spawn(self._settle(root, turn.session_id))
        pending = self._settling.setdefault(root, set())
        pending.add(task)
        task.add_done_callback(pending.discard)

    async def _settle(self, root: Path, session_id: str) -> None:
        points = await self.store_for(root)
        if points is not None:
            await points.after_run(session_id)

    async def _settled(self, root: Path) -> None:
        pending = list(self._settling.get(root, ()))
        if pending:
            await asyncio.wait(pending)

    def _spawn(self, coro: Awaitable[None]) -> asyncio.Task[None]:
        async def quiet() -> None:
            try:
                await coro
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("restore_points.background_failed", exc_info=True)

        task = asyncio.get_running_loop().create_task(quiet())
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # ------------------------------------------------------------------ requests

    async def checkpoints(self, session_id: str) -> p.CheckpointsResult:
        if not self._enabled():
            return p.CheckpointsResult(
                session_id=session_id,
                available=False,
                reason="Restore points are off (lovia.restorePoints.enabled).",
                checkpoints=[],
            )
        missing = git_missing()
        if missing is not None:
            return p.CheckpointsResult(
                session_id=session_id, available=False, reason=missing, checkpoints=[]
            )
        out: list[p.CheckpointInfo] = []
        stores = await self._existing()
        for points in stores:
            await self._settled(points.root)
            listed = await points.list_points(session_id, with_changes=True)
            out += [checkpoint_info(points.root, point) for point in listed]
        out.sort(key=lambda c: c.checkpoint_id)
        return p.CheckpointsResult(session_id=session_id, available=True, checkpoints=out)

    async def preview(self, checkpoint_id: str) -> p.RestorePreviewResult:
        points, point = await self._find(checkpoint_id)
        await self._settled(points.root)
        unsaved = set(self.workspace.unsaved_paths(points.root))
        preview = await points.preview(checkpoint_id, hand_paths=unsaved)
        budget = PREVIEW_BUDGET_CHARS
        files: list[p.RestoreFile] = []
        for f in preview.files:
            size = len(f.old_text or "") + len(f.new_text or "") + len(f.diff)
            over = size > budget
            if not over:
                budget -= size
            omit = f.binary or f.too_large or over
            path = points.root / f.path
            files.append(
                p.RestoreFile(
                    path=str(path),
                    uri=path_uri(path),
                    action=f.action,
                    hand_changed=f.hand_changed,
                    unsaved=f.path in unsaved,
                    binary=f.binary,
                    old_text=None if omit else f.old_text,
                    new_text=None if omit else f.new_text,
                    diff="" if over else f.diff,
                    text_omitted=omit,
                    protected=f.protected,
                )
            )
        return p.RestorePreviewResult(
            checkpoint=await self._info(points, point),
            files=files,
            hand_changed=[str(points.root / path) for path in preview.hand_changed],
            skipped=[skipped_file(points.root, s) for s in preview.skipped],
        )

    async def restore(self, params: p.RestoreParams, cut: CutConversation) -> p.RestoreResult:
        points, point = await self._find(params.checkpoint_id)
        if params.conversation and (
            point.kind != "turn" or point.session_id is None or point.turn_index is None
        ):
            raise p.invalid_params(
                "Only a turn's checkpoint can restore the conversation too", "conversation"
            )
        self._refuse_while_live(points.root, point.session_id if params.conversation else None)
        await self._settled(points.root)
        info = await self._info(points, point)
        forced = [self._relative(points.root, path) for path in params.force_paths]
        confirmed = [self._relative(points.root, path) for path in params.confirm_protected]
        try:
            result = await points.restore(
                point.id,
                force_paths=[f for f in forced if f is not None],
                overwrite_hand_changes=params.force_all,
                hand_paths=self.workspace.unsaved_paths(points.root),
                session_id=point.session_id,
                confirmed_protected=[c for c in confirmed if c is not None],
            )
        except UnconfirmedProtectedPaths as exc:
            raise p.ProtocolError(
                p.PROTECTED_PATHS_UNCONFIRMED,
                exc.message,
                {
                    "checkpointId": point.id,
                    "paths": [str(points.root / path) for path in exc.paths],
                    "field": "confirmProtected",
                },
            ) from None
        removed: list[str] = []
        prompt: str | None = None
        if params.conversation and point.session_id is not None and point.turn_index is not None:
            removed, prompt = await cut(point.session_id, point.turn_index)
            for store in await self._existing():
                await store.drop_turns(point.session_id, point.turn_index)
        undo = result.undo_point
        return p.RestoreResult(
            checkpoint=info,
            undo_checkpoint=checkpoint_info(points.root, undo) if undo is not None else None,
            restored=[changed_file(points.root, c) for c in result.changes],
            kept=[str(points.root / path) for path in result.kept],
            skipped=[skipped_file(points.root, s) for s in result.skipped],
            removed_runs=removed,
            prompt=prompt,
        )

    async def delete_session(self, session_id: str) -> None:
        """The session's restore points go with it (and objects nothing else uses)."""
        for points in await self._existing():
            try:
                await points.delete_session(session_id)
            except Exception:
                logger.warning("restore_points.delete_failed: %s", session_id, exc_info=True)

    # ------------------------------------------------------------------ helpers

    async def _find(self, checkpoint_id: str) -> tuple[RestorePoints, RestorePoint]:
        stores = await self._existing()
        for points in stores:
            try:
                return points, await points.get(checkpoint_id)
            except RestorePointError:
                continue
        hint = (
            "It may have been deleted with its session or pruned by lovia.restorePoints.maxStoreMB."
        )
        if not self._enabled():
            hint = "Restore points are off (lovia.restorePoints.enabled)."
        elif git_missing() is not None:
            hint = "Restore points are off: git was not found (install git to enable them)."
        raise p.ProtocolError(
            p.CHECKPOINT_NOT_FOUND,
            f"Unknown checkpoint {checkpoint_id}",
            {"checkpointId": checkpoint_id, "hint": hint},
        )

    def _refuse_while_live(self, root: Path, session_id: str | None) -> None:
        for run in self.live_runs():
            if run.root == root or run.session_id == session_id:
                raise p.ProtocolError(
                    p.RESTORE_WHILE_RUNNING,
                    f"A run is live in {root}; restoring now would pull files from under it",
                    {
                        "activeRunId": run.run_id,
                        "sessionId": run.session_id,
                        "hint": "Cancel the run (lovia/cancel) or wait for it to finish.",
                    },
                )

    async def _info(self, points: RestorePoints, point: RestorePoint) -> p.CheckpointInfo:
        """The point with the files its turn changed."""
        listed = await points.list_points(point.session_id, with_changes=True)
        for candidate in listed:
            if candidate.id == point.id:
                return checkpoint_info(points.root, candidate)
        return checkpoint_info(points.root, point)

    @staticmethod
    def _relative(root: Path, path: str) -> str | None:
        candidate = Path(path)
        if not candidate.is_absolute():
            return candidate.as_posix()
        try:
            return candidate.relative_to(root).as_posix()
        except ValueError:
            return None


def checkpoint_info(root: Path, point: RestorePoint) -> p.CheckpointInfo:
    changes = point.changes_after or []
    run_id = point.metadata.get("runId")
    restoring = point.metadata.get("restoring")
    return p.CheckpointInfo(
        checkpoint_id=point.id,
        kind=point.kind,
        session_id=point.session_id,
        run_id=run_id if isinstance(run_id, str) else None,
        turn_index=point.turn_index,
        created_at=int(point.created_at * 1000),
        label=point.label,
        user_message=point.user_message,
        changed_files=[changed_file(root, c) for c in changes],
        changed_count=point.changes_after_count or 0,
        restores=restoring if isinstance(restoring, str) else None,
        root=str(root),
        root_uri=path_uri(root),
    )


def changed_file(root: Path, change: ChangedPath) -> p.ChangedFile:
    path = root / change.path
    return p.ChangedFile(path=str(path), uri=path_uri(path), status=change.status)


def skipped_file(root: Path, skipped: SkippedPath) -> p.SkippedFile:
    return p.SkippedFile(
        path=str(root / skipped.path), reason=skipped.reason, detail=skipped.detail
    )


__all__ = ["LiveRunPlace", "RestorePointService", "checkpoint_info"]
