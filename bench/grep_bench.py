"""Benchmark: ``grep_files`` (LocalWorkspaceSession.grep) vs ``grep -rn`` on a 20k-file tree.

Not a test. Run:  python bench/grep_bench.py [--files 20000] [--repeat 3]

The tree mimics a source checkout: nested packages, ~40-line text files, a few matches
(about 1% of files), some hidden directories and binary files. Both tools search the
whole tree; the workspace additionally judges every entry against the ACL (with a
couple of denied patterns) and walks with race-free directory fds.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from lovia.workspace import LocalWorkspaceSession, WorkspaceLimits, WorkspacePolicy

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "import",
    "return",
    "value",
    "result",
    "config",
    "handler",
    "request",
    "response",
    "session",
    "token",
    "cache",
    "index",
    "parse",
    "render",
    "update",
]


def build_tree(root: Path, files: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    needles = 0
    dirs = [root]
    for i in range(files // 25):
        parent = rng.choice(dirs)
        d = parent / f"pkg{i}"
        d.mkdir()
        dirs.append(d)
    (root / ".git").mkdir()
    for i in range(files):
        d = rng.choice(dirs)
        lines = []
        for n in range(40):
            words = " ".join(rng.choice(WORDS) for _ in range(8))
            lines.append(f"    {words}  # line {n}")
        if rng.random() < 0.01:
            lines[rng.randrange(40)] = f"    NEEDLE_{i} = compute()  # the needle"
            needles += 1
        if i % 500 == 0:
            (d / f"blob{i}.bin").write_bytes(b"\x00\x01NEEDLE_binary" * 64)
        (d / f"mod{i}.py").write_text("\n".join(lines) + "\n")
    return needles


def time_it(fn, repeat: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    best = float("inf")
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="lovia-grep-bench-")).resolve()
    try:
        t0 = time.perf_counter()
        needles = build_tree(base, args.files)
        print(
            f"tree: {args.files} files under {base} ({needles} needles), built in "
            f"{time.perf_counter() - t0:.1f}s"
        )
        session = LocalWorkspaceSession(
            base,
            policy=WorkspacePolicy.coding(denied_paths=(".env*", "secrets")),
            limits=WorkspaceLimits(max_grep_matches=1000),
        )

        def run_workspace() -> int:
            return len(asyncio.run(session.grep(r"NEEDLE_\d+", max_matches=1000)))

        def run_grep() -> int:
            out = subprocess.run(
                ["grep", "-rn", "-E", r"NEEDLE_[0-9]+", "--exclude-dir=.git", "-I", "."],
                cwd=base,
                capture_output=True,
                text=True,
                check=False,
            ).stdout
            return len(out.splitlines())

        t_ws, n_ws = time_it(run_workspace, args.repeat)
        t_grep, n_grep = time_it(run_grep, args.repeat)
        print(f"grep_files: {t_ws:.3f}s ({n_ws} matches)")
        print(f"grep -rn:   {t_grep:.3f}s ({n_grep} matches)")
        print(f"ratio grep_files / grep -rn: {t_ws / t_grep:.1f}x")
        assert n_ws == n_grep == needles, (n_ws, n_grep, needles)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
