"""Worktree runs on a big repository: time to the first model request, disk per worktree
(not a test).

    .venv/bin/python bench/worktree_bench.py [--files 20000] [--runs 3]

Builds a git repository of ``--files`` small files (plus a few uncommitted changes, which a
worktree run carries by default), starts the real server, and for each sample sends
``lovia/run`` with ``isolation: "worktree"``. The agent's provider answers with the
``CLOCK_MONOTONIC`` time of the request it received, so the figure is from sending
``lovia/run`` to the model being asked, the worktree creation included. Then it reports the
disk each worktree takes (its checkout plus its entry under ``.git/worktrees``) and the size of
the restore-point store the run's first turn warmed. The target is one second.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lovia_server.chat.client import StdioClient

AGENT = textwrap.dedent(
    """
    import time
    from lovia import Agent
    from lovia.transcript import FinishDelta, TextDelta

    class Stamp:
        name = "stamp"
        model = "stamp"
        supports_json_schema = False

        async def stream(self, entries, **kw):
            yield TextDelta(str(time.monotonic_ns()))
            yield FinishDelta("stop")

    agent = Agent(name="stamp", model=Stamp())
    """
)


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def make_repo(root: Path, files: int) -> None:
    per_dir = 100
    for i in range(files):
        folder = root / f"pkg{i // per_dir:03d}"
        if i % per_dir == 0:
            folder.mkdir(parents=True)
        (folder / f"mod{i % per_dir:03d}.py").write_text(
            f"VALUE = {i}\n\n\ndef f():\n    return {i}\n"
        )
    (root / "agent.py").write_text(AGENT)
    (root / ".gitignore").write_text("__pycache__/\n.state*/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "init")
    for i in range(5):  # uncommitted work the runs carry
        (root / f"pkg000/mod{i:03d}.py").write_text(f"VALUE = {i}  # edited\n")
    (root / "scratch.txt").write_text("untracked\n")


def du_kib(path: Path) -> int:
    if not path.exists():
        return 0
    out = subprocess.run(["du", "-sk", str(path)], check=True, capture_output=True, text=True)
    return int(out.stdout.split()[0])


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve() / "repo"
        root.mkdir()
        t = time.perf_counter()
        make_repo(root, args.files)
        print(f"repository: {args.files} files, built in {time.perf_counter() - t:.1f} s")
        state = Path(tmp) / "state"
        stamps: dict[str, int] = {}
        finished: dict[str, asyncio.Event] = {}

        def sink(event: dict[str, Any]) -> None:
            if event["kind"] == "message.delta":
                stamps.setdefault(event["runId"], int(event["text"]))
            elif event["kind"] == "run.finished":
                finished.setdefault(event["runId"], asyncio.Event()).set()

        client = StdioClient(
            on_event=sink,
            settings={"agent": "agent.py:agent", "permissions": {"preset": "trusted"}},
            env={},
        )
        await client.start(root, {"client": "bench", "approvals": "events", "stateDir": str(state)})
        await client.request("lovia/status", {})
        firsts, answers = [], []
        for i in range(args.runs):
            t0 = time.monotonic_ns()
            launch = await client.request(
                "lovia/run", {"prompt": f"bench run {i}", "isolation": "worktree"}
            )
            answers.append((time.monotonic_ns() - t0) / 1e6)
            run_id = launch["runId"]
            await asyncio.wait_for(finished.setdefault(run_id, asyncio.Event()).wait(), 120)
            firsts.append((stamps[run_id] - t0) / 1e6)
        listing = (await client.request("lovia/worktree/list", {}))["worktrees"]
        readies = []
        for worktree in listing:  # a diff waits for the checkout the run's tools wait for
            t0 = time.monotonic_ns()
            await client.request("lovia/worktree/diff", {"runId": worktree["runId"]})
            readies.append((time.monotonic_ns() - t0) / 1e6)
        sizes = [du_kib(Path(w["path"])) for w in listing]
        admin = du_kib(root / ".git" / "worktrees") / max(len(listing), 1)
        points = du_kib(state / "restore-points")
        await client.close()
        repo_kib = du_kib(root) - du_kib(root / ".git")
        print(
            f"lovia/run -> first model request: median {statistics.median(firsts):.0f} ms "
            f"(min {min(firsts):.0f}, max {max(firsts):.0f}; target 1000 ms); "
            f"lovia/run answered in median {statistics.median(answers):.0f} ms; the checkout "
            f"(which tools wait for) still took up to {max(readies):.0f} ms after the runs"
        )
        print(
            f"disk per worktree: checkout {statistics.median(sizes) / 1024:.1f} MiB "
            f"(the working copy is {repo_kib / 1024:.1f} MiB) + .git/worktrees entry "
            f"{admin / 1024:.1f} MiB; restore-point stores of {len(listing)} runs: "
            f"{points / 1024:.1f} MiB"
        )
        print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
