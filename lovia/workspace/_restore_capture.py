"""Restore points' capture: writing the workspace's tree into the shadow store — the shadow
index, the change watch, the first seed, and the filters that keep denied and oversized files out.

:class:`~lovia.workspace.restore_points.RestorePoints` takes these methods from
:class:`_ShadowCapture`; the state they use is the store's own (declared here for the checker).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lovia.workspace import _packwrite, _restore_seed, _tree_edit, _tree_watch
from lovia.workspace._git import GitError, GitRunner
from lovia.workspace._shadow_git import (
    _parse_status,
)
from lovia.workspace.patterns import PathTest, pattern_set_matcher
from lovia.workspace.policy import WorkspacePolicy
from lovia.workspace.restore_models import (
    RestorePointSettings,
    SkippedPath,
    _Head,
)

logger = logging.getLogger("lovia.workspace.restore_points")

_BULK_THRESHOLD = 200  # this many new files at once go straight into one pack


class _ShadowCapture:
    """The capture half of :class:`~lovia.workspace.restore_points.RestorePoints`."""

    root: Path
    store: Path
    policy: WorkspacePolicy
    settings: RestorePointSettings
    exclude: tuple[Path, ...]
    _head: _Head | None
    _index_tree: str | None
    _tree: str | None
    _known_diff: tuple[str, str, list[tuple[str, str, str | None, str | None]]] | None
    _watch: _tree_watch.TreeWatch | None
    _watch_synced: bool
    _watch_off: bool
    _deny_filter: tuple[tuple[Any, Any], PathTest, tuple[str, ...]] | None

    if TYPE_CHECKING:

        def _runner(self) -> GitRunner: ...

    def _denial_key(self) -> tuple[Any, ...]:
        return (
            self.policy.denied_paths,
            tuple((r.pattern, r.action, tuple(sorted(r.ops))) for r in self.policy.path_rules),
        )

    # ------------------------------------------------------------------ filters

    def _denied(self, rel: str) -> bool:
        pol = self.policy
        key = (pol.denied_paths, pol.path_rules)
        cached = self._deny_filter
        if cached is None or cached[0][0] is not key[0] or cached[0][1] is not key[1]:
            # every rule that may not allow a read (a superset of the deny rules), folded as
            # the policy folds restricting rules
            patterns = (
                *pol.denied_paths,
                *(r.pattern for r in pol.path_rules if r.action != "allow"),
            )
            cached = (key, pattern_set_matcher(patterns, fold=True), patterns)
            self._deny_filter = cached
        _, may_cover, patterns = cached
        if not patterns:
            return False
        abs_posix = (self.root / rel).as_posix()
        if not may_cover(rel, abs_posix):
            return False  # no deny pattern can cover it: the exact test below would agree
        return pol.decide_path(rel=rel, abs_posix=abs_posix, op="read") == "deny"

    # ------------------------------------------------------------------ capture

    async def _capture(self, *, quick: bool = False) -> tuple[str, list[SkippedPath]]:
        """Bring the shadow index up to date with the tree; return its tree id.

        ``quick``: only the paths the change watch reported since the last full scan are
        looked at, when the watch is sound (a turn's point); otherwise git scans the tree.
        """
        git = self._runner()
        watch = self._watch
        if quick and watch is not None and self._watch_synced and self._index_tree is not None:
            self._watch_synced = False  # until this capture has finished
            changed = await asyncio.to_thread(watch.take)
            if changed is not None:
                result = await self._capture_changed(changed)
                if result is not None:
                    self._watch_synced = True
                    return result
        if not git.index_file.exists():
            await self._seed()
        await self._rewatch()
        status = ("status", "--porcelain=v2", "-z", "--no-renames", "--ignore-submodules=all")
        try:
            out = await git.run(*status)
        except GitError as exc:
            if "index" not in exc.stderr:
                raise
            # The shadow index is only a cache: drop a damaged one and start over.
            logger.warning("rebuilding the restore-point index: %s", exc.stderr[:200])
            await asyncio.to_thread(self._remove_index)
            out = await git.run(*status)
        update, drop, skipped, gitignore_changed = await asyncio.to_thread(self._classify, out)
        if drop:
            await self._update_index(drop, force_remove=True)
        if len(update) > _BULK_THRESHOLD:
            await self._bulk_pack(update)
        if update:
            skipped += await self._update_index(update, force_remove=False)
        if gitignore_changed:
            await self._drop_tracked_unwanted(all_entries=False)
        if drop or update or gitignore_changed or self._index_tree is None:
            self._index_tree = (await git.run("write-tree")).decode().strip()
        tree = self._index_tree  # an unchanged index has the tree written last
        if len(update) > _BULK_THRESHOLD:
            # Adding many files invalidated git's untracked cache; rebuild it now so the
            # next (incremental) snapshot stays fast.
            await git.run("status", "--porcelain=v2", "-z", "--ignore-submodules=all")
        self._watch_synced = self._watch is not None
        self._tree = tree
        return tree, skipped

    async def _rewatch(self) -> None:
        """Before a full scan: forget what the watch saw, or start one (not for a store's
        first point, which stays lean; and only where inotify works)."""
        self._watch_synced = False
        watch = self._watch
        if watch is not None and not watch.lost:
            await asyncio.to_thread(watch.reset)
            return
        if watch is not None:
            watch.close()
            self._watch = None
        if self._head is None or self._watch_off:
            return
        self._watch = await asyncio.to_thread(
            _tree_watch.TreeWatch.start, self.root, self._unwatched
        )
        self._watch_off = self._watch is None

    def _unwatched(self, rel: str) -> bool:
        """Folders no point holds: the store and ``exclude`` folders."""
        path = self.root / rel
        return any(path == f or f in path.parents for f in (self.store, *self.exclude))

    async def _capture_changed(self, changed: set[str]) -> tuple[str, list[SkippedPath]] | None:
        """The last captured tree plus the paths the watch reported, written without the
        index (see ``_tree_edit``); None: scan in full instead."""
        git = self._runner()
        base = self._tree
        if base is None or len(base) != 40:
            return None
        if not changed:
            return base, []
        found = await asyncio.to_thread(
            _tree_watch.expand_changes, self.root, changed, self._unwatched
        )
        if found is None or any("\n" in p for p, _ in found):
            return None
        files = [p for p, kind in found if kind in ("file", "unreadable")]
        ignored = await self._ignored_untracked(base, files)
        if ignored is None:
            return None
        entries = [(p, True, kind == "gone") for p, kind in found if kind != "dir"]
        entries = [e for e in entries if e[0] not in ignored]
        update, drop, skipped, gitignore_changed = await asyncio.to_thread(
            self._classify_entries, entries
        )
        if gitignore_changed:
            return None  # what is ignored changed: git's scan sorts it out
        changes: dict[str, tuple[str, str] | None] = {
            p: _tree_edit.DIR for p, k in found if k == "dir"
        }
        changes |= dict.fromkeys(drop)
        objects = git.git_dir / "objects"

        def hash_files() -> None:
            for p in update:
                try:
                    changes[p] = _tree_edit.file_entry(objects, self.root / p)
                except OSError as exc:
                    skipped.append(SkippedPath(path=p, reason="unreadable", detail=str(exc)))
                    changes[p] = None

        await asyncio.to_thread(hash_files)
        node = _tree_edit.plan(changes)
        trees = await self._read_trees(base, _tree_edit.directories(node))
        diff: list[tuple[str, str, str | None, str | None]] = []
        try:
            built = await asyncio.to_thread(_tree_edit.build, objects, node, trees, diff)
            known = True
        except _tree_edit.Incomplete as exc:
            built, known = exc.args[0], False
        if built is None:  # nothing left: the empty tree
            built = await asyncio.to_thread(_tree_edit.write_object, objects, "tree", b"")
        tree: str = built
        if known:
            self._known_diff = (base, tree, sorted(diff))
        self._tree = tree
        return tree, skipped

    async def _ignored_untracked(self, base: str, paths: list[str]) -> set[str] | None:
        """Which of ``paths`` are ignored and not in ``base`` (tracked files are kept, as git
        status does). check-ignore without --no-index walks the whole index per path."""
        if not paths:
            return set()
        git = self._runner()
        data = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
        code, out, _ = await git.run_full("check-ignore", "--no-index", "-z", "--stdin", input=data)
        if code not in (0, 1):
            return None
        ignored = {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}
        if ignored:
            listed = await git.run(
                "--literal-pathspecs",
                "ls-tree",
                "-r",
                "-z",
                "--name-only",
                base,
                "--",
                *sorted(ignored),
            )
            ignored -= {p.decode("utf-8", "surrogateescape") for p in listed.split(b"\0")}
        return ignored

    async def _read_trees(
        self, base: str, dirs: list[str]
    ) -> dict[str, dict[str, tuple[str, str]]]:
        """The entries of ``base``'s trees at ``dirs`` ("a/b/"; "" the root) that exist."""
        git = self._runner()
        data = "".join(f"{base}:{d.rstrip('/')}\n" if d else f"{base}\n" for d in dirs)
        out = await git.run("cat-file", "--batch", input=data.encode("utf-8", "surrogateescape"))
        trees: dict[str, dict[str, tuple[str, str]]] = {}
        pos = 0
        for d in dirs:
            nl = out.index(b"\n", pos)
            header = out[pos:nl].split()
            pos = nl + 1
            if len(header) != 3:
                continue  # missing: a new directory
            size = int(header[2])
            if header[1] == b"tree":
                trees[d] = _tree_edit.parse_tree(out[pos : pos + size])
            pos += size + 1
        return trees

    async def _seed(self) -> None:
        """A new shadow index starts as a copy of the user's git index (see ``_restore_seed``),
        less what a snapshot must not hold; without a usable one, files are read as before."""
        git = self._runner()
        seeded = await _restore_seed.seed_index(git, self.root, self.settings.max_file_bytes)
        if seeded is None:
            return
        drop, tracked = seeded
        ignored = await git.run("ls-files", "-z", "-ci", "--exclude-standard")
        drop += [p for p in ignored.decode("utf-8", "surrogateescape").split("\0") if p]
        drop += await asyncio.to_thread(lambda: [p for p in tracked if self._denied(p)])
        if drop:
            await self._update_index(sorted(set(drop)), force_remove=True)
        if self._head is None:
            # git status compares the index with HEAD too: an unborn HEAD would list every
            # file as added. The first point replaces this HEAD (it records no baseline).
            self._index_tree = (await git.run("write-tree")).decode().strip()
            out = await git.run("commit-tree", self._index_tree, "-m", '{"seed": true}')
            await git.run("update-ref", "--no-deref", "HEAD", out.decode().strip())

    def _remove_index(self) -> None:
        git = self._runner()
        self._index_tree = None
        with contextlib.suppress(FileNotFoundError):
            git.index_file.unlink()
        for shared in git.git_dir.glob("sharedindex.*"):
            with contextlib.suppress(FileNotFoundError):
                shared.unlink()

    def _classify(self, out: bytes) -> tuple[list[str], list[str], list[SkippedPath], bool]:
        """Sort ``git status`` entries into update / untrack / skip (stat calls: a thread)."""
        return self._classify_entries(_parse_status(out))

    def _classify_entries(
        self, entries: Iterable[tuple[str, bool, bool]]
    ) -> tuple[list[str], list[str], list[SkippedPath], bool]:
        """``(path, tracked, deleted)`` entries into update / untrack / skip."""
        update: list[str] = []
        drop: list[str] = []
        skipped: list[SkippedPath] = []
        gitignore_changed = False
        for path, tracked, deleted in entries:
            if path.endswith("/"):
                continue  # a nested repository: not snapshotted
            if path.rsplit("/", 1)[-1] == ".gitignore":
                gitignore_changed = True
            if self._denied(path):
                if tracked:
                    drop.append(path)
                continue
            if deleted:
                # force-remove: git refuses "--remove" of a path now beyond a symlink
                drop.append(path)
                continue
            try:
                st = os.lstat(self.root / path)
            except (FileNotFoundError, NotADirectoryError):
                if tracked:
                    drop.append(path)
                continue
            except OSError as exc:
                skipped.append(SkippedPath(path=path, reason="unreadable", detail=str(exc)))
                if tracked:
                    drop.append(path)
                continue
            if stat.S_ISLNK(st.st_mode):
                update.append(path)
            elif not stat.S_ISREG(st.st_mode):
                if tracked:
                    drop.append(path)
            elif st.st_size > self.settings.max_file_bytes:
                skipped.append(
                    SkippedPath(path=path, reason="too_large", detail=f"{st.st_size} bytes")
                )
                if tracked:
                    drop.append(path)
            elif not os.access(self.root / path, os.R_OK):
                skipped.append(
                    SkippedPath(path=path, reason="unreadable", detail="permission denied")
                )
                if tracked:
                    drop.append(path)
            else:
                update.append(path)
        return update, drop, skipped, gitignore_changed

    async def _bulk_pack(self, paths: list[str]) -> None:
        """Write many new blobs as one pack first (much faster than git adding them one by one)."""
        git = self._runner()
        pack_dir = git.git_dir / "objects" / "pack"
        files = [self.root / p for p in paths]
        tmp = await asyncio.to_thread(
            _packwrite.write_blob_pack, pack_dir, files, self.settings.max_file_bytes
        )
        if tmp is None:
            return
        try:
            name = (await git.run("index-pack", str(tmp))).decode().split()[-1]
            final = pack_dir / f"pack-{name}"
            await asyncio.to_thread(os.replace, tmp, final.with_suffix(".pack"))
            await asyncio.to_thread(os.replace, tmp.with_suffix(".idx"), final.with_suffix(".idx"))
        finally:
            await asyncio.to_thread(_packwrite.remove_temp, pack_dir)

    async def _update_index(self, paths: list[str], *, force_remove: bool) -> list[SkippedPath]:
        git = self._runner()
        self._index_tree = None
        skipped: list[SkippedPath] = []
        remaining = list(paths)
        for _ in range(8):
            if not remaining:
                break
            args = ["update-index", "-z", "--stdin"]
            args[1:1] = ["--force-remove"] if force_remove else ["--add", "--remove"]
            data = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in remaining)
            code, _, err = await git.run_full(*args, input=data)
            if code == 0:
                break
            text = err.decode("utf-8", "replace")
            bad = set(re.findall(r"Unable to process path (.+)", text))
            bad |= set(re.findall(r"error: open\(\"(.+?)\"\)", text))
            if not bad or not bad & set(remaining):
                raise GitError(f"git update-index failed: {text.strip()[:2000]}", stderr=text)
            for b in bad & set(remaining):
                skipped.append(SkippedPath(path=b, reason="unreadable", detail=text.strip()[:200]))
            remaining = [p for p in remaining if p not in bad]
        return skipped

    async def _drop_tracked_unwanted(self, *, all_entries: bool) -> None:
        """Untrack entries that are now ignored, denied or too large."""
        git = self._runner()
        if not (git.index_file.exists()):
            return
        ignored = await git.run("ls-files", "-z", "-ci", "--exclude-standard")
        drop = [p for p in ignored.decode("utf-8", "surrogateescape").split("\0") if p]
        if all_entries:
            out = await git.run("ls-files", "-z")
            tracked = [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
            drop += await asyncio.to_thread(self._unwanted, tracked)
        if drop:
            await self._update_index(sorted(set(drop)), force_remove=True)

    def _unwanted(self, paths: list[str]) -> list[str]:
        """The paths that are denied or over the size cap (stat calls: run in a thread)."""
        base = str(self.root) + "/"
        cap = self.settings.max_file_bytes
        out: list[str] = []
        for p in paths:
            if self._denied(p):
                out.append(p)
                continue
            try:
                st = os.lstat(base + p)
            except OSError:
                continue
            if st.st_size > cap and stat.S_ISREG(st.st_mode):
                out.append(p)
        return out
