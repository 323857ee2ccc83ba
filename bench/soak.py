"""A long working day through the real server: memory, descriptors, threads, store and speed
early vs late (not a test).

    .venv/bin/python bench/soak.py [--runs 200] [--sessions 3] [--json out.json]

The real ``lovia_server`` process (spawned over stdio, as ``lovia chat`` does) works in a git
repository of 40 Python files with a user agent whose model is a local script (no network, no
key): each run reads files, greps, edits a file and writes a note (approvals asked and answered
through ``lovia/approve``), runs shell commands printing 5-50 KB, a ``git log`` and a ``git commit``
of its work (the history grows all day), and answers in streamed text (eleven model turns a
run). Runs go round ``--sessions`` conversations that
grow all day; every ``--fresh-every``-th run starts a new conversation instead (to tell a
conversation's length from the day's length); every 17th run is cancelled at its first approval
and every 23rd gets a steer. After each run, once the server has been idle ``--pause`` seconds
(0.25: no user types the next prompt sooner), the bench samples the server's RSS
(``/proc/PID/status``), open descriptors, threads and the state directory's size.

Printed as JSON: early (after ``--warmup`` runs) vs late (the last runs) RSS, FDs, threads,
store bytes per model turn, run latency (all runs, runs in a grown conversation, runs in a fresh
one) and the server's own time per model turn (a run's wall time less its tools' execution and
the approval round trips: the scripted model answers at once), with the load average.

Targets: RSS grows <= 10 % from the end of the warm-up to the end of 200 runs, whatever the
conversations' length; open FDs and threads flat (within 3); late runs as fast as early ones
(late/early latency ratio <= 1.2 for grown and fresh conversations alike).

``--profile DIR`` writes a cProfile of the server's main thread (its event loop) during one
early and one late run into DIR (``early.prof``, ``late.prof``), with a census of the live
objects by type, pymalloc's statistics and SQLite's own heap after each
(``early.objects.json``, ``early.malloc.txt``, ``early.sqlite.txt``...), and what was allocated after the early run and is still held at the
late one, by traceback (``late.held.txt``, tracemalloc; it slows the runs in between, and
``--env SOAK_HELD=0`` leaves it out): a
``sitecustomize`` on the server's ``PYTHONPATH`` starts the profiler on SIGUSR1 and dumps it on
SIGUSR2.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lovia_server.chat.client import StdioClient  # noqa: E402

AGENT = textwrap.dedent(
    '''
    """The soak's agent: a scripted model that plays the plan its prompt carries."""
    import json

    from lovia import Agent
    from lovia.messages import Usage
    from lovia.transcript import (
        FinishDelta, InputEntry, TextDelta, ToolCallDelta, ToolResultEntry, UsageDelta,
    )


    def _call(step, run):
        kind, _, arg = step.partition(":")
        if kind == "r":
            return "read_file", {"path": arg}
        if kind == "g":
            return "grep_files", {"pattern": arg, "path": "src"}
        if kind == "e":
            marker = "# end of " + arg
            return "edit_file", {
                "path": arg, "old": marker, "new": f"x_{run} = {run}  # soak\\n{marker}",
            }
        if kind == "w":
            body = "".join(f"- note {run}.{i}: the soak wrote this line\\n" for i in range(40))
            return "write_file", {"path": arg, "content": f"# Notes of run {run}\\n\\n{body}"}
        if kind == "s":
            line = f"INFO step {run} build output line with some text to fill the log"
            return "shell", {"command": f"yes '{line}' | head -c {arg}"}
        if kind == "h":
            return "shell", {"command": "git log --oneline | head -n 20"}
        if kind == "c":
            return "shell", {"command": f"git add -A && git commit -qm 'soak run {run}'"}
        raise ValueError(step)


    class SoakModel:
        name = "soak"
        model = "soak-script"
        supports_json_schema = False

        async def stream(self, entries, **kw):
            plan, done = None, 0
            for entry in entries:
                if isinstance(entry, InputEntry) and entry.role == "user":
                    content = entry.content if isinstance(entry.content, str) else ""
                    if content.startswith("soak "):
                        plan, done = content.split(), 0
                elif isinstance(entry, ToolResultEntry):
                    done += 1
            assert plan is not None, "no soak prompt"
            run, steps = plan[1], plan[2:]
            if done < len(steps):
                name, args = _call(steps[done], run)
                yield ToolCallDelta(
                    index=0, call_id=f"c{run}_{done}", name=name, arguments=json.dumps(args)
                )
                yield UsageDelta(Usage(1000, 40))
                yield FinishDelta("tool_calls")
                return
            answer = f"Run {run}: done. I read, edited and checked the files as asked. " * 8
            for i in range(0, len(answer), 24):
                yield TextDelta(answer[i : i + 24])
            yield UsageDelta(Usage(1000, 120))
            yield FinishDelta("stop")


    soak = Agent(name="soak", instructions="You are the soak agent.", model=SoakModel())
    '''
)

PROFILER = textwrap.dedent(
    r"""
    import cProfile, os, signal

    _profile = None

    def _start(*_):
        global _profile
        _profile = cProfile.Profile()
        _profile.enable()

    def _stop(*_):
        try:
            _dump()
        except Exception as exc:  # a diagnostic must never stop the server
            with open(os.environ["SOAK_PROFILE"] + ".error.txt", "w") as out:
                out.write(repr(exc))
        open(os.environ["SOAK_PROFILE"] + ".done", "w").close()

    def _dump():
        if _profile is not None:
            _profile.disable()
            _profile.dump_stats(os.environ["SOAK_PROFILE"])
        # and a census of the live objects by type (what the server holds after the run)
        import collections, gc, json, sys
        gc.collect()
        count, size = collections.Counter(), collections.Counter()
        for o in gc.get_objects():
            name = type(o).__name__
            count[name] += 1
            try:
                size[name] += sys.getsizeof(o)
            except Exception:  # a class whose __sizeof__ needs an instance
                pass
        census = {n: [count[n], b] for n, b in size.most_common(40)}
        census["total"] = [sum(count.values()), sum(size.values())]
        with open(os.environ["SOAK_PROFILE"] + ".objects.json", "w") as out:
            json.dump(census, out)
        # SQLite's own heap (its page caches above all; malloc'd, so tracemalloc misses it)
        try:
            import ctypes
            lib = ctypes.CDLL("libsqlite3.so.0")
            lib.sqlite3_memory_used.restype = ctypes.c_int64
            lib.sqlite3_memory_highwater.restype = ctypes.c_int64
            with open(os.environ["SOAK_PROFILE"] + ".sqlite.txt", "w") as out:
                out.write(f"sqlite3_memory_used {lib.sqlite3_memory_used()}\n")
                out.write(f"sqlite3_memory_highwater {lib.sqlite3_memory_highwater(0)}\n")
        except OSError:
            pass
        # pymalloc's own view (written to fd 2): arenas held vs bytes in live blocks
        saved = os.dup(2)
        with open(os.environ["SOAK_PROFILE"] + ".malloc.txt", "w") as stats:
            os.dup2(stats.fileno(), 2)
            try:
                sys._debugmallocstats()
            finally:
                os.dup2(saved, 2)
                os.close(saved)
        # what was allocated after the early run and is still held at the late one
        if os.environ.get("SOAK_HELD") == "0":
            return  # tracing every allocation slows the runs between: off for timings
        import tracemalloc
        if not tracemalloc.is_tracing():
            tracemalloc.start(12)
            return
        top = tracemalloc.take_snapshot().statistics("traceback")
        with open(os.environ["SOAK_PROFILE"] + ".held.txt", "w") as out:
            out.write(f"held since the early run: {sum(t.size for t in top)} bytes\n")
            for stat in top[:25]:
                out.write(f"\n{stat.size} bytes in {stat.count} blocks\n")
                out.write("\n".join(stat.traceback.format()) + "\n")

    signal.signal(signal.SIGUSR1, _start)
    signal.signal(signal.SIGUSR2, _stop)
    """
)

SIZES = [5_000, 12_000, 20_000, 35_000, 50_000]


def plan(run: int, files: int) -> str:
    """The prompt: ``soak <run> <step>...`` (ten tool turns, the last a commit, and an
    answer)."""
    a, b = f"src/mod_{run % files}.py", f"src/mod_{(run * 7 + 3) % files}.py"
    steps = [
        f"r:{a}",
        f"g:f_{run % 13}\\(x:",
        f"e:{a}",
        f"s:{SIZES[run % len(SIZES)]}",
        f"r:{b}",
        f"w:notes/run_{run % 25}.md",
        f"s:{SIZES[(run + 2) % len(SIZES)]}",
        "h:",
        f"e:{b}",
        "c:",
    ]
    return " ".join(["soak", str(run), *steps])


def make_repo(root: Path, files: int) -> None:
    (root / "src").mkdir()
    (root / "notes").mkdir()
    for i in range(files):
        body = "".join(
            f"def f_{j}(x: int) -> int:\n    return x * {j} + {i}  # module {i}\n\n"
            for j in range(40)
        )
        (root / f"src/mod_{i}.py").write_text(
            f'"""Module {i}."""\n\n{body}# end of src/mod_{i}.py\n'
        )
    (root / "agent.py").write_text(AGENT)
    git = ["git", "-C", str(root), "-c", "user.name=soak", "-c", "user.email=soak@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "config", "user.name", "soak"], check=True)
    subprocess.run([*git, "config", "user.email", "soak@example.com"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)


def proc_sample(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "Threads"):
            out[key] = int(value.split()[0])
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@dataclass
class RunStats:
    index: int
    session: str
    fresh: bool
    started: float = 0.0
    ended: float = 0.0
    status: str = ""
    error: str = ""
    turns: int = 0
    tool_seconds: float = 0.0  # tools executing (approval answered or not asked -> result)
    approval_seconds: float = 0.0  # approval asked -> answered, at the client
    sample: dict[str, int] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    store_bytes: int = 0

    def add(self, phase: str, seconds: float) -> None:
        self.phases[phase] = self.phases.get(phase, 0.0) + seconds

    @property
    def seconds(self) -> float:
        return self.ended - self.started

    @property
    def own_per_turn_ms(self) -> float:
        rest = self.seconds - self.tool_seconds - self.approval_seconds
        return rest / max(self.turns, 1) * 1000


class Day:
    def __init__(self, args: argparse.Namespace, root: Path, state: Path) -> None:
        self.args = args
        self.root = root
        self.state = state
        self.client: StdioClient | None = None
        self.current: RunStats | None = None
        self.run_id: str | None = None
        self.early: list[tuple[float, dict[str, Any]]] = []
        self.done = asyncio.Event()
        self.mark = 0.0  # when the current stretch of the run began
        self.tool_name = ""
        self.pointed = False  # a restore point was taken since the last call
        self.cancel_this = False
        self.steer_this = False
        self.steered = False
        self.answering: set[asyncio.Task[Any]] = set()

    async def on_event(self, event: dict[str, Any]) -> None:
        # A run's first events may arrive before the answer to ``lovia/run`` names it.
        if self.current is None or self.current.ended:
            return
        if self.run_id is None:
            self.early.append((time.monotonic(), event))
        elif event.get("runId") == self.run_id:
            self._on_event(event, time.monotonic())

    def named(self, run_id: str) -> None:
        self.run_id = run_id
        early, self.early = self.early, []
        for at, event in early:
            if event.get("runId") == run_id:
                self._on_event(event, at)

    def _on_event(self, event: dict[str, Any], now: float) -> None:
        """Each stretch of the run, by what the server was doing (at the client's clock):
        ``turn`` (a tool's result -> the next call: checkpoint, model turn), ``turn+restore_point``
        (the same when the server took the run's restore point before the call),
        ``ask:<tool>`` (call -> approval card), ``approval`` (card -> answered: the client's
        round trip), ``run:<tool>`` (answered or announced -> result), ``answer`` (the last
        result -> run.finished)."""
        assert self.current is not None
        kind = event["kind"]
        stats = self.current
        if kind == "checkpoint.created":
            self.pointed = True
        elif kind == "tool.call":
            stats.turns += 1
            stats.add("turn+restore_point" if self.pointed else "turn", now - self.mark)
            self.pointed = False
            self.tool_name = event["name"]
            self.mark = now
            if self.steer_this and not self.steered:
                self.steered = True
                self._spawn(self._steer())
        elif kind == "approval.requested":
            stats.add(f"ask:{self.tool_name}", now - self.mark)
            self.mark = now
            self._spawn(self._answer(event))
        elif kind == "approval.resolved":
            stats.add("approval", now - self.mark)
            stats.approval_seconds += now - self.mark
            self.mark = now
        elif kind == "tool.result":
            stats.add(f"run:{self.tool_name}", now - self.mark)
            stats.tool_seconds += now - self.mark
            self.mark = now
        elif kind == "run.finished":
            stats.add("answer", now - self.mark)
            stats.ended = now
            stats.status = event["status"]
            stats.error = (event.get("error") or {}).get("message", "")
            if stats.status == "completed":
                stats.turns += 1  # the answer
            self.done.set()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.answering.add(task)
        task.add_done_callback(self.answering.discard)

    async def _answer(self, event: dict[str, Any]) -> None:
        assert self.client is not None
        if self.cancel_this:
            await self.client.request("lovia/cancel", {"runId": event["runId"]})
            return
        await self.client.request(
            "lovia/approve",
            {"runId": event["runId"], "approvalId": event["approvalId"], "decision": "allow_once"},
        )

    async def _steer(self) -> None:
        assert self.client is not None and self.run_id is not None
        await self.client.request(
            "lovia/steer", {"runId": self.run_id, "message": "also keep the notes short"}
        )

    async def one_run(self, index: int, session: str | None) -> RunStats:
        assert self.client is not None
        stats = RunStats(index=index, session=session or "", fresh=session is None)
        self.current, self.done = stats, asyncio.Event()
        self.cancel_this = index % 17 == 16
        self.steer_this, self.steered = index % 23 == 22, False
        params: dict[str, Any] = {"prompt": plan(index, self.args.files), "agent": "agent.py:soak"}
        if session is not None:
            params["sessionId"] = session
        stats.started = self.mark = time.monotonic()
        self.run_id, self.early = None, []
        answer = await self.client.request("lovia/run", params)
        self.named(answer["runId"])
        stats.session = answer["sessionId"]
        await asyncio.wait_for(self.done.wait(), 300)
        return stats


def summarize(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "runs": len(values),
        "mean": round(statistics.fmean(values), 3),
        "median": round(statistics.median(values), 3),
    }


def ratio(late: list[float], early: list[float]) -> float | None:
    if not late or not early:
        return None
    return round(statistics.median(late) / statistics.median(early), 2)


def phases(early: list[RunStats], late: list[RunStats]) -> dict[str, list[float]]:
    """Per stretch of a run (see ``Day._on_event``): [early, late] median ms per run."""
    done_early = [r for r in early if r.status == "completed"]
    done_late = [r for r in late if r.status == "completed"]
    names = sorted({k for r in done_early + done_late for k in r.phases})
    return {
        name: [
            round(statistics.median([r.phases.get(name, 0.0) for r in rs]) * 1000, 1)
            for rs in (done_early, done_late)
        ]
        for name in names
        if done_early and done_late
    }


def report(args: argparse.Namespace, runs: list[RunStats], load: list[str]) -> dict[str, Any]:
    warm = runs[args.warmup - 1]
    last = runs[-1]
    window = max(10, len(runs) // 8)
    early = [r for r in runs[args.warmup : args.warmup + window]]
    late = runs[-window:]
    ok = [r for r in runs if r.status == "completed"]

    def seconds(rs: list[RunStats], fresh: bool | None = None) -> list[float]:
        return [
            r.seconds for r in rs if r.status == "completed" and (fresh is None or r.fresh == fresh)
        ]

    # Fresh conversations are rare: compare the first and the last few of the day.
    fresh = [r for r in runs if r.fresh and r.status == "completed" and r.index >= args.warmup]
    k = max(2, len(fresh) // 3)
    turns_total = sum(r.turns for r in runs)
    turns_after_warm = sum(r.turns for r in runs[args.warmup :])
    rss_warm, rss_last = warm.sample["VmRSS"], last.sample["VmRSS"]
    out: dict[str, Any] = {
        "runs": len(runs),
        "turns": turns_total,
        "completed": len(ok),
        "cancelled": sum(r.status == "cancelled" for r in runs),
        "load_average_start": load[0],
        "load_average_end": load[1],
        "rss_mib": {
            "first_run": round(runs[0].sample["VmRSS"] / 1024, 1),
            "after_warmup": round(rss_warm / 1024, 1),
            "end": round(rss_last / 1024, 1),
            "peak": round(last.sample["VmHWM"] / 1024, 1),
            "growth_after_warmup_pct": round((rss_last - rss_warm) / rss_warm * 100, 1),
            "quarters": [
                round(runs[min(len(runs) - 1, q * len(runs) // 4)].sample["VmRSS"] / 1024, 1)
                for q in range(1, 5)
            ],
        },
        "fds": {"after_warmup": warm.sample["fds"], "end": last.sample["fds"]},
        "threads": {"after_warmup": warm.sample["Threads"], "end": last.sample["Threads"]},
        "store": {
            "bytes_end": last.store_bytes,
            "bytes_per_turn": round(
                (last.store_bytes - warm.store_bytes) / max(turns_after_warm, 1)
            ),
        },
        "latency_s": {
            "early": summarize(seconds(early)),
            "late": summarize(seconds(late)),
            "late_over_early": ratio(seconds(late), seconds(early)),
            "grown_late_over_early": ratio(seconds(late, False), seconds(early, False)),
            "fresh_early": summarize([r.seconds for r in fresh[:k]]),
            "fresh_late": summarize([r.seconds for r in fresh[-k:]]),
            "fresh_late_over_early": ratio(
                [r.seconds for r in fresh[-k:]], [r.seconds for r in fresh[:k]]
            ),
        },
        "server_ms_per_turn": {
            "early": summarize([r.own_per_turn_ms for r in early if r.status == "completed"]),
            "late": summarize([r.own_per_turn_ms for r in late if r.status == "completed"]),
            "late_over_early": ratio(
                [r.own_per_turn_ms for r in late if r.status == "completed"],
                [r.own_per_turn_ms for r in early if r.status == "completed"],
            ),
        },
        "phases_ms_per_run": phases(early, late),
        "tool_s_per_run": {
            "early": summarize([r.tool_seconds for r in early if r.status == "completed"]),
            "late": summarize([r.tool_seconds for r in late if r.status == "completed"]),
        },
    }
    growth = out["rss_mib"]["growth_after_warmup_pct"]
    lat = out["latency_s"]
    out["targets"] = {
        "rss_growth_le_10pct": growth <= 10,
        "fds_flat": abs(last.sample["fds"] - warm.sample["fds"]) <= 3,
        "threads_flat": abs(last.sample["Threads"] - warm.sample["Threads"]) <= 3,
        "late_as_fast_as_early": all(
            x is None or x <= 1.2
            for x in (lat["grown_late_over_early"], lat["fresh_late_over_early"])
        ),
    }
    return out


async def day(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    work, state = root / "ws", root / "state"
    work.mkdir()
    make_repo(work, args.files)
    env = {"LOVIA_CONFIG_TIMEOUT": "10", "LOVIA_LOG_LEVEL": "WARNING"}
    for key in [k for k in os.environ if k.endswith("_API_KEY")]:
        env[key] = ""
    env.update(kv.split("=", 1) for kv in args.env)
    if args.profile:
        site = root / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(PROFILER)
        env["PYTHONPATH"] = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
        env["SOAK_PROFILE"] = str(Path(args.profile).resolve() / "last.prof")
    soak = Day(args, work, state)
    log = open(root / "server.log", "w")  # noqa: SIM115 - open for the server's lifetime
    client = StdioClient(
        on_event=soak.on_event,
        settings={"agent": "agent.py:soak"},
        env=env,
        stderr=log,
    )
    soak.client = client
    await client.start(work, {"client": "soak", "approvals": "events", "stateDir": str(state)})
    assert client.proc is not None
    pid = client.proc.pid
    load = [Path("/proc/loadavg").read_text().strip()]
    sessions: list[str | None] = [None] * args.sessions
    runs: list[RunStats] = []
    profiled = {args.warmup + 1: "early", args.runs - 2: "late"} if args.profile else {}
    try:
        for i in range(args.runs):
            fresh = i % args.fresh_every == args.fresh_every - 1
            slot = i % args.sessions
            if i in profiled:
                os.kill(pid, signal.SIGUSR1)
            stats = await soak.one_run(i, None if fresh else sessions[slot])
            if i in profiled:
                os.kill(pid, signal.SIGUSR2)
                done = Path(args.profile) / "last.prof.done"
                for _ in range(1200):
                    if done.exists():
                        break
                    await asyncio.sleep(0.1)
                done.unlink()
                name = Path(args.profile) / f"{profiled[i]}.prof"
                shutil.move(str(Path(args.profile) / "last.prof"), name)
                census = Path(args.profile) / "last.prof.objects.json"
                shutil.move(str(census), name.with_suffix(".objects.json"))
                malloc = Path(args.profile) / "last.prof.malloc.txt"
                shutil.move(str(malloc), name.with_suffix(".malloc.txt"))
                for extra in ("held", "sqlite"):
                    path = Path(args.profile) / f"last.prof.{extra}.txt"
                    if path.exists():
                        shutil.move(str(path), name.with_suffix(f".{extra}.txt"))
            if not fresh:
                sessions[slot] = stats.session
            await asyncio.sleep(args.pause)  # the user reads the answer: the server is idle
            stats.sample = proc_sample(pid)
            stats.store_bytes = dir_bytes(state)
            runs.append(stats)
            if args.verbose:
                print(
                    f"run {i:3d} {stats.status:9s} {stats.seconds:6.2f}s turns {stats.turns:2d} "
                    f"own {stats.own_per_turn_ms:6.1f}ms/turn rss "
                    f"{stats.sample['VmRSS'] / 1024:6.1f} MiB fds {stats.sample['fds']} "
                    f"thr {stats.sample['Threads']} store {stats.store_bytes / 1e6:.1f} MB"
                    f" {stats.error[:200]}",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        load.append(Path("/proc/loadavg").read_text().strip())
        await client.close()
        log.close()
    out = report(args, runs, load)
    count = ["git", "-C", str(work), "rev-list", "--count", "HEAD"]
    out["commits"] = int(subprocess.run(count, capture_output=True, text=True).stdout or 0)
    return out


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=3, help="conversations that grow")
    parser.add_argument("--fresh-every", type=int, default=10, help="a new conversation every N")
    parser.add_argument("--warmup", type=int, default=20, help="runs before the baseline")
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--profile", help="directory for cProfiles of an early and a late run")
    parser.add_argument(
        "--pause", type=float, default=0.25, help="seconds between a run's end and the next"
    )
    parser.add_argument("--json", help="also write the result there")
    parser.add_argument(
        "--env", action="append", default=[], help="KEY=VALUE for the server (MALLOC_ARENA_MAX=2)"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="a line per run on stderr")
    args = parser.parse_args()
    args.warmup = min(args.warmup, max(1, args.runs // 4))
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        result = await day(args, Path(tmp).resolve())
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text)


if __name__ == "__main__":
    asyncio.run(main())
