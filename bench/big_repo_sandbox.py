"""Sandboxed shell commands in a big repository: latency of the first and later commands, and
that no denied file is readable by any of them (not a test).

    .venv/bin/python bench/big_repo_sandbox.py [--files 150000] [--runs 5]

Builds a git repository of ``--files`` small files plus seven denied ones (``.env``,
``id_rsa``, ``server.pem``...): three early in the sandbox walk's order and four past its
100,000-entry ``scan_budget``, deep and in the last folders. The workspace is the server's
own (``lovia_server.host.acl.folder_config``: the default denied paths, the ``trusted``
preset, bubblewrap as ``lovia.sandbox`` chooses it). A session then runs, through the real
sandbox, a first command (the mask walk is cold), ``--runs`` later ones (the walk's cache),
and the reads of issue 36: ``grep -r``, a ``cat`` of each denied path computed at run time,
and a project script that reads every file under the root — first with an empty home (the
repository's own cost), then with the real ``$HOME`` (what a big visible home adds under
``trusted``). The target is 1.5 s for the first command; later ones reuse the walk's cache.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lovia.workspace import LocalWorkspace
from lovia.workspace.errors import PermissionDeniedError
from lovia.workspace.sandbox import BubblewrapExecutor
from lovia_server.host.acl import folder_config
from lovia_server.protocol.settings import PermissionSettings

SECRET = "BENCH-SECRET"
PER_DIR = 40
EARLY = (".env", "pkg000/id_rsa", "pkg000/mod00/server.pem")
LATE = (
    "zz/deep/a/b/c/d/e/f/.env",
    "zz/deep/a/b/c/id_rsa",
    "pkg{last}/mod49/server.pem",
    "zz/deep/a/b/c/d/e/f/g/.env.local",
)
SCRIPT = (
    "import pathlib\n"
    "for p in pathlib.Path('.').rglob('*'):\n"
    "    if '.git' not in p.parts and p.is_file():\n"
    "        try:\n"
    "            text = p.read_text(errors='replace')\n"
    "        except OSError:\n"
    "            continue\n"
    "        if 'SECRET' in text:\n"
    "            print(text, end='')\n"
)


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def make_repo(root: Path, files: int) -> list[str]:
    """``files`` plain files in folders of ``PER_DIR``, then the denied ones; committed."""
    for i in range(files):
        folder = root / f"pkg{i // 2000:03d}" / f"mod{(i // PER_DIR) % 50:02d}"
        if i % PER_DIR == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.py").write_text(f"x = {i}\n")
    last = (files - 1) // 2000
    denied = [*EARLY, *(p.format(last=f"{last:03d}") for p in LATE)]
    for rel in denied:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{SECRET} {rel}\n")
    (root / "read_all.py").write_text(SCRIPT)
    git(root, "init", "-q")
    git(root, "add", "-A")
    # no background gc: its repacking would change .git while commands are measured; the
    # objects stay loose (150k more entries to walk than a packed clone has: the worst case)
    git(root, "config", "gc.auto", "0")
    git(root, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "big")
    time.sleep(2.5)  # the walk's cache trusts a folder once it is older than its 2 s tick
    return denied


def computed_cat(rel: str) -> str:
    """``cat`` of ``rel`` spelled at run time: the guard sees no path."""
    head, tail = rel[:-2], rel[-2:]
    return f"cat \"$(printf '%s%s' '{head}' '{tail}')\""


READS = {
    "grep -r": "grep -r BENCH-SECRET . 2>/dev/null",
    "project script": "python3 read_all.py",
}


async def measure(
    config: LocalWorkspace, denied: list[str], runs: int
) -> tuple[float, list[float], float, list[str], list[str]]:
    """First and later ``true`` (ms), a plain ``cat`` (ms), the reads that leaked a secret
    and those the guard refused."""
    session = await config.open()
    try:
        t = time.perf_counter()
        await session.run("true")
        first = (time.perf_counter() - t) * 1000
        later = []
        for _ in range(runs):
            t = time.perf_counter()
            await session.run("true")
            later.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        await session.run("cat pkg000/mod00/f0.py")  # a plain read: no approval
        plain = (time.perf_counter() - t) * 1000
        reads = {**READS, **{f"cat {rel}": computed_cat(rel) for rel in denied}}
        leaked, refused = [], []
        for what, command in reads.items():
            try:
                r = await session.run(command)
            except PermissionDeniedError:
                refused.append(what)  # the guard saw it: not the sandbox's case
                continue
            if SECRET in r.stdout + r.stderr:
                leaked.append(what)
    finally:
        await session.close()
    return first, later, plain, leaked, refused


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=150_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not BubblewrapExecutor.available():
        sys.exit("bubblewrap cannot run here")
    with tempfile.TemporaryDirectory(prefix="lovia-big-repo-") as tmp:
        root = Path(tmp).resolve() / "repo"
        root.mkdir()
        t = time.perf_counter()
        denied = make_repo(root, args.files)
        entries = sum(len(d) + len(f) for _, d, f in os.walk(root))
        print(f"repository: {entries} entries, built in {time.perf_counter() - t:.1f} s")
        config = folder_config(root, [root], PermissionSettings(), "trusted")
        assert isinstance(config.executor, BubblewrapExecutor)
        empty_home = Path(tmp) / "home"
        empty_home.mkdir()
        # the repository alone (an empty home), then the real home with the repository's walk
        # already cached: what a big home adds under trusted (reads outside open)
        alone = dataclasses.replace(config, env={"HOME": str(empty_home)})
        first, later, plain, leaked, refused = await measure(alone, denied, args.runs)
        print(
            f"repository (empty home): first sandboxed command {first:.0f} ms (target 1500 ms); "
            f"later ones median {statistics.median(later):.0f} ms (max {max(later):.0f}); "
            f"a plain cat {plain:.0f} ms"
        )
        print(
            f"denied files: {len(denied)} ({len(LATE)} past the walk's budget); "
            f"{len(READS) + len(denied)} reads; refused by the guard: "
            f"{', '.join(refused) or 'none'}; leaked: {', '.join(leaked) or 'none'}"
        )
        home = os.environ.get("HOME", "")
        if home and os.path.isdir(home):
            dirs = sum(1 for _ in os.walk(home))
            first, later, _, leaked, _ = await measure(config, denied, args.runs)
            print(
                f"with the real home ({home}, {dirs} folders): first command {first:.0f} ms, "
                f"later ones median {statistics.median(later):.0f} ms; "
                f"leaked: {', '.join(leaked) or 'none'}"
            )
        print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
