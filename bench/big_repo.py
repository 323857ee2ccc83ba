"""A big repository through the real server: what grows with the tree, measured against its
targets, and no denied file readable by any shell command (not a test).

    .venv/bin/python bench/big_repo.py [--files 150000] [--runs 3] [--dir DIR]

Builds (once; cached under ``--dir``, default ``$TMPDIR/lovia-big-repo-<files>``) a git
repository of ``--files`` small files in folders of 40, committed, plus seven denied ones
(``.env``, ``id_rsa``, ``server.pem``...): three early in the sandbox walk's order and four
deep and in the last folders. Then it starts ``python -m lovia_server`` (the ``trusted``
preset, the default denied paths, bubblewrap as ``lovia.sandbox`` chooses it, an empty
``$HOME``, restore points off: ``bench/restore_points_bench.py`` measures those) and drives
it over stdio with scripted agents (``lovia.testing.ScriptedProvider``: no model time):

- ``initialize``: spawn -> its answer, and -> the first ``lovia/status`` (runtime ready);
- ``lovia/run``: its answer and its first event, with no context, an ``@``-mention of the
  root folder and one of a folder of 2,000 files (``pkg000``);
- the agent's ``list_files`` (a ``**`` glob that matches only denied names: a whole-tree
  walk) and ``grep_files`` (a pattern only the denied files hold), from ``tool.call`` to
  ``tool.result``, then both with hidden entries (``.git``'s 150,000 loose objects, the
  ``.env`` files); all must find nothing;
- the history scan: ``git log -p -1`` makes the command guard list every path the
  repository's objects hold (``git rev-list --objects``) and judge each; from ``tool.call``
  to its approval card (it holds committed denied files: the bench declines);
- the first sandboxed command (the mask walk is cold) and later ones (its cache);
- the reads of issue 36, each approved when asked: ``grep -r``, a ``cat`` of each denied
  path spelled at run time, a project script that reads every file; none may print a
  denied file's text.

Targets at 150,000 files: ``lovia/run`` answers in <= 100 ms whatever is mentioned; the
first sandboxed command <= 1.5 s; ``list_files`` and ``grep_files`` <= 1 s; no leak.
``grep_files`` lets ripgrep walk the tree when ``rg`` is on the server's ``PATH`` (the Python
walk otherwise: run it with a ``PATH`` that has no ``rg`` to measure that). On a loaded
machine the times are the load's; CPU times measured in the process are in docs/workspace.md
("Performance"). Quiet machine (load 0.2-0.6), before ripgrep and the mask walk's name
prefilter: grep 2,434 ms, first sandboxed command 1,936 ms. December 2026, the code before and
after them one after the other at load 6.6-7.9: grep 4,307 -> 2,326 ms, first sandboxed
command 3,782 -> 3,156 ms, list_files 2,069 -> 1,133 ms, history scan 5,765 -> 2,339 ms;
at load 0.9-1.1: grep 2,138 -> 584 ms, first sandboxed command 1,435 -> 1,025 ms (all met).
It exits 1 when a denied file leaked or a tool listed one (not on a missed time: the
machine's load decides those; the table says which were missed).
``tests/bench/test_big_repo.py`` runs it at 2,000 files.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lovia_server.chat.client import StdioClient

SECRET = "Zq9-denied-Zq9"
SECRET_RE = "Zq9-denied-Z[q]9"  # the commands themselves never hold the secret
PER_DIR = 40
PER_PKG = 2000
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
    f"        if {SECRET[:4]!r} in text:\n"
    "            print(text, end='')\n"
)


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def denied_paths(files: int) -> list[str]:
    last = (files - 1) // PER_PKG
    return [*EARLY, *(p.format(last=f"{last:03d}") for p in LATE)]


def make_repo(root: Path, files: int) -> None:
    """``files`` plain files in folders of ``PER_DIR``, then the denied ones; committed."""
    for i in range(files):
        folder = root / f"pkg{i // PER_PKG:03d}" / f"mod{(i // PER_DIR) % 50:02d}"
        if i % PER_DIR == 0:
            folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.py").write_text(f"x = {i}\n")
    for rel in denied_paths(files):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{SECRET} {rel}\n")
    (root / "read_all.py").write_text(SCRIPT)
    (root / ".gitignore").write_text("agent.py\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    # no background gc: its repacking would change .git while commands are measured; the
    # objects stay loose (150k more entries to walk than a packed clone has: the worst case)
    git(root, "config", "gc.auto", "0")
    git(root, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "big")


def computed_cat(rel: str) -> str:
    """``cat`` of ``rel`` spelled at run time: the guard sees no path."""
    head, tail = rel[:-2], rel[-2:]
    return f"cat \"$(printf '%s%s' '{head}' '{tail}')\""


def agent_source(denied: list[str], runs: int) -> str:
    calls: list[tuple[str, str, dict[str, Any]]] = [("first", "shell", {"command": "true"})]
    calls += [(f"later{i}", "shell", {"command": "true"}) for i in range(runs)]
    calls += [
        ("read:grep -r", "shell", {"command": f"grep -r '{SECRET_RE}' . 2>/dev/null"}),
        ("read:project script", "shell", {"command": "python3 read_all.py"}),
        *((f"read:cat {rel}", "shell", {"command": computed_cat(rel)}) for rel in denied),
        ("history", "shell", {"command": "git log -p -1"}),
    ]
    glob = {"path": ".", "pattern": "**/server.pem"}
    grep = {"pattern": SECRET_RE, "path": "."}
    for i in range(runs):
        calls += [(f"list{i}", "list_files", glob), (f"grep{i}", "grep_files", grep)]
    # hidden entries too: .git's objects (150,000 more files) and the .env files
    calls += [
        ("listh", "list_files", {**glob, "pattern": "**/.env*", "include_hidden": True}),
        ("greph", "grep_files", {**grep, "include_hidden": True}),
    ]
    script = ",\n        ".join(
        f"call({tool!r}, {args!r}, call_id={cid!r})" for cid, tool, args in calls
    )
    return textwrap.dedent(
        """
        from lovia import Agent
        from lovia.testing import ScriptedProvider, call, text


        def quick():
            return Agent(name="quick", model=ScriptedProvider([text("ok")]))


        def tools():
            return Agent(name="tools", model=ScriptedProvider([
                {script},
                text("done"),
            ]))
        """
    ).replace("{script}", script)


@dataclass
class Events:
    """Every event with the moment it arrived; approvals answered as they come."""

    client: StdioClient | None = None
    seen: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def __call__(self, event: dict[str, Any]) -> None:
        self.seen.append((time.perf_counter(), event))
        self.changed.set()
        if event["kind"] == "approval.requested" and self.client is not None:
            call_id = event.get("toolCallId", "")
            self.asked.append(call_id)
            decision = "reject_once" if call_id == "history" else "allow_once"
            params = {"runId": event["runId"], "approvalId": event["approvalId"]}
            asyncio.get_running_loop().create_task(
                self.client.request("lovia/approve", {**params, "decision": decision})
            )

    async def wait(self, run_id: str, kind: str, within: float = 600) -> float:
        deadline = time.perf_counter() + within
        while True:
            for at, event in self.seen:
                if event["runId"] == run_id and event["kind"] == kind:
                    return at
            if time.perf_counter() > deadline:
                raise TimeoutError(f"{kind} of {run_id} not seen")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), 1)
            except TimeoutError:
                pass

    def of_call(self, call_id: str) -> list[tuple[float, dict[str, Any]]]:
        return [(at, e) for at, e in self.seen if e.get("toolCallId") == call_id]


def call_ms(events: Events, call_id: str, *, until: tuple[str, ...] = ("tool.result",)) -> float:
    """From the call's start (``tool.call``, or the user's answer when it asked) to the first
    event of ``until``."""
    start = end = None
    for at, event in events.of_call(call_id):
        if event["kind"] in ("tool.call", "approval.resolved") and end is None:
            start = at
        if event["kind"] in until and start is not None and end is None:
            end = at
    if start is None or end is None:
        return float("nan")
    return (end - start) * 1000


def judged_ms(events: Events, call_id: str) -> float:
    """From the run's event before the call's first one (the previous tool's end) to the
    call's approval card or result: the guard's judgement of a command (it comes before
    ``tool.call``)."""
    mine = events.of_call(call_id)
    if not mine:
        return float("nan")
    first_at, first = mine[0]
    before = [at for at, e in events.seen if e["runId"] == first["runId"] and at < first_at]
    end = next((at for at, e in mine if e["kind"] in ("approval.requested", "tool.result")), None)
    if not before or end is None:
        return float("nan")
    return (end - before[-1]) * 1000


def result_text(events: Events, call_id: str) -> str:
    for _, event in events.of_call(call_id):
        if event["kind"] == "tool.result":
            return json.dumps(event.get("content"))
    return ""


async def timed_run(events: Events, client: StdioClient, **params: Any) -> tuple[float, float]:
    """(answer ms, first event ms) of one ``lovia/run``; waits for its end."""
    t = time.perf_counter()
    answer = await client.request(
        "lovia/run", {"prompt": "hi", "agent": "agent.py:quick", **params}
    )
    answered = time.perf_counter()
    await events.wait(answer["runId"], "run.finished")
    first = min(at for at, e in events.seen if e["runId"] == answer["runId"])
    return (answered - t) * 1000, (first - t) * 1000


@dataclass
class Row:
    what: str
    ms: float
    target: float | None = None

    def line(self) -> str:
        target = f"{self.target:>8.0f}" if self.target is not None else f"{'':>8}"
        verdict = ""
        if self.target is not None:
            verdict = "ok" if self.ms <= self.target else "MISSED"
        return f"{self.what:<52} {self.ms:>9.0f} {target}  {verdict}"


async def measure(
    root: Path, denied: list[str], home: Path, state: Path, runs: int
) -> tuple[list[Row], list[str]]:
    """The table's rows and the problems found (leaks, denied files listed)."""
    rows: list[Row] = []
    problems: list[str] = []
    events = Events()
    settings = {
        "agent": "agent.py:quick",
        "permissions": {"preset": "trusted"},
        "restorePoints": {"enabled": False},
    }
    env = {"HOME": str(home), "LOVIA_CONFIG_TIMEOUT": "2"}
    log = (state.parent / "server.log").open("w")
    client = StdioClient(on_event=events, settings=settings, env=env, stderr=log)
    events.client = client
    t = time.perf_counter()
    await client.start(root, {"client": "bench", "approvals": "events", "stateDir": str(state)})
    rows.append(Row("initialize (spawn -> answer)", (time.perf_counter() - t) * 1000))
    await client.request("lovia/status", {})
    rows.append(Row("runtime ready (-> first lovia/status)", (time.perf_counter() - t) * 1000))
    try:
        big = root / "pkg000"
        mentions: list[tuple[str, list[dict[str, Any]]]] = [
            ("no mention", []),
            ("@root folder", [{"uri": root.as_uri(), "kind": "folder"}]),
            (f"@{big.name}/ ({PER_PKG} files)", [{"uri": big.as_uri(), "kind": "folder"}]),
        ]
        await timed_run(events, client)  # warm-up: the first run imports the runtime's rest
        for label, context in mentions:
            answers, firsts = [], []
            for _ in range(runs):
                answer, first = await timed_run(events, client, context=context)
                answers.append(answer)
                firsts.append(first)
            rows.append(Row(f"lovia/run answer, {label}", statistics.median(answers), 100))
            rows.append(Row(f"lovia/run -> first event, {label}", statistics.median(firsts)))
        run = await client.request("lovia/run", {"prompt": "go", "agent": "agent.py:tools"})
        await events.wait(run["runId"], "run.finished", within=1800)
        rows.append(Row("first sandboxed command (true)", call_ms(events, "first"), 1500))
        later = [call_ms(events, f"later{i}") for i in range(runs)]
        rows.append(Row("later sandboxed command (true), median", statistics.median(later)))
        history = judged_ms(events, "history")
        rows.append(Row("history scan (git log -p -1 judged)", history))
        lists = [call_ms(events, f"list{i}") for i in range(runs)]
        greps = [call_ms(events, f"grep{i}") for i in range(runs)]
        rows.append(
            Row("list_files **/server.pem, whole tree, median", statistics.median(lists), 1000)
        )
        rows.append(Row("grep_files, whole tree, median", statistics.median(greps), 1000))
        rows.append(
            Row("list_files **/.env*, hidden too (.git's objects)", call_ms(events, "listh"))
        )
        rows.append(Row("grep_files, hidden too (.git's objects)", call_ms(events, "greph")))
        for i in range(runs):
            for cid in (f"list{i}", f"grep{i}", "listh", "greph"):
                text = result_text(events, cid)
                if SECRET in text or "server.pem" in text or ".env" in text:
                    problems.append(f"{cid} listed a denied file: {text[:200]}")
        reads = [
            cid for _, e in events.seen if (cid := e.get("toolCallId", "")).startswith("read:")
        ]
        for cid in dict.fromkeys(reads):
            if SECRET in result_text(events, cid):
                problems.append(f"{cid[5:]} printed a denied file")
        asked = [c for c in dict.fromkeys(events.asked)]
        print(f"approvals asked (approved, history declined): {', '.join(asked) or 'none'}")
        print(f"denied files: {len(denied)}; shell reads tried: {len(dict.fromkeys(reads))}")
    except Exception:
        print((state.parent / "server.log").read_text()[-3000:], file=sys.stderr)
        raise
    finally:
        await client.close()
        log.close()
    return rows, problems


def ensure_repo(base: Path, files: int) -> Path:
    root = base / f"repo-{files}"
    ready = base / f"repo-{files}.ready"
    if not ready.exists():
        if root.exists():
            subprocess.run(["rm", "-rf", str(root)], check=True)
        root.mkdir(parents=True)
        t = time.perf_counter()
        make_repo(root, files)
        ready.write_text("ok\n")
        print(f"repository built in {time.perf_counter() - t:.1f} s")
        time.sleep(2.5)  # the sandbox walk's cache trusts a folder once older than its 2 s tick
    return root


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=150_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="cache for the repository")
    args = parser.parse_args()
    base = args.dir or Path(tempfile.gettempdir()) / f"lovia-big-repo-{args.files}"
    base = base.resolve()
    root = ensure_repo(base, args.files)
    entries = sum(len(d) + len(f) for _, d, f in os.walk(root))
    print(f"repository: {root} ({entries} entries with .git)")
    denied = denied_paths(args.files)
    (root / "agent.py").write_text(agent_source(denied, args.runs))
    with tempfile.TemporaryDirectory(prefix="lovia-big-repo-run-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        rows, problems = await measure(root, denied, home, Path(tmp) / "state", args.runs)
    print(f"\n{'what':<52} {'ms':>9} {'target':>8}")
    for row in rows:
        print(row.line())
    load = os.getloadavg()
    print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for problem in problems:
        print(f"PROBLEM: {problem}")
    if not problems:
        print("no denied file was listed, searched or printed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
