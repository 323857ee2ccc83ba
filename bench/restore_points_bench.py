"""Benchmark: restore points on a 20,000-file workspace.

Not a test. Run:  python bench/restore_points_bench.py [--files 20000] [--repeat 5]

Measures the first snapshot, an incremental snapshot after a one-line change in one
file, how much the store grows for that change (bytes of objects and refs, the shadow
index excluded as it is rewritten in place), and restore times (one file; 1,000 files).
Targets (issue 14): first < 3 s, incremental < 100 ms, growth < 5 KB.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from lovia.workspace import WorkspacePolicy
from lovia.workspace.restore_points import RestorePoints


def build_tree(root: Path, files: int, seed: int = 11) -> list[Path]:
    """A source-checkout-like tree: 20 packages x 20 modules dirs x ~50 files, ~1.2 KB each."""
    rng = random.Random(seed)
    paths: list[Path] = []
    per_dir = 50
    n_dirs = max(1, files // per_dir)
    for d in range(n_dirs):
        directory = root / f"pkg{d // 20}" / f"mod{d % 20}"
        directory.mkdir(parents=True, exist_ok=True)
        for f in range(per_dir):
            if len(paths) >= files:
                break
            p = directory / f"file{f}.py"
            p.write_text(
                "".join(f"value_{i} = {rng.randint(0, 10**9)}  # line {i}\n" for i in range(40))
            )
            paths.append(p)
    (root / ".gitignore").write_text("build/\n")
    (root / ".env").write_text("SECRET=1\n")
    return paths


def store_bytes(store: Path) -> int:
    """Apparent size of everything in the store except the shadow index."""
    total = 0
    for dirpath, _, names in os.walk(store):
        for name in names:
            if name == "index":
                continue
            total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def cpu() -> float:
    """CPU seconds of this process and its (git) children: a load-independent cost."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        ru = resource.getrusage(who)
        total += ru.ru_utime + ru.ru_stime
    return total


async def main(files: int, repeat: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="rp-bench-"))
    root = tmp / "ws"
    root.mkdir()
    store_dir = tmp / "state" / "restore-points"
    try:
        paths = build_tree(root, files)
        print(f"tree: {len(paths)} files under {root}; load average {os.getloadavg()[0]:.2f}")
        rp = await RestorePoints.open(
            root, store_dir, policy=WorkspacePolicy.coding(denied_paths=(".env*",))
        )
        (store,) = list(store_dir.iterdir())

        cpu0, t0 = cpu(), time.perf_counter()
        first = await rp.snapshot(label="first")
        t_first, cpu_first = time.perf_counter() - t0, cpu() - cpu0
        print(
            f"first snapshot: {t_first * 1000:.0f} ms wall ({cpu_first * 1000:.0f} ms CPU),"
            f" {first.changed_count} files, store {store_bytes(store) / 1e6:.1f} MB"
        )

        rng = random.Random(3)
        inc: list[float] = []
        inc_cpu: list[float] = []
        growth: list[int] = []
        for i in range(repeat):
            target = rng.choice(paths)
            lines = target.read_text().splitlines(keepends=True)
            lines[7] = f"value_7 = {i}  # edited\n"
            target.write_text("".join(lines))
            before = store_bytes(store)
            cpu0, t0 = cpu(), time.perf_counter()
            point = await rp.snapshot(label=f"inc {i}")
            inc.append(time.perf_counter() - t0)
            inc_cpu.append(cpu() - cpu0)
            growth.append(store_bytes(store) - before)
            assert point.changed_count == 1, point.changed
        print(
            f"incremental snapshot (one-line change): median {statistics.median(inc) * 1000:.1f} ms"
            f" (min {min(inc) * 1000:.1f}, max {max(inc) * 1000:.1f});"
            f" CPU median {statistics.median(inc_cpu) * 1000:.1f} ms"
        )
        print(
            f"store growth per one-line change: median {statistics.median(growth)} B"
            f" (min {min(growth)}, max {max(growth)})"
        )

        t_noop = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            await rp.snapshot(label="noop")
            t_noop.append(time.perf_counter() - t0)
        print(f"snapshot with no change: median {statistics.median(t_noop) * 1000:.1f} ms")

        await rp.after_run()
        cpu0, t0 = cpu(), time.perf_counter()
        # The edits above were made between snapshots, outside any run: hand changes, which a
        # restore keeps unless told to overwrite them.
        result = await rp.restore(first.id, overwrite_hand_changes=True)
        t_restore_small, c_small = time.perf_counter() - t0, cpu() - cpu0
        print(
            f"restore ({len(result.restored)} files changed since the point):"
            f" {t_restore_small * 1000:.0f} ms wall ({c_small * 1000:.0f} ms CPU;"
            " includes the undo snapshot and the baseline capture)"
        )

        for p in paths[:1000]:
            p.write_text(p.read_text() + "# appended\n")
        await rp.after_run()
        cpu0, t0 = cpu(), time.perf_counter()
        result = await rp.restore(first.id)
        t_restore_big, c_big = time.perf_counter() - t0, cpu() - cpu0
        print(
            f"restore ({len(result.restored)} files): {t_restore_big * 1000:.0f} ms wall"
            f" ({c_big * 1000:.0f} ms CPU)"
        )
        print(f"load average at the end: {os.getloadavg()[0]:.2f} (on {os.cpu_count()} CPUs)")
        await rp.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.files, args.repeat))
